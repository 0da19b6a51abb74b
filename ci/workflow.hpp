// `wheelmerge ci init`: the GitHub Actions workflow a project commits to build its variants on
// runners and merge them, as a call of wheelmerge's reusable workflow
// (.github/workflows/wheelmerge-wheels.yml), which holds the pipeline itself.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"
#include "merger/version.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct WorkflowOptions {
  std::string import_name;                   // checked by the test job: <import_name>._wheelmerge.selected()
  std::vector<std::string> python_versions;  // "3.10", ...
  std::vector<int> cuda_majors;
  // Labels other than cuNN (torch labels, x86-64 levels): each a build and a test job, given to
  // the reusable workflow as `labels` (cuNN builds go as `cuda-majors`). Empty: cuda_majors.
  std::vector<VariantLabel> labels;
  bool container = false;  // build in NVIDIA's CUDA images rather than installing the toolkit
  // Build manylinux wheels with cibuildwheel, the toolkit installed in its image (builder:
  // cibuildwheel); excludes `container`.
  bool cibuildwheel = false;
  bool publish = false;  // publish the merged wheels on version tags (trusted publishing)
  // Also the PEP 825 variant wheels and their index (artifacts variants-py<python>); with
  // `publish`, attached to the tag's GitHub release.
  bool variants = false;
  std::vector<std::string> variant_files;
  bool driver_fallback = false;
  // The ref of wheelmerge's reusable workflow (which names its action at the same ref): the
  // release tag of the wheelmerge writing the workflow, so that a project's CI changes only when
  // it moves to a newer release (`ci init --force` with that release, or the tag edited by hand).
  std::string ref = "v" + std::string(kVersion);
};

// Every value of `options` that came from a configuration or the command line, checked against
// its grammar before anything is written, since GitHub evaluates `${{ ... }}` in any string of
// a workflow and the reusable workflow passes values on to shell steps (through env, but a line
// break in a value still ends a line of $GITHUB_ENV): the import name dotted ASCII identifiers,
// Python versions 3.N (3.Nt for free-threaded builds), CUDA majors 1 to 99, labels of one kind,
// none twice, cibuildwheel and PEP 825 variant wheels only for labels that have them, the ref a git ref
// name of letters, digits and ._/-, the variant-file globs printable ASCII without white space,
// quotes, backslash, backquote, `$`, `{` or `}`, not starting with `-`. A usage problem names each value that is not.
void validate_workflow_options(const WorkflowOptions& options, Problems& problems);

// A Python version of a workflow's matrix: 3.N, or 3.Nt for a free-threaded build.
bool workflow_python_version(std::string_view version);

// The workflow file's text, emitted with yaml-cpp; `options` validated.
std::string caller_workflow(const WorkflowOptions& options);

// Validates `options`, then writes caller_workflow(options) to
// PROJECT/.github/workflows/wheels.yml, creating the directories; an existing file is replaced
// only with `force`. The path written, or nullopt with problems naming each invalid value or
// the file that could not be written.
std::optional<std::string> write_workflow(const std::string& project_dir, const WorkflowOptions& options, bool force,
                                          Problems& problems);

}  // namespace wm
