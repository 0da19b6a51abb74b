// `ci init`: the GitHub Actions workflow of a project; `ci plan`: the job matrices of wheelmerge's
// reusable workflow, from its inputs.
#include "cli/commands.hpp"

#include "ci/plan.hpp"
#include "ci/workflow.hpp"
#include "ci/workflow_options.hpp"
#include "driver/config.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/wheel_name.hpp"
#include "merger/version.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace wm::cli {

namespace {

int run_ci_init(const Output& out, const std::string& project_dir, wm::WorkflowOptions options,
                const std::string& pythons, const std::string& cuda, const std::string& variants, bool force) {
  wm::Problems problems;
  auto project = wm::load_project_config(project_dir, problems);
  if (!project) return out.fail(problems);
  auto split = [](const std::string& list) {  // "3.10,3.11" -> 3.10, 3.11; empty pieces dropped
    std::vector<std::string> items = wm::split(list, ',');
    std::erase(items, std::string());
    return items;
  };
  options.python_versions = split(pythons);
  std::vector<int> majors;
  for (const std::string& item : split(cuda)) {
    auto major = wm::parse_cuda_major(item);
    if (!major) return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid --cuda", "majors such as 12,13", cuda}});
    majors.push_back(*major);
  }
  std::vector<wm::VariantLabel> labels;
  if (auto bad = take_variant_options(split(variants), labels)) return out.fail({*bad});
  if (!labels.empty() && !majors.empty())
    return out.fail(
        {{wm::ProblemKind::usage, {}, {}, "both --cuda and --variant", "one of them", cuda + " and " + variants}});
  if (auto bad = wm::complete_workflow_options(options, majors, labels, *project, project_dir)) return out.fail({*bad});
  auto path = wm::write_workflow(project_dir, options, force, problems);
  if (!path) return out.fail(problems);
  std::vector<std::string> builds = wm::label_strings(options.labels);
  if (builds.empty())
    for (int major : options.cuda_majors) builds.push_back(fmt::format("CUDA {}", major));
  out.info(fmt::format("wrote {}: builds {} x {}, imports {}", *path, fmt::join(options.python_versions, ", "),
                       fmt::join(builds, ", "), options.import_name));
  if (out.json) wm::cli::print_out("{}\n", nlohmann::json{{"output", *path}}.dump(2));
  return 0;
}

// `ci plan`: the matrices as the reusable workflow's outputs (--github-output FILE appends them
// as KEY=VALUE lines, as $GITHUB_OUTPUT takes them), a line per build job.
int run_ci_plan(const Output& out, const wm::PlanInputs& inputs, const std::string& github_output) {
  wm::Problems problems;
  const std::optional<wm::Plan> plan = wm::plan_jobs(inputs, problems);
  if (!plan) return out.fail(problems);
  const nlohmann::json outputs = wm::plan_outputs(*plan);
  if (!github_output.empty()) {
    std::ofstream file(github_output, std::ios::app);
    for (const auto& [key, value] : outputs.items()) file << key << "=" << value.dump() << "\n";
    if (!file.flush())
      return out.fail({{wm::ProblemKind::other,
                        github_output,
                        {},
                        "cannot write the plan",
                        "a writable file",
                        std::strerror(errno)}});
  }
  for (const std::string& line : wm::plan_lines(*plan)) out.info(line);
  if (out.json) wm::cli::print_out("{}\n", outputs.dump(2));
  return 0;
}

}  // namespace

Subcommand add_ci_plan(CLI::App& app, Output& out) {
  struct Args {
    wm::PlanInputs inputs{"[\"3.10\", \"3.11\", \"3.12\", \"3.13\"]", "[12, 13]", "",
                          "{\"12\": \"12.9.1\", \"13\": \"13.0.2\"}", "{}",       "false",
                          "nvidia/cuda:{version}-devel-ubuntu22.04",  "build"};
    std::string github_output;
  };
  auto a = std::make_shared<Args>();
  wm::PlanInputs& i = a->inputs;
  auto* plan = app.get_subcommand("ci")->add_subcommand(
      "plan", "print the job matrices of wheelmerge's reusable workflow from its inputs (its plan job)");
  plan->add_option("--python-versions", i.python_versions, "JSON list of Python versions (default: 3.10 to 3.13)");
  plan->add_option("--cuda-majors", i.cuda_majors,
                   "JSON list of CUDA majors, when --labels is blank (default: [12, 13])");
  plan->add_option("--labels", i.labels, "JSON list of variant labels (default: none, --cuda-majors)");
  plan->add_option("--cuda-versions", i.cuda_versions, "JSON object: CUDA major to toolkit version");
  plan->add_option("--torch-index-urls", i.torch_index_urls, "JSON object: CUDA major or \"cpu\" to torch's index");
  plan->add_option("--container", i.container, "true: build in --container-image (default: false)");
  plan->add_option("--container-image", i.container_image, "the build container, {version} the toolkit's");
  plan->add_option("--builder", i.builder, "build (default) or cibuildwheel");
  plan->add_option("--github-output", a->github_output, "append the outputs to this file ($GITHUB_OUTPUT)");
  add_common(plan, out, "print only errors");
  plan->footer(examples({{"wheelmerge ci plan --labels '[\"torch210plus_cu12\", \"torch211plus_cu13\"]' --json",
                          "the build and test matrices of two torch floor labels"}}));
  return {plan, [&out, a] { return run_ci_plan(out, a->inputs, a->github_output); }};
}

// `ci init`, the first subcommand of `ci`.
Subcommand add_ci(CLI::App& app, Output& out) {
  struct Args {
    std::string project = ".", pythons = "3.10,3.11,3.12,3.13", cuda, variants;
    bool force = false;
    wm::WorkflowOptions workflow;
  };
  auto a = std::make_shared<Args>();
  auto* ci = app.add_subcommand("ci", "GitHub Actions for the project");
  ci->require_subcommand(1);
  ci->footer(examples({{"wheelmerge ci init", "write .github/workflows/wheels.yml for the project in ."}}));
  auto* ci_init =
      ci->add_subcommand("init", "write .github/workflows/wheels.yml: build each variant on runners, merge, test");
  ci_init->add_option("project", a->project, "the project directory (default: .)");
  ci_init->add_option("--python", a->pythons, "Python versions, comma-separated (default: 3.10,3.11,3.12,3.13)");
  ci_init->add_option("--cuda", a->cuda, "CUDA majors, comma-separated (default: the configuration's, else 12,13)");
  ci_init->add_option(
      "--variant", a->variants,
      "variant labels instead, comma-separated: torchMmm_cuNN, torchMmmplus_cuNN, torchMmm_cpu, x86_64_vN "
      "(default: the configuration's)");
  auto* container = ci_init->add_flag("--container", a->workflow.container, "build in NVIDIA's CUDA container images");
  ci_init
      ->add_flag("--cibuildwheel", a->workflow.cibuildwheel,
                 "build manylinux wheels with cibuildwheel, the toolkit installed in its image")
      ->excludes(container);
  ci_init->add_flag("--publish", a->workflow.publish, "publish the merged wheels to PyPI on version tags");
  ci_init->add_flag(
      "--variants", a->workflow.variants,
      "also build PEP 825 variant wheels and their index; with --publish, attach them to the tag's release");
  ci_init->add_option("--import-name", a->workflow.import_name,
                      "the package to import in the test job (default: from [project] name)");
  ci_init->add_option(
      "--ref", a->workflow.ref,
      "the ref of wheelmerge's reusable workflow (default: this release's tag, v" + std::string(wm::kVersion) + ")");
  ci_init->add_flag("--force", a->force, "replace an existing workflow file");
  add_common(ci_init, out, "print only errors");
  ci_init->footer(examples({{"wheelmerge ci init", "write .github/workflows/wheels.yml for the project in ."},
                            {"wheelmerge ci init --cuda 12,13 --python 3.12,3.13 --publish",
                             "those builds, published to PyPI on version tags"},
                            {"wheelmerge ci init --variant torch210plus_cu12,torch211plus_cu13",
                             "a torch extension: a build and a test job per label, each with its torch"}}));
  return {ci_init,
          [&out, a] { return run_ci_init(out, a->project, a->workflow, a->pythons, a->cuda, a->variants, a->force); }};
}

}  // namespace wm::cli
