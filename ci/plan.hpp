// `wheelmerge ci plan`: the reusable workflow's job matrices from its inputs, read with
// wheelmerge's own label grammar and label-set rules (the workflow holds no copy of them).
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace wm {

// The workflow's inputs as it passes them: JSON texts, and plain values.
struct PlanInputs {
  std::string python_versions;   // JSON list of strings, e.g. ["3.12", "3.13t"]
  std::string cuda_majors;       // JSON list, e.g. [12, 13]; used when `labels` is blank
  std::string labels;            // JSON list of labels, or blank
  std::string cuda_versions;     // JSON object: CUDA major -> toolkit version ("12.9.1")
  std::string torch_index_urls;  // JSON object: CUDA major or "cpu" -> https:// index
  std::string container;         // "true" or "false"
  std::string container_image;   // with {version}
  std::string builder;           // "build" or "cibuildwheel"
};

// One build job (and, less the build's own keys, one test job): a Python version and a label,
// with what the label's build and test need.
struct PlanEntry {
  std::string python;
  VariantLabel label;
  std::string cuda;          // the label's CUDA major, "" for CPU levels and CPU-only torch
  std::string cuda_version;  // the toolkit version built with (cuda-versions)
  std::string image;         // the build container, "" on the runner or with cibuildwheel
  std::string torch;         // a torch label's release, "2.10"
  std::string torch_index;   // where that torch comes from
  // A floor label's range of torch releases ">=2.10,<3": its test job also loads the build under
  // the newest of them on its index. "" for other labels.
  std::string torch_newest;
  std::string level;         // an x86-64 level's number
  std::string cibuildwheel;  // cibuildwheel's build selector, "cp312-manylinux_*"
};

struct Plan {
  std::vector<std::string> pythons;
  std::vector<VariantLabel> labels;  // as given
  std::vector<PlanEntry> jobs;       // Python-major order: every label of the first Python first
  bool cibuildwheel = false;
};

// The plan, or nullopt with a usage problem naming the input (as the workflow spells it), what
// was expected and what was found for each that is wrong: JSON of the wrong shape, a Python
// version not 3.N or 3.Nt, a label wheelmerge does not read, labels `merge` would refuse
// together (label_set_problems), a CUDA major above 99, a CUDA major without a toolkit version
// of that major, a torch label without an https:// index, cibuildwheel with other than cuNN
// labels, a container image without {version}. Bounded: at most 64 Python versions and 256 labels.
std::optional<Plan> plan_jobs(const PlanInputs& inputs, Problems& problems);

// The workflow's outputs: build-matrix ({"include": [...]}), python-versions, labels and
// test-matrix (the build entries less image, cibuildwheel and cuda-version), each entry's keys
// python, label, kind, cuda, torch, torch-index, torch-newest, level.
nlohmann::json plan_outputs(const Plan& plan);

// A line per build job: "build py3.12 cu13: CUDA 13.0.2 in nvidia/cuda:13.0.2-devel-ubuntu22.04".
std::vector<std::string> plan_lines(const Plan& plan);

}  // namespace wm
