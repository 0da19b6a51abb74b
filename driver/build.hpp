// `wheelmerge build`: the project's own PEP 517 build, once per CUDA major against that
// major's toolkit, each from its own clean copy of the source tree, then the merge.
#pragma once

#include "driver/config.hpp"
#include "merger/merge.hpp"
#include "driver/process.hpp"
#include "driver/toolkit.hpp"
#include "merger/label.hpp"

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
  std::vector<int> majors;                   // empty: the configuration's, else default_cuda_majors()
  std::map<int, std::string> toolkit_paths;  // --cuda N=PATH
  bool isolation = true;
  std::map<std::string, std::vector<std::string>> config_settings;  // -C KEY=VALUE (repeatable), for the project's backend
  int jobs = 1;
  std::string python = "python3";  // the interpreter that runs the backend (or makes the build venv)
  std::vector<std::string> find_links;
  std::string log_dir;  // empty: a new directory under the system's temporary directory
  MergeOptions merge;   // command-line additions to the configuration's
};

struct VariantBuild {
  VariantBuild(VariantLabel label, Toolkit toolkit) : label(std::move(label)), toolkit(std::move(toolkit)) {}
  VariantLabel label;  // cuNN of the toolkit's major
  Toolkit toolkit;
  Environment env;    // what the variant's build saw changed from the inherited environment ("": removed)
  std::string wheel;  // the built wheel
  std::string log;
  double seconds = 0;
};

struct BuildResult {
  std::string log_dir;
  std::vector<VariantBuild> variants;
  MergeResult merge;
};

using ProgressSink = std::function<void(const std::string&)>;

// The whole environment of a variant's build, from `base`: every toolkit variable names this
// toolkit, no other toolkit's nvcc stays reachable on PATH, and the configuration's env applies.
Environment variant_environment(const Toolkit& toolkit, const BuildConfig& config, const Environment& base);

// What `env` changes in `base`: variables set to another value, and those removed (as "").
Environment environment_changes(const Environment& base, const Environment& env);

// Copies a project's source tree, leaving out version control and the usual build outputs
// (build/, dist/, *.egg-info/, __pycache__/...), so no artefact of an earlier build is reused.
bool copy_source_tree(const std::string& from, const std::string& to, std::string& error);

std::optional<BuildResult> build_project(const BuildOptions& options, const ProgressSink& progress, Problems& problems);

}  // namespace wm
