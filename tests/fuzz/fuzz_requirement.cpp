// PEP 508 requirements (Requires-Dist values) over arbitrary text: parse_requirement,
// Requirement::to_string and require_for_extra. Properties:
// - a refusal has an error text;
// - nothing over the documented limits is accepted: the text is at most kMaxRequirementBytes
//   bytes of valid UTF-8, and the marker tree (whose And/Or levels alternate, one per
//   parenthesis that matters) is at most kMaxMarkerNesting + 1 levels deep;
// - an accepted requirement printed and parsed again prints the same text (a fixed point) and
//   gives the same fields and marker tree; where the printed text is longer than the limit
//   (the canonical spelling can be longer than the text read), it is refused instead;
// - require_for_extra(r, "cu12") prints a text that parses; its marker is `extra == "cu12"`
//   when r had none, else an And whose last child is `extra == "cu12"` and whose other children
//   are r's marker (its children when it is an And itself); name, extras, specifier and URL are
//   kept; and that text is a fixed point too, or refused where it is over the limit (the merge
//   makes such a requirement a conflict).
#include "fuzz_common.hpp"
#include "merger/base/problem.hpp"
#include "merger/format/requirement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace {

bool same_tree(const wm::MarkerExpr* a, const wm::MarkerExpr* b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  if (a->kind == wm::MarkerExpr::Kind::Compare)
    return a->op == b->op && a->lhs.is_variable == b->lhs.is_variable && a->lhs.text == b->lhs.text &&
           a->rhs.is_variable == b->rhs.is_variable && a->rhs.text == b->rhs.text;
  if (a->children.size() != b->children.size()) return false;
  for (size_t i = 0; i < a->children.size(); ++i)
    if (!same_tree(a->children[i].get(), b->children[i].get())) return false;
  return true;
}

// The number of And/Or levels on the longest path from the root; checks the tree's shape on
// the way (And/Or nodes have two or more children, none of their own kind).
int and_or_depth(const wm::MarkerExpr& m) {
  if (m.kind == wm::MarkerExpr::Kind::Compare) {
    FUZZ_CHECK(m.children.empty(), "a comparison with children");
    FUZZ_CHECK(!m.op.empty(), "a comparison without an operator");
    return 0;
  }
  FUZZ_CHECK(m.children.size() >= 2, fmt::format("an And/Or node with {} children", m.children.size()));
  int deepest = 0;
  for (const auto& child : m.children) {
    FUZZ_CHECK(child && child->kind != m.kind, "an And/Or node holding a node of its own kind");
    deepest = std::max(deepest, and_or_depth(*child));
  }
  return deepest + 1;
}

bool same_fields(const wm::Requirement& a, const wm::Requirement& b) {
  return a.name == b.name && a.extras == b.extras && a.specifier == b.specifier && a.url == b.url;
}

bool is_extra_cu12(const wm::MarkerExpr& m) {
  return m.kind == wm::MarkerExpr::Kind::Compare && m.lhs.is_variable && m.lhs.text == "extra" && m.op == "==" &&
         !m.rhs.is_variable && m.rhs.text == "cu12";
}

// `printed` parses, and prints as itself; returns what it parsed to. Nullopt when `printed` is
// longer than the limit (the canonical spelling can be longer than the text read, and an added
// condition longer still): then it must be refused, as anything over the limit is.
std::optional<wm::Requirement> reparse(const std::string& printed, const char* what) {
  std::string error;
  auto again = wm::parse_requirement(printed, error);
  if (printed.size() > wm::kMaxRequirementBytes) {
    FUZZ_CHECK(!again.has_value() && !error.empty(),
               fmt::format("{} is {} bytes long, over the limit, and accepted", what, printed.size()));
    return std::nullopt;
  }
  FUZZ_CHECK(again.has_value(), fmt::format("{} does not parse: {} ({})", what, wm::printable(printed), error));
  std::string printed_again = again->to_string();
  FUZZ_CHECK(printed_again == printed, fmt::format("{} is not a fixed point: {} printed again as {}", what,
                                                   wm::printable(printed), wm::printable(printed_again)));
  return again;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = wm_fuzz::as_text(data, size);
  std::string error;
  auto r = wm::parse_requirement(text, error);
  if (!r) {
    FUZZ_CHECK(!error.empty(), "parse_requirement refused without saying why");
    return 0;
  }
  FUZZ_CHECK(error.empty(), "accepted with an error: " + error);

  // The limits.
  FUZZ_CHECK(text.size() <= wm::kMaxRequirementBytes, fmt::format("accepted {} bytes", text.size()));
  FUZZ_CHECK(!r->name.empty(), "accepted without a name");
  if (r->marker) {
    int depth = and_or_depth(*r->marker);
    FUZZ_CHECK(depth <= wm::kMaxMarkerNesting + 1, fmt::format("accepted a marker {} And/Or levels deep", depth));
  }

  // Printed and parsed again: the same requirement, and the same text.
  const std::string printed = r->to_string();
  if (auto again = reparse(printed, "to_string()")) {
    FUZZ_CHECK(same_fields(*r, *again), "the fields changed through to_string(): " + wm::printable(printed));
    FUZZ_CHECK(same_tree(r->marker.get(), again->marker.get()),
               "the marker tree changed through to_string(): " + wm::printable(printed));
  }

  // Made conditional on an extra.
  wm::Requirement extra = wm::require_for_extra(*r, "cu12");
  FUZZ_CHECK(same_fields(*r, extra), "require_for_extra changed more than the marker");
  FUZZ_CHECK(extra.marker != nullptr, "require_for_extra left no marker");
  if (!r->marker) {
    FUZZ_CHECK(is_extra_cu12(*extra.marker), "without a marker before, the marker is not extra == \"cu12\"");
  } else {
    FUZZ_CHECK(extra.marker->kind == wm::MarkerExpr::Kind::And, "require_for_extra's marker is not an And");
    const auto& children = extra.marker->children;
    FUZZ_CHECK(!children.empty() && is_extra_cu12(*children.back()),
               "the last child of require_for_extra's And is not extra == \"cu12\"");
    if (r->marker->kind == wm::MarkerExpr::Kind::And) {
      FUZZ_CHECK(children.size() == r->marker->children.size() + 1, "require_for_extra did not extend the And");
      for (size_t i = 0; i + 1 < children.size(); ++i)
        FUZZ_CHECK(same_tree(children[i].get(), r->marker->children[i].get()), "require_for_extra changed the And");
    } else {
      FUZZ_CHECK(children.size() == 2 && same_tree(children[0].get(), r->marker.get()),
                 "require_for_extra did not keep the old marker as the And's first child");
    }
  }
  const std::string extra_printed = extra.to_string();
  auto extra_again = reparse(extra_printed, "require_for_extra(r, \"cu12\").to_string()");
  if (!extra_again) return 0;
  FUZZ_CHECK(same_fields(extra, *extra_again) && same_tree(extra.marker.get(), extra_again->marker.get()),
             "require_for_extra's requirement changed through to_string(): " + wm::printable(extra_printed));
  const wm::MarkerExpr& m = *extra_again->marker;
  FUZZ_CHECK(m.kind == wm::MarkerExpr::Kind::And ? is_extra_cu12(*m.children.back()) : is_extra_cu12(m),
             "extra == \"cu12\" is not the last condition once parsed again: " + wm::printable(extra_printed));
  return 0;
}
