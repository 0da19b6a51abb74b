// Checking a wheel after the fact: the strict reader, and for a merged wheel its loaders'
// manifests against the files it holds.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/manifest.hpp"

#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace wm {

// One package's loader in a merged wheel.
struct LoaderFiles {
  std::string loader_path;                  // "pkg/_wheelmerge.py"
  std::string loader_source;                // its text
  std::string init_source;                  // the text of the package's __init__.py, empty when absent
  std::optional<std::string> rules_source;  // the text of the _wheelmerge_rules.py beside it
};

// A loader and its manifest, parsed.
struct FoundLoader {
  std::string loader_path;  // "pkg/_wheelmerge.py"
  LoaderManifest manifest;
};

// `paths`: every member of the wheel, sorted, each once.
// Every manifest parses, every path it names exists, every labelled variant file is listed by
// some manifest, the variants agree, and each package's __init__.py imports its loader.
// Returns the loaders whose manifests parsed.
std::vector<FoundLoader> check_loaders(const std::string& display, const std::vector<LoaderFiles>& loaders,
                                       const std::vector<std::string_view>& paths, Problems& problems);
// The same over a set of paths.
std::vector<FoundLoader> check_loaders(const std::string& display, const std::vector<LoaderFiles>& loaders,
                                       const std::set<std::string>& paths, Problems& problems);

// The variant label `path`'s file name carries, or empty: a label among the name's
// dot-separated pieces after its stem ("pkg/_ext.cu12.so" carries cu12).
std::string label_in_name(std::string_view path, const std::unordered_set<std::string>& labels);

struct Wheel;
// Every wheelmerge loader of `wheel`, in path order, each manifest parsed and checked against
// the wheel's files (problems appended when they fail; the loaders that parsed are returned).
std::vector<FoundLoader> find_loaders(const Wheel& wheel, Problems& problems);

}  // namespace wm
