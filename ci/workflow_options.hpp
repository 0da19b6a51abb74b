// What `ci init` takes from the project's configuration (driver/config) into the workflow's
// options; apart from ci/workflow.cpp, which writes workflows from options alone.
#pragma once

#include "ci/workflow.hpp"
#include "driver/config.hpp"
#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"

#include <optional>
#include <string>
#include <vector>

namespace wm {

// What `ci init` derives from the command line's CUDA majors and labels (at most one of them
// given) and the project: cuNN builds go to the workflow as CUDA majors (those given, else the
// configuration's, else 12 and 13), any other labels as labels (those given, else the
// configuration's); the import name, when not given, from the static [project] name; the
// variant files and the driver fallback from the configuration. A usage problem (naming
// PROJECT_DIR/pyproject.toml) when the import name cannot be derived.
std::optional<Problem> complete_workflow_options(WorkflowOptions& options, std::vector<int> majors,
                                                 std::vector<VariantLabel> labels, const ProjectConfig& project,
                                                 const std::string& project_dir);

}  // namespace wm
