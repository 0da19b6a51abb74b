// What `inspect` and `verify` find in one wheel, as values; cli/ renders them as text or JSON.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/manifest.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wm {

// `verify`: the strict reader's checks and, for a merged wheel, its loaders against its files;
// for a `{name}-{version}-variants.json` index, the variant metadata reader's.
struct VerifyReport {
  std::string file;
  size_t files = 0;
  std::vector<std::string> loaders;  // "pkg/_wheelmerge.py", one per package with a loader
  std::vector<std::string> warnings;
  bool variants_index = false;
  bool merged() const { return !loaders.empty(); }
};
std::optional<VerifyReport> verify_wheel(const std::string& path, Problems& problems);

// `inspect`: validation, tags, and for a merged wheel its variants, its shared and per-variant
// files and its loaders' settings.
struct InspectReport {
  struct Loader {
    std::string path;  // "pkg/_wheelmerge.py"
    LoaderManifest manifest;
  };
  struct File {
    std::string path;
    uint64_t size = 0;
    uint64_t compressed_size = 0;
    std::optional<std::string> variant;  // the label of the build it belongs to; none when shared
    // With `gpu_code`: the GPU code of its fat binaries ("sm_90", "compute_80"), or why they
    // could not be read.
    std::vector<std::string> gpu_code;
    std::string gpu_code_unreadable;
    // A PE image's: the DLLs it imports, in its order, or why they could not be read.
    std::optional<std::vector<std::string>> imports;
    std::string imports_unreadable;
  };
  std::string file;
  std::string name;
  std::string version;
  std::vector<std::string> tags;
  std::string root_is_purelib;
  std::string generator;
  std::vector<std::string> warnings;
  std::vector<std::string> variants;
  // A variant wheel's (PEP 825) label and properties ("nvidia :: cuda_version_lower_bound :: 12").
  std::string variant_label;
  std::vector<std::string> variant_properties;
  std::vector<Loader> loaders;
  std::vector<File> files;  // in archive order
  uint64_t shared_bytes = 0;
  std::map<std::string, uint64_t> variant_bytes;  // by label
  // With `gpu_code`: the nvidia :: sm_arch values of each build (a merged wheel's builds with
  // the shared files; "" for a wheel of one build), as `variants` would give them, and what
  // they cannot say.
  std::map<std::string, std::vector<std::string>> sm_arch;
  std::vector<std::string> sm_arch_notes;
  // Each build's CUDA libraries that NVIDIA's runtime wheels ship and the wheel does not bundle
  // (merger/runtime_wheels.hpp), by label: a wheel of one build by the label its name carries.
  struct Runtime {
    std::string library, member, distribution, toolkit_extra, provided_by;
  };
  std::map<std::string, std::vector<Runtime>> runtime;
  bool merged() const { return !loaders.empty(); }
};
std::optional<InspectReport> inspect_wheel(const std::string& path, Problems& problems, bool gpu_code = false);

}  // namespace wm
