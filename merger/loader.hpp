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
    "from . import _wheelmerge as _wheelmerge  # wheelmerge: selects this package's CUDA build\n";

// The template with its manifest line replaced by `manifest_json` (ASCII JSON).
std::string render_loader(std::string_view manifest_json);

// The manifest a rendered loader holds; nullopt when `source` is no wheelmerge loader.
std::optional<std::string> manifest_of_loader(std::string_view source);

// `source` with kLoaderImport placed after the module docstring and any
// `from __future__` imports. nullopt with `why` when the file cannot be read as Python text.
std::optional<std::string> inject_loader_import(std::string_view source, std::string& why);

}  // namespace wm
