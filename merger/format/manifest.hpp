// The loader manifest: what one package's loader knows about the builds it chooses among. The
// planner writes it into the package's `_wheelmerge.py` (docs/interfaces.md, "Loader
// manifest"); `verify` and `inspect` read it back with `parse`, which accepts only what the
// planner writes, so nothing downstream reads unchecked JSON.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wm {

// What one build contributes to a package; every path is relative to the package directory
// ("_core.cu12.cpython-312-x86_64-linux-gnu.so", "../pkg.libs/libx.cu12.so").
struct BuildFiles {
  std::map<std::string, std::string> modules;     // dotted module name -> its file
  std::map<std::string, std::string> files;       // original path -> stored path
  std::vector<std::string> preload;               // private libraries, in load order
  std::map<std::string, std::string> build_info;  // what `build_info()` returns
  // The GPU code of its files that have any, by stored path ("sm_90a", "compute_80", in
  // GpuCode's order): what the report compares the visible GPUs with.
  std::map<std::string, std::vector<std::string>> gpu_code;
};

struct LoaderManifest {
  static constexpr int kFormat = 3;
  std::string wheelmerge;              // the version of wheelmerge that wrote it
  std::string package;                 // dotted import name: "pkg.sub"
  std::string distribution;            // METADATA's Name
  Selector selector = Selector::cuda;  // what the loader chooses by: cuda, torch or cpu
  std::vector<VariantLabel> variants;  // the labels, in selection order
  // Selector cuda: whether the builds use cuda-bindings (some build requires it), which then
  // decides; and whether the CUDA runtime wheels and the driver may decide when it is not
  // installed. Builds that do not use cuda-bindings (CuPy) always select by those two.
  bool cuda_bindings = true;
  bool driver_fallback = false;
  // Per build, the extras of the distribution that install what it needs, for the loader's
  // fixes (`pip install "dist[cu13]"`, `"cupy[ctk-cu12]"`); builds without any are absent.
  // Both maps are by label in the order of the labels' text, as the JSON keeps them.
  std::map<VariantLabel, std::vector<std::string>, LabelTextOrder> extras;
  std::map<VariantLabel, BuildFiles, LabelTextOrder> builds;  // one per variant

  // What the loader selects by, in order: "cuda-bindings", "runtime", "driver" (cuda only).
  std::vector<std::string> sources() const;
  // The manifest as JSON (keys sorted), as `inspect --json` shows it.
  std::string to_json() const;
  // The manifest `json` holds, or nullopt with `why` (what is wrong, as a phrase).
  static std::optional<LoaderManifest> parse(std::string_view json, std::string& why);
  // The same from a JSON value already read (the loader's literals, manifest_of_loader).
  static std::optional<LoaderManifest> from_json(const nlohmann::json& j, std::string& why);
};

// A manifest path resolved against the package directory: "pkg" + "../pkg.libs/libx.so" ->
// "pkg.libs/libx.so"; empty when it leaves the top or is no safe member name.
std::string manifest_archive_path(const std::string& package_dir, std::string relative);

// Where a member of a wheel installs, relative to site-packages: the root and the purelib and
// platlib directories of "{name}-{version}.data" all install there
// ("demo-1.0.data/platlib/pkg/x.so" -> "pkg/x.so"); nullopt for the other .data keys
// (scripts, headers, data), which install elsewhere.
std::optional<std::string> site_packages_path(std::string_view member);
// The same, as a view of `member` (always a suffix of it).
std::optional<std::string_view> site_packages_view(std::string_view member);

// Resolves a loader's manifest paths to members as the installed loader does: relative to its
// package's directory in site-packages, where the root and .data's purelib and platlib meet.
class ManifestResolver {
 public:
  // The member names (strings or views) must outlive the resolver: it keeps views of them.
  template <typename Members>
  explicit ManifestResolver(const Members& members) {
    for (std::string_view m : members)
      if (auto installed = site_packages_view(m)) by_installed_.emplace(*installed, m);
  }
  // The path `relative` names from the package of the loader at member `loader_path`, relative
  // to site-packages; empty when it leaves site-packages or is no safe name.
  static std::string installed(const std::string& loader_path, const std::string& relative);
  // The member installed at `installed`, or nullopt when the wheel has none.
  std::optional<std::string_view> member(std::string_view installed) const;

 private:
  std::unordered_map<std::string_view, std::string_view> by_installed_;
};

}  // namespace wm
