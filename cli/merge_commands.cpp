// `merge` and `variants`: wheels in, a merged wheel or variant wheels out.
#include "cli/commands.hpp"

#include "merger/base/text.hpp"
#include "merger/merge.hpp"
#include "merger/variants.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <set>

namespace wm::cli {

namespace {

wm::DosTime output_time(const Output& out) {
  std::string warning;
  wm::DosTime time = wm::output_time_from_environment(warning);
  if (!warning.empty()) out.warning(warning);
  return time;
}

int run_merge(const Output& out, const std::vector<std::string>& args, const std::string& out_dir,
              const wm::MergeOptions& options) {
  auto start = std::chrono::steady_clock::now();
  wm::Problems problems;
  const wm::DosTime time = output_time(out);
  out.begin_group("merge");
  auto result = wm::merge_wheels(parse_inputs(args), options, out_dir, time, problems);
  out.end_group();
  if (!result) return out.fail(problems);
  for (const std::string& w : result->plan.warnings) out.warning(w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const wm::VariantFile& v : result->plan.variant_files)
    out.detail(fmt::format("{}: {} -> {}", v.label.str(), v.original, v.stored));
  const std::vector<std::string> labels = wm::label_strings(result->plan.labels);
  out.info(fmt::format("wrote {} ({} shared files, {} variant files for {}) in {:.2f}s", result->output,
                       result->plan.shared_files, result->plan.variant_files.size(), fmt::join(labels, ", "), seconds));
  if (out.json) {
    nlohmann::json j = {{"output", result->output},
                        {"variants", labels},
                        {"tags", result->plan.tags},
                        {"shared", result->plan.shared_files},
                        {"variant_files", result->plan.variant_files.size()},
                        {"loaders", result->plan.loader_packages},
                        {"warnings", result->plan.warnings},
                        {"seconds", seconds}};
    wm::cli::print_out("{}\n", j.dump(2));
  }
  return 0;
}

int run_variants(const Output& out, const std::vector<std::string>& args, const std::string& out_dir,
                 const wm::VariantsOptions& options) {
  auto start = std::chrono::steady_clock::now();
  wm::Problems problems;
  const wm::DosTime time = output_time(out);
  out.begin_group("variant wheels");
  auto result = wm::write_variants(parse_inputs(args), options, out_dir, time, problems);
  out.end_group();
  if (!result) return out.fail(problems);
  for (const std::string& w : result->warnings) out.warning(w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& w : result->wheels) out.detail(w);
  const std::vector<std::string> labels = wm::label_strings(result->labels);
  nlohmann::json sm_arch = nlohmann::json::object();
  for (size_t i = 0; i < labels.size(); ++i) {
    sm_arch[labels[i]] = result->sm_arch[i];
    if (result->labels[i].selector() == wm::Selector::cuda)
      out.info(fmt::format("{}: {}", labels[i],
                           result->sm_arch[i].empty() ? std::string("no sm_arch (any GPU)")
                                                      : fmt::format("sm_arch {}", fmt::join(result->sm_arch[i], " "))));
  }
  out.info(fmt::format("wrote {} variant wheels ({}) and {}{} in {:.2f}s", result->wheels.size(),
                       fmt::join(labels, ", "), result->index,
                       result->merged ? ", with the merged wheel " + *result->merged : std::string(), seconds));
  if (out.json) {
    nlohmann::json j = {{"variant_wheels", result->wheels},
                        {"labels", labels},
                        {"index", result->index},
                        {"sm_arch", sm_arch},
                        {"merged", result->merged ? nlohmann::json(*result->merged) : nlohmann::json()},
                        {"warnings", result->warnings},
                        {"seconds", seconds}};
    wm::cli::print_out("{}\n", j.dump(2));
  }
  return 0;
}

// --build-info LABEL:KEY=VALUE values into `options`; a usage problem for the first that is
// malformed or names a label no input has.
std::optional<wm::Problem> take_build_info(const std::vector<std::string>& values,
                                           const std::vector<std::string>& wheels, wm::MergeOptions& options) {
  std::set<std::string> labels;  // as the inputs spell them; "" for an input without one
  for (const std::string& w : wheels) {
    auto found = wm::input_label(parse_input(w), options);
    labels.insert(found ? found->text : std::string());
  }
  for (const std::string& value : values) {
    const size_t colon = value.find(':'), eq = value.find('=', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || eq == std::string::npos)
      return wm::Problem{wm::ProblemKind::usage,
                         {},
                         {},
                         "invalid --build-info",
                         "LABEL:KEY=VALUE, e.g. cu12:cuda_version=12.9",
                         value};
    const std::string label = value.substr(0, colon), key = value.substr(colon + 1, eq - colon - 1);
    std::string why;
    auto parsed = wm::VariantLabel::parse(label, why);
    if (!parsed)
      return wm::Problem{wm::ProblemKind::usage, {}, {}, "invalid label in --build-info " + value, why, label};
    if (!labels.count(label) && !labels.count(std::string()))  // an input without a label is the merge's to report
      return wm::Problem{wm::ProblemKind::usage,
                         {},
                         {},
                         "--build-info " + value + " names no input",
                         fmt::format("a label of an input ({})", fmt::join(labels, ", ")),
                         label};
    if (!wm::is_ascii_identifier(key))
      return wm::Problem{
          wm::ProblemKind::usage, {}, {}, "invalid key in --build-info " + value, "an identifier such as cuda_version",
          "\"" + key + "\""};
    options.build_info[*parsed][key] = value.substr(eq + 1);
  }
  return std::nullopt;
}

}  // namespace

Subcommand add_merge(CLI::App& app, Output& out) {
  struct Args {
    std::vector<std::string> wheels;
    std::string out_dir = "dist";
    wm::MergeOptions options;
    std::vector<std::string> build_info;
  };
  auto a = std::make_shared<Args>();
  auto* merge =
      app.add_subcommand("merge", "merge wheels built for different CUDA majors, torch versions or CPU levels");
  merge->add_option("wheels", a->wheels, "input wheels, each optionally PATH=LABEL (cuNN, torchMmm_cuNN, x86_64_vN)")
      ->required();
  merge->add_option("-o,--output-dir", a->out_dir, "output directory, created when missing (default: dist)");
  repeatable(
      merge->add_option("--variant-file", a->options.variant_globs, "glob of other paths that may differ per build"));
  merge->add_flag("--runtime-requirements", a->options.runtime_requirements,
                  "make each build require the NVIDIA runtime wheels of the CUDA libraries it links and does not "
                  "bundle (cuda-toolkit[cublas]==13.*), where none of its requirements brings them");
  merge->add_flag("--driver-fallback", a->options.driver_fallback,
                  "builds that require cuda-bindings: let the loader use the CUDA runtime wheels, then the "
                  "driver's CUDA version, when cuda-bindings is not installed (builds that do not use it always do)");
  repeatable(merge->add_option("--build-info", a->build_info,
                               "LABEL:KEY=VALUE recorded in the loader's build_info() for that input (repeatable)"));
  merge->add_option(
      "--name", a->options.name,
      "the merged distribution's name, for inputs of different names (cupy-cuda12x, cupy-cuda13x -> cupy); "
      "labels may then come from the names' -cudaNNx/-cuNN suffixes");
  add_common(merge, out, "print only errors", "also list each variant file: label, path in the build, path stored");
  merge->footer(examples(
      {{"wheelmerge merge dist12/pkg-1.0-cp312-cp312-linux_x86_64.whl=cu12 "
        "dist13/pkg-1.0-cp312-cp312-linux_x86_64.whl=cu13",
        "merge two CUDA builds into dist/pkg-1.0-cp312-cp312-linux_x86_64.whl"},
       {"wheelmerge pkg-1.0+cu12-cp312-cp312-linux_x86_64.whl pkg-1.0+cu13-cp312-cp312-linux_x86_64.whl",
        "the same, labels from the +cuNN local versions (`merge` may be left out)"},
       {"wheelmerge merge a.whl=cu12 -o wheelhouse", "one build: a wheel whose loader says which build it has"}}));
  return {merge, [&out, a] {
            if (auto missing = unreadable_inputs(parse_inputs(a->wheels)); !missing.empty()) return out.fail(missing);
            if (auto bad = take_build_info(a->build_info, a->wheels, a->options)) return out.fail({*bad});
            return run_merge(out, a->wheels, a->out_dir, a->options);
          }};
}

Subcommand add_variants(CLI::App& app, Output& out) {
  struct Args {
    std::vector<std::string> wheels;
    std::string out_dir = "dist";
    wm::VariantsOptions options;
    std::vector<std::string> build_info;
  };
  auto a = std::make_shared<Args>();
  auto* variants = app.add_subcommand(
      "variants",
      "write PEP 825 variant wheels of the builds, their {name}-{version}-variants.json and, with --with-merged, "
      "the merged wheel as the fallback for other installers");
  variants->add_option("wheels", a->wheels, "input wheels, each optionally PATH=LABEL (cuNN)")->required();
  variants->add_option("-o,--output-dir", a->out_dir, "output directory, created when missing (default: dist)");
  variants->add_flag("--with-merged", a->options.with_merged, "also write the merged wheel (as `merge` does)");
  variants->add_flag(
      "!--no-sm-arch", a->options.sm_arch,
      "give no nvidia :: sm_arch property (by default: the GPU architectures every file of a build has code for)");
  repeatable(variants->add_option("--variant-file", a->options.merge.variant_globs,
                                  "for the merged wheel: glob of other paths that may differ per build"));
  variants->add_flag("--runtime-requirements", a->options.merge.runtime_requirements,
                     "see merge --runtime-requirements");
  variants->add_flag("--driver-fallback", a->options.merge.driver_fallback,
                     "for the merged wheel: let the loader use the driver's CUDA version");
  repeatable(variants->add_option("--build-info", a->build_info,
                                  "for the merged wheel: LABEL:KEY=VALUE recorded in the loader's build_info()"));
  variants->add_option(
      "--name", a->options.merge.name,
      "the release's distribution name, for inputs of different names (cupy-cuda12x, cupy-cuda13x -> cupy)");
  add_common(variants, out, "print only errors", "also list each variant wheel written");
  variants->footer(examples({{"wheelmerge variants a.whl=cu12 b.whl=cu13",
                              "dist/ gets a variant wheel per build and {name}-{version}-variants.json"},
                             {"wheelmerge variants --with-merged a.whl=cu12 b.whl=cu13",
                              "the same, and the merged wheel for installers without variant support"}}));
  return {variants, [&out, a] {
            if (auto missing = unreadable_inputs(parse_inputs(a->wheels)); !missing.empty()) return out.fail(missing);
            if (auto bad = take_build_info(a->build_info, a->wheels, a->options.merge)) return out.fail({*bad});
            return run_variants(out, a->wheels, a->out_dir, a->options);
          }};
}

}  // namespace wm::cli
