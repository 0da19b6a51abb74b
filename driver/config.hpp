// The project's wheelmerge configuration: one schema, read from [tool.wheelmerge] in
// pyproject.toml or from wheelmerge.yaml, with the command line overriding both.
//
//   [tool.wheelmerge]
//   cuda = [12, 13]                      # the CUDA majors to build
//   backend = "setuptools.build_meta"    # inner backend when build-backend is wheelmerge.backend
//   backend-path = ["_build"]            # where an in-tree inner backend is imported from
//   variant-files = ["pkg/_build.py"]    # other paths that may differ per build
//   driver-fallback = false              # loader may ask the driver when cuda-bindings is absent
//   env = { KEY = "value" }              # environment for every variant's build
//   [tool.wheelmerge.cu12]
//   toolkit = "/usr/local/cuda-12.9"     # toolkit root hint
//   env = { CMAKE_ARGS = "-DCMAKE_CUDA_ARCHITECTURES=70;80" }
#pragma once

#include "merger/problem.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wm {

struct VariantConfig {
  std::string toolkit;
  std::map<std::string, std::string> env;
};

struct BuildConfig {
  std::string source;  // where it was read from, for messages; empty when there is none
  std::vector<int> cuda;
  std::string backend;
  std::vector<std::string> backend_path;
  std::vector<std::string> variant_files;
  bool driver_fallback = false;
  std::map<std::string, std::string> env;
  std::map<int, VariantConfig> variants;  // by CUDA major
};

// The project's [build-system] table.
struct BuildSystem {
  std::vector<std::string> requirements;
  std::string backend;                    // build-backend; the PEP 517 default when absent
  std::vector<std::string> backend_path;  // backend-path
};

struct ProjectConfig {
  std::string name;  // [project] name, empty when not static
  BuildSystem build_system;
  BuildConfig wheelmerge;
};

// Reads PROJECT/pyproject.toml and, when present, PROJECT/wheelmerge.yaml (which then holds the
// wheelmerge configuration; both holding one is an error).
std::optional<ProjectConfig> load_project_config(const std::string& project_dir, Problems& problems);

// The same schema from text, for tests and for the two file formats.
std::optional<BuildConfig> parse_toml_config(const std::string& text, const std::string& source, Problems& problems,
                                             BuildSystem* build_system = nullptr, std::string* project_name = nullptr);
std::optional<BuildConfig> parse_yaml_config(const std::string& text, const std::string& source, Problems& problems);

}  // namespace wm
