// `wheelmerge build`: the project's own PEP 517 build, once per variant label (against the
// toolkit of its CUDA major for cuda and torch labels, with -march flags for cpu labels), each
// from its own clean copy of the source tree, then the merge.
#pragma once

#include "driver/config.hpp"
#include "driver/process.hpp"
#include "driver/toolkit.hpp"
#include "merger/format/label.hpp"
#include "merger/merge.hpp"
#include "merger/variants.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wm {

struct BuildOptions {
  std::string project_dir = ".";
  std::string out_dir = "dist";
  // The builds: --variant labels and --cuda N majors (as cuNN); neither: the configuration's, else
  // default_cuda_majors(). --cuda N=PATH only names the toolkit of CUDA N, as do all --cuda
  // values when the builds are torch labels.
  std::vector<VariantLabel> labels;          // --variant
  std::vector<int> majors;                   // --cuda N
  std::map<int, std::string> toolkit_paths;  // --cuda N=PATH
  bool isolation = true;
  // What makes each isolated build's environment and installs into it: pip (python -m venv, then
  // pip install) or uv (uv venv, then uv pip install: files hardlinked from uv's cache, seconds
  // for a torch that pip copies in minutes). `uv` is the program run; build_project resolves it
  // (beside --python, else on PATH) and refuses the build when there is none.
  enum class Installer { pip, uv } installer = Installer::pip;
  std::string uv = "uv";
  std::map<std::string, std::vector<std::string>>
      config_settings;  // -C KEY=VALUE (repeatable), for the project's backend
  int jobs = 1;
  std::string python = "python3";  // the interpreter that runs the backend (or makes the build venv)
  std::vector<std::string> find_links;
  std::string log_dir;    // empty: a new directory under the system's temporary directory
  MergeOptions merge;     // command-line additions to the configuration's
  bool variants = false;  // --variants: also the variant wheels and their index (merger/variants.hpp)
  // --no-merge: each build checked as a merge checks its inputs, then written as it was built,
  // named NAME.LABEL.whl (what `merge` reads the label from), instead of merged: one job of a
  // CI matrix builds one label, and the merge job merges them.
  bool merge_builds = true;
  bool sm_arch = true;  // with variants: nvidia :: sm_arch from the builds' GPU code (--no-sm-arch: none)
};

struct VariantBuild {
  VariantBuild(VariantLabel label, std::optional<Toolkit> toolkit)
      : label(std::move(label)), toolkit(std::move(toolkit)) {}
  VariantLabel label;
  std::optional<Toolkit> toolkit;  // of the label's CUDA major; none for cpu labels
  Environment env;                 // what the variant's build saw changed from the inherited environment ("": removed)
  std::map<std::string, std::string> build_info;  // what the build was compiled against, for the loader
  std::string wheel;                              // the built wheel
  std::string log;
  double seconds = 0;
};

struct BuildResult {
  std::string log_dir;
  std::vector<VariantBuild> variants;
  MergeResult merge;                // empty with --no-merge
  std::vector<std::string> builds;  // with --no-merge: the labelled build wheels written, in label order
  // With --no-merge, what the later merge of these builds needs of the configuration and the
  // command line (variant-files, driver-fallback, runtime-requirements), as `build` would have merged them.
  std::vector<std::string> variant_globs;
  bool driver_fallback = false;
  bool runtime_requirements = false;
  std::optional<VariantsResult> variant_wheels;  // with BuildOptions::variants
};

using ProgressSink = std::function<void(const std::string&)>;

// Where the long phases of a build begin (with a title) and end: each variant's build (all of
// them as one phase when --jobs runs several at once) and the merge. `wheelmerge build` makes
// each a group of the GitHub Actions log. Either may be empty.
struct PhaseHooks {
  std::function<void(const std::string&)> begin;
  std::function<void()> end;
};

// The whole environment of a variant's build, from `base`. With a toolkit: every toolkit variable
// names it and no other toolkit's nvcc stays reachable on PATH. For a cpu label: CFLAGS and
// CXXFLAGS end with the level's -march flag, unless the variant's own env sets that variable.
// The configuration's env applies (the variant's table after the shared one), and
// WHEELMERGE_BUILD_VARIANT names the label. `python_cflags` is what an unset CFLAGS or CXXFLAGS
// of a cpu label starts from: the build interpreter's sysconfig CFLAGS ("-DNDEBUG -g -fwrapv -O3
// -Wall"), which setuptools (75.7 and later) uses only while CFLAGS is unset; without them the
// -march flag would cost the optimization.
Environment variant_environment(const VariantLabel& label, const Toolkit* toolkit, const BuildConfig& config,
                                const Environment& base, const std::string& python_cflags = {});

// The sysconfig CFLAGS of `python`, run with `env` in `work_dir` (which gets its output and
// log); nullopt with `error` when it cannot be read.
std::optional<std::string> python_cflags(const std::string& python, const Environment& env, const std::string& work_dir,
                                         std::string& error);

// The environment of a cuNN build with `toolkit`.
Environment variant_environment(const Toolkit& toolkit, const BuildConfig& config, const Environment& base);

// The -march value of a psABI level: "x86-64" for 1, "x86-64-vN" above.
std::string march_value(int level);

// What the build environment holds, from `probe` (the JSON the build's probe wrote: torch,
// torch_cuda, cuda_bindings, each absent when not installed), as build_info keys: cuda_version
// (the toolkit's major.minor), cuda_bindings, torch (without local part), torch_cuda, march.
std::map<std::string, std::string> variant_build_info(const VariantLabel& label, const Toolkit* toolkit,
                                                      const nlohmann::json& probe);

// For a torch label: nullopt when the probed torch is the one `label` names, else what is wrong
// ("the environment has torch 2.11.0 built with CUDA 13.0, whose label is torch211_cu13").
std::optional<std::string> torch_mismatch(const VariantLabel& label, const nlohmann::json& probe);

// The file name of a build wheel kept with --no-merge: its own name with the label before .whl.
std::string labelled_wheel_name(const std::string& wheel_file_name, const VariantLabel& label);

// For a torch label, the torch release it is built against, as a requirement ("torch==2.10.*";
// a floor label builds against its floor); nullopt for other labels. Added to an isolated build's
// requirements when neither the project's build requirements nor the label's build-requires name
// torch, so a project need not pin torch per label (a pin of its own, 2.11.0 for a
// torch210plus label, is its choice).
std::optional<std::string> label_torch_requirement(const VariantLabel& label);

// What `env` changes in `base`: variables set to another value, and those removed (as "").
Environment environment_changes(const Environment& base, const Environment& env);

// Copies a project's source tree, leaving out version control and the usual build outputs
// (build/, dist/, *.egg-info/, __pycache__/...), so no artefact of an earlier build is reused.
bool copy_source_tree(const std::string& from, const std::string& to, std::string& error);

// The labels the command line asks for: --variant's, and --cuda's majors as cuNN unless the
// builds are torch labels (then --cuda N=PATH only names CUDA N's toolkit). Empty: none asked.
std::vector<VariantLabel> requested_labels(const BuildOptions& options, const BuildConfig& config);

// The builds of the chosen labels (one or more), then their merge (a one-build wheel for one).
// The logs are written under BuildOptions::log_dir when given, else in a temporary directory
// that is removed after a successful build (BuildResult::log_dir and each log are then empty)
// and kept after a failed one, whose problems name the logs.
std::optional<BuildResult> build_project(const BuildOptions& options, const ProgressSink& progress, Problems& problems,
                                         const PhaseHooks& phases = {});

}  // namespace wm
