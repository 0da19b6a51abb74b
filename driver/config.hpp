// The project's wheelmerge configuration: one schema, read from [tool.wheelmerge] in
// pyproject.toml or from wheelmerge.yaml, with the command line overriding both.
//
//   [tool.wheelmerge]
//   variants = ["torch210_cu12", "torch211_cu13"]  # the builds, by label (one selector)
//   cuda = [12, 13]                      # or: the CUDA majors to build (["cu12", "cu13"]); not both
//   backend = "setuptools.build_meta"    # inner backend when build-backend is wheelmerge.backend
//   backend-path = ["_build"]            # where an in-tree inner backend is imported from
//   variant-files = ["pkg/_build.py"]    # other paths that may differ per build
//   driver-fallback = false              # loader may ask the driver when cuda-bindings is absent
//   runtime-requirements = false         # require the runtime wheels of the CUDA libraries linked
//   env = { KEY = "value" }              # environment for every variant's build
//   [tool.wheelmerge.torch210_cu12]      # one variant's build (cuNN: also "cu05" for cu5)
//   toolkit = "/usr/local/cuda-12.9"     # toolkit root hint (cuda and torch labels)
//   env = { CMAKE_ARGS = "-DCMAKE_CUDA_ARCHITECTURES=70;80" }
//   build-requires = ["torch==2.10.*"]   # PEP 508, resolved together with [build-system] requires
//
// Labels are declared, never guessed: a torch label's build checks that the torch its
// environment ended up with (after build-requires) is the one the label names, and stops
// otherwise. Every label, in `variants` and as a table, is of one selector. The command line's
// --variant/--cuda replace the configured builds; with neither anywhere, cu12 and cu13 are built.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct VariantConfig {
  std::string toolkit;
  std::map<std::string, std::string> env;
  std::vector<std::string> build_requires;  // PEP 508, validated
};

struct BuildConfig {
  std::string source;                // where it was read from, for messages; empty when there is none
  std::vector<int> cuda;             // `cuda` as written
  std::vector<VariantLabel> labels;  // the builds: `variants`, or `cuda` as cuNN; empty when neither
  std::string backend;
  std::vector<std::string> backend_path;
  std::vector<std::string> variant_files;
  bool driver_fallback = false;
  bool runtime_requirements = false;
  std::map<std::string, std::string> env;
  std::map<VariantLabel, VariantConfig> variants;  // the [tool.wheelmerge.<label>] tables

  // The selector of the configured labels and tables; cuda when there are none.
  Selector selector() const;
  // The table of `label`, or an empty one.
  const VariantConfig& variant(const VariantLabel& label) const;
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

// The configuration as `wheelmerge config` prints it, the schema the PEP 517 shim reads:
// source, selector, labels (the configured builds, [] when none), cuda, backend, backend-path,
// variant-files, driver-fallback, env, variants (the tables by label: toolkit, env,
// build-requires) and build-system (requires, build-backend, backend-path).
nlohmann::json config_json(const ProjectConfig& project);

// The CUDA majors to build: `given` (the command line's), else the configuration's, else
// default_cuda_majors(). As given: not sorted, not deduplicated.
std::vector<int> chosen_cuda_majors(const std::vector<int>& given, const BuildConfig& config);

// The labels to build: `given` (the command line's), else the configuration's, else the
// default CUDA majors' cuNN. As given: not sorted, not deduplicated.
std::vector<VariantLabel> chosen_labels(const std::vector<VariantLabel>& given, const BuildConfig& config);

// A CUDA major as the command line and the cuNN tables spell it: one or two digits, leading
// zeros allowed ("05" is 5). Narrower and wider than VariantLabel::parse, which takes one to
// three digits without a leading zero: kept as the inputs have always accepted.
std::optional<int> parse_cuda_major(std::string_view digits);

// --cuda of `build` and `toolkit`: "N", "cuN" or either with "=TOOLKIT_ROOT".
struct CudaOption {
  int major = 0;
  std::optional<std::string> toolkit;  // after '=', possibly empty
};
std::optional<CudaOption> parse_cuda_option(std::string_view value);

// What the --cuda values of `build` and `toolkit` mean: "12" or "cu12" chooses CUDA 12 as a
// build (into `majors`), "12=PATH" names the toolkit of CUDA 12 (into `toolkit_paths`) and
// chooses nothing alone; once majors are chosen, a major named with its toolkit is one of them
// (`--cuda 12=PATH --cuda 13` builds 12 and 13). Returns the first value that is neither.
std::optional<std::string> take_cuda_options(const std::vector<std::string>& values, std::vector<int>& majors,
                                             std::map<int, std::string>& toolkit_paths);

}  // namespace wm
