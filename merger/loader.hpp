// The loader wheelmerge puts into each package holding variant files: templates/loader.py,
// embedded at build time, with the merger's manifest written into it, and one import line in
// the package's __init__.py.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace wm {

inline constexpr std::string_view kLoaderModule = "_wheelmerge.py";
inline constexpr std::string_view kLoaderImport =
    "from . import _wheelmerge as _wheelmerge  # wheelmerge: selects this package's build\n";

// The template with its manifest line replaced by `manifest_json` (ASCII JSON).
std::string render_loader(std::string_view manifest_json);

// The manifest a rendered loader holds; nullopt when `source` is no wheelmerge loader.
std::optional<std::string> manifest_of_loader(std::string_view source);

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

}  // namespace wm
