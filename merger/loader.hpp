// The loader wheelmerge puts into each package holding variant files: _wheelmerge.py and
// _wheelmerge_rules.py, assembled from templates/loader/*.py (embedded at build time) with the
// merger's manifest written into the first, and one import line in the package's __init__.py.
#pragma once

#include "merger/format/manifest.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

inline constexpr std::string_view kLoaderModule = "_wheelmerge.py";
inline constexpr std::string_view kLoaderImport =
    "from . import _wheelmerge as _wheelmerge  # wheelmerge: selects this package's build\n";

inline constexpr std::string_view kRulesModule = "_wheelmerge_rules.py";

// What Python's path finder could import in place of the loader or its rules module, for a
// package whose directory is `dir` ("pkg/", in site-packages or in the archive): per module
// stem, the package dir/S/, any other file dir/S.* (an extension module of any platform's
// suffix, which the finder tries before source; sourceless bytecode), and cached bytecode
// dir/__pycache__/S.*, which an installer that compiles nothing (pip --no-compile, uv) leaves
// to be run. A path under `prefix` other than dir + module itself is a shadow. `merge` refuses
// inputs holding one, `verify` merged wheels.
struct LoaderShadow {
  std::string_view module;  // kLoaderModule or kRulesModule
  std::string_view stem;    // "_wheelmerge", "_wheelmerge_rules"
  std::string prefix;
  const char* kind;  // "a package of that name", ...
};
std::vector<LoaderShadow> loader_shadows(std::string_view dir);

// The loader of a package: templates/loader/core.py with the manifest written in as Python
// constants and the usual-case code of its selector (usual_cuda.py; usual_other.py), lint-clean
// as generated (ruff check and format, mypy --strict).
std::string render_loader(const LoaderManifest& manifest);
// The module the loader reads for everything but the usual case: templates/loader/rules.py
// with its selector's rules and the report. Only its first line names the package (dotted), so
// that no two packages of a wheel hold the same file (check-wheel-contents' W002).
std::string render_rules(Selector selector, std::string_view package);

// The manifest a rendered loader holds, checked as LoaderManifest::parse checks one; nullopt
// when `source` holds no manifest block. Only what render_loader writes is read: each constant
// in its order, as canonical literals; `why` says what is not.
std::optional<LoaderManifest> manifest_of_loader(std::string_view source, std::string& why);
inline std::optional<LoaderManifest> manifest_of_loader(std::string_view source) {
  std::string why;
  return manifest_of_loader(source, why);
}
// Whether `source` holds a manifest block's first line, however the rest reads.
bool claims_to_be_loader(std::string_view source);

// `source` (a package's __init__.py) with kLoaderImport added as one whole line directly after
// the module docstring and its `from __future__` imports (or before the first statement when
// there are none, after leading comments such as an encoding cookie), ending in the line ending
// the file uses there ("\n" when it has none); a UTF-8 BOM stays first. Nothing else changes.
// nullopt with `why` (what was found, and on which line) when that cannot be done without
// risk of changing what the module means: the source's encoding is not UTF-8, ASCII or Latin-1
// or its bytes are not valid in it, the prologue cannot be tokenized (an unclosed string or
// parenthesis, a stray backslash, a NUL byte), the docstring or a future import shares its line
// with another statement after ';', the first statement starts with a string literal but is a
// longer expression, or an import names __future__ relatively or by a non-ASCII name.
std::optional<std::string> inject_loader_import(std::string_view source, std::string& why);
// Where inject_loader_import puts the import line in `source`: the offset of the first
// statement after the module docstring and its future imports (or the end). nullopt with `why`
// as for inject_loader_import.
std::optional<size_t> loader_import_at(std::string_view source, std::string& why);
// Whether `source` (a package's __init__.py) imports its loader as wheelmerge writes it: the
// import line, whole, is the statement where inject_loader_import puts it, so that it is code
// that runs when the package is imported, never text in a docstring, a string, a comment or an
// indented block.
bool executes_loader_import(std::string_view source);

}  // namespace wm
