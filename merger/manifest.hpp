// The loader manifest: what one package's loader knows about the builds it chooses among. The
// planner writes it into the package's `_wheelmerge.py` (docs/interfaces.md, "Loader
// manifest"); `verify` and `inspect` read it back with `parse`, which accepts only what the
// planner writes, so nothing downstream reads unchecked JSON.
#pragma once

#include "merger/problem.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

// What one build contributes to a package; every path is relative to the package directory
// ("_core.cu12.cpython-312-x86_64-linux-gnu.so", "../pkg.libs/libx.cu12.so").
struct BuildFiles {
  std::map<std::string, std::string> modules;     // dotted module name -> its file
  std::map<std::string, std::string> files;       // original path -> stored path
  std::vector<std::string> preload;               // private libraries, in load order
  std::map<std::string, std::string> build_info;  // what `build_info()` returns
};

struct LoaderManifest {
  static constexpr int kFormat = 1;
  std::string package;                 // dotted import name: "pkg.sub"
  std::string distribution;            // METADATA's Name
  std::vector<std::string> variants;   // the labels, in selection order
  bool driver_fallback = false;
  std::vector<std::string> extras;     // labels that are extras of the distribution
  std::map<std::string, BuildFiles> builds;  // by label; one per variant

  // The compact ASCII JSON line written into the loader (keys sorted).
  std::string to_json() const;
  // The manifest `json` holds, or nullopt with `why` (what is wrong, as a phrase).
  static std::optional<LoaderManifest> parse(std::string_view json, std::string& why);
};

// A manifest path resolved against the package directory: "pkg" + "../pkg.libs/libx.so" ->
// "pkg.libs/libx.so"; empty when it leaves the wheel or is no safe member name.
std::string manifest_archive_path(const std::string& package_dir, std::string relative);

}  // namespace wm
