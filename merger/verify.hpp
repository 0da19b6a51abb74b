// Checking a wheel after the fact: the strict reader, and for a merged wheel its loaders'
// manifests against the files it holds.
#pragma once

#include "merger/problem.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wm {

// One package's loader in a merged wheel.
struct LoaderFiles {
  std::string loader_path;    // "pkg/_wheelmerge.py"
  std::string loader_source;  // its text
  std::string init_source;    // the text of the package's __init__.py, empty when absent
};

// Every manifest path exists, every labelled variant file is listed by some manifest, the
// variants agree, and each package's __init__.py imports its loader.
void check_loaders(const std::string& display, const std::vector<LoaderFiles>& loaders,
                   const std::set<std::string>& paths, Problems& problems);

// "pkg" + "../pkg.libs/libx.cu12.so.1" -> "pkg.libs/libx.cu12.so.1": a manifest path in the archive.
std::string manifest_archive_path(const std::string& package_dir, std::string relative);

struct Wheel;
// The loaders of a read wheel, each checked as above (problems appended when they fail).
std::vector<LoaderFiles> checked_loaders(const Wheel& wheel, Problems& problems);

// The whole check of one wheel; a summary (variants, files) when it passes.
std::optional<nlohmann::json> verify_wheel(const std::string& path, Problems& problems);

}  // namespace wm
