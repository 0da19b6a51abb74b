// `wheelmerge ci init`: the GitHub Actions workflow a project commits to build its variants on
// runners and merge them, as a call of wheelmerge's reusable workflow
// (.github/workflows/wheelmerge-wheels.yml), which holds the pipeline itself.
#pragma once

#include <string>
#include <vector>

namespace wm {

struct WorkflowOptions {
  std::string import_name;                  // checked by the test job: <import_name>._wheelmerge.selected()
  std::vector<std::string> python_versions;  // "3.10", ...
  std::vector<int> cuda_majors;
  bool container = false;  // build in NVIDIA's CUDA images rather than installing the toolkit
  bool publish = false;    // publish the merged wheels on version tags (trusted publishing)
  std::vector<std::string> variant_files;
  bool driver_fallback = false;
  std::string ref = "main";  // of wheelmerge's reusable workflow
};

// The workflow file's text, emitted with yaml-cpp.
std::string caller_workflow(const WorkflowOptions& options);

}  // namespace wm
