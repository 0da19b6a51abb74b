// PEP 508 dependency specifiers ("name[extra]>=1.0; python_version >= '3.9'"): parsed into a
// tree and printed back from it, so that markers are combined as trees and never as strings.
//
// The accepted grammar is the one packaging 26 (`packaging.requirements.Requirement`) accepts,
// which pip and every installer use to read Requires-Dist: whatever it refuses is refused here
// and whatever it accepts is accepted, with these exceptions, each refused with its own error:
// - `\N{NAME}` escapes in marker strings (no Unicode name table here);
// - marker strings holding lone surrogates (`"\ud800"`), which UTF-8 cannot carry;
// - marker parentheses nested deeper than kMaxMarkerNesting, and texts longer than
//   kMaxRequirementBytes, so that what the input controls stays bounded;
// - comparisons packaging parses but cannot evaluate, on which pip stops with a traceback when
//   it installs the wheel: the lock-file variables `extras` and `dependency_groups`, two quoted
//   strings compared, and `~=` without a valid version on its right.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

inline constexpr size_t kMaxRequirementBytes = 64 * 1024;
inline constexpr int kMaxMarkerNesting = 64;

// One side of a marker comparison: an environment variable or a literal string.
struct MarkerOperand {
  bool is_variable = false;
  // A variable in packaging's spelling ("os.name" is "os_name", "python_implementation" is
  // "platform_python_implementation"); a value decoded from its quoted form (escapes applied).
  std::string text;
};

struct MarkerExpr {
  enum class Kind { And, Or, Compare };
  Kind kind = Kind::Compare;
  // And/Or: two or more children, none of the same kind as the node ("a and (b and c)" is one
  // And of three), so that the tree's depth follows the parentheses that matter.
  std::vector<std::shared_ptr<const MarkerExpr>> children;
  // Compare: `lhs op rhs`, op one of < <= != == >= > ~= === in "not in".
  MarkerOperand lhs, rhs;
  std::string op;
};
using MarkerPtr = std::shared_ptr<const MarkerExpr>;

struct Requirement {
  std::string name;                 // as written
  std::vector<std::string> extras;  // as written, order kept
  std::string specifier;            // the version specifiers without whitespace: ">=1.0,<2"
  std::string url;                  // after "@", empty when none
  MarkerPtr marker;                 // null when none

  // Canonical PEP 508 text, the marker printed from its tree.
  std::string to_string() const;
};

// nullopt with `error` saying what was expected at which column (1-based, in characters) and
// what was found there.
std::optional<Requirement> parse_requirement(std::string_view text, std::string& error);
// A marker on its own (the part after ";"); null with `error` on failure.
MarkerPtr parse_marker(std::string_view text, std::string& error);

// Marker text with parentheses only where precedence needs them ("and" binds tighter than
// "or"); values in double quotes, in single quotes when they hold a double quote, escaped
// when they hold both, a backslash or a control character.
std::string marker_to_string(const MarkerExpr& marker);

// The comparison `lhs op rhs` of a variable with a value.
MarkerPtr marker_compare(std::string_view variable, std::string_view op, std::string_view value);
// `a and b` / `a or b`, flattened into existing nodes of the same kind; a null side is left out.
MarkerPtr marker_and(MarkerPtr a, MarkerPtr b);
MarkerPtr marker_or(MarkerPtr a, MarkerPtr b);

// The requirement made conditional on `extra == "<extra>"`: its marker becomes
// `(old) and extra == "<extra>"`, combined as trees.
Requirement require_for_extra(Requirement r, std::string_view extra);

}  // namespace wm
