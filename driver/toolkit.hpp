// Finding a CUDA toolkit for a major version, and reading a toolkit's version.
#pragma once

#include "driver/config.hpp"
#include "merger/base/problem.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wm {

struct Toolkit {
  int major = 0;
  std::string root;
  std::string version;         // "12.9.1"
  std::string version_source;  // "version.json", "include/cuda.h" or "bin/nvcc --version"
  std::string found_by;        // which rule found it, e.g. "--cuda 12=PATH"
};

// Where to look, in order; the first three are explicit (a wrong major there is an error).
struct ToolkitHints {
  std::map<int, std::string> command_line;  // --cuda N=PATH
  std::map<int, std::string> config;        // [tool.wheelmerge.<label>] toolkit
  std::map<int, std::string> config_table;  // the label of the table each config hint is from
  std::map<std::string, std::string> env;   // the environment (WHEELMERGE_CUDA_N, CUDA_HOME, CUDA_PATH, PATH)
  std::string search_root = "/usr/local";   // where cuda-N.* directories are looked for
  std::string label;  // the label whose build wants the toolkit (toolkit_hints' `only`), for the table a hint names
};

// The hints of a project's builds: `command_line` (--cuda N=PATH) as given, each
// [tool.wheelmerge.<label>] toolkit resolved against `project_dir` (like backend-path), and `env`.
// With `only`, the table of that label alone (two torch labels may share a CUDA major).
// `wheelmerge build` and `wheelmerge toolkit` both look where this says.
ToolkitHints toolkit_hints(const std::map<int, std::string>& command_line, const BuildConfig& config,
                           const std::string& project_dir, std::map<std::string, std::string> env,
                           const VariantLabel* only = nullptr);

// The toolkit at `root`, with its version; nullopt with `why` when none is readable there.
std::optional<Toolkit> read_toolkit(const std::string& root, std::string& why);

// The toolkit for `major`; on failure a problem listing every place looked at.
std::optional<Toolkit> find_toolkit(int major, const ToolkitHints& hints, Problems& problems);

}  // namespace wm
