#include "ci/workflow_options.hpp"

#include "merger/format/wheel_name.hpp"

#include <algorithm>

namespace wm {

std::optional<Problem> complete_workflow_options(WorkflowOptions& options, std::vector<int> majors,
                                                 std::vector<VariantLabel> labels, const ProjectConfig& project,
                                                 const std::string& project_dir) {
  if (labels.empty() && majors.empty() && project.wheelmerge.selector() != Selector::cuda)
    labels = project.wheelmerge.labels;
  if (std::all_of(labels.begin(), labels.end(), [](const VariantLabel& l) { return l.selector() == Selector::cuda; })) {
    for (const VariantLabel& label : labels) majors.push_back(label.cuda_major());
    labels.clear();
  }
  options.labels = labels;
  if (labels.empty()) options.cuda_majors = chosen_cuda_majors(majors, project.wheelmerge);
  if (options.import_name.empty()) {
    if (!project.name.empty() && !is_project_name(project.name))
      return Problem{ProblemKind::usage,
                     project_dir + "/pyproject.toml",
                     {},
                     "invalid [project] name",
                     "a PEP 508 name: ASCII letters and digits, with -, _ or . inside",
                     project.name};
    options.import_name = normalize_name(project.name);
    if (options.import_name.empty())
      return Problem{ProblemKind::usage,
                     project_dir + "/pyproject.toml",
                     {},
                     "no import name",
                     "--import-name or a static [project] name",
                     "neither"};
  }
  options.variant_files = project.wheelmerge.variant_files;
  options.driver_fallback = project.wheelmerge.driver_fallback;
  return std::nullopt;
}

}  // namespace wm
