// `wheelmerge ci init`: the GitHub Actions workflow a project commits to build its variants on
// runners and merge them, as a call of wheelmerge's reusable workflow
// (.github/workflows/wheelmerge-wheels.yml), which holds the pipeline itself.
#pragma once

#include "merger/problem.hpp"

#include <optional>
#include <string>
#include <vector>

namespace wm {

struct WorkflowOptions {
  std::string import_name;                  // checked by the test job: <import_name>._wheelmerge.selected()
  std::vector<std::string> python_versions;  // "3.10", ...
  std::vector<int> cuda_majors;
  bool container = false;  // build in NVIDIA's CUDA images rather than installing the toolkit
  // Build manylinux wheels with cibuildwheel, the toolkit installed in its image (builder:
  // cibuildwheel); excludes `container`.
  bool cibuildwheel = false;
  bool publish = false;    // publish the merged wheels on version tags (trusted publishing)
  // Also the PEP 825 variant wheels and their index (artifacts variants-py<python>); with
  // `publish`, attached to the tag's GitHub release.
  bool variants = false;
  std::vector<std::string> variant_files;
  bool driver_fallback = false;
  std::string ref = "main";  // of wheelmerge's reusable workflow
};

// The workflow file's text, emitted with yaml-cpp.
std::string caller_workflow(const WorkflowOptions& options);

// Writes caller_workflow(options) to PROJECT/.github/workflows/wheels.yml, creating the
// directories; an existing file is replaced only with `force`. The path written, or nullopt with
// a problem naming the file. A directory that cannot be created throws std::filesystem_error, as
// it always has (`ci init` reports it as an internal error).
std::optional<std::string> write_workflow(const std::string& project_dir, const WorkflowOptions& options, bool force,
                                          Problems& problems);

}  // namespace wm
