// `build`, `toolkit` and `config`: a project built once per variant, and what its build would use.
#include "cli/commands.hpp"

#include "driver/build.hpp"
#include "driver/config.hpp"
#include "driver/toolkit.hpp"
#include "merger/format/label.hpp"
#include "merger/merge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

namespace wm::cli {

namespace {

// One built variant in `build --json`.
nlohmann::json variant_summary(const wm::VariantBuild& v) {
  nlohmann::json j = {{"label", v.label.str()},
                      {"build_info", v.build_info},
                      {"log", v.log.empty() ? nlohmann::json() : nlohmann::json(v.log)},
                      {"seconds", v.seconds}};
  if (v.toolkit) {
    j["cuda_version"] = v.toolkit->version;
    j["toolkit"] = v.toolkit->root;
    j["found_by"] = v.toolkit->found_by;
  }
  return j;
}

// " (logs in DIR)" for a build that kept its logs, nothing otherwise.
std::string logs_note(const std::string& log_dir) {
  return log_dir.empty() ? std::string() : " (logs in " + log_dir + ")";
}

// `build --no-merge`: the labelled build wheels written.
int report_builds(const Output& out, const wm::BuildResult& result, std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& wheel : result.builds) out.info("wrote " + wheel);
  out.info(fmt::format("checked and wrote {} build{} in {:.1f}s{}", result.builds.size(),
                       result.builds.size() == 1 ? "" : "s", seconds, logs_note(result.log_dir)));
  if (out.json) {
    nlohmann::json summaries = nlohmann::json::array();
    for (size_t i = 0; i < result.variants.size(); ++i) {
      summaries.push_back(variant_summary(result.variants[i]));
      summaries.back()["wheel"] = result.builds.at(i);
    }
    nlohmann::json j = {{"builds", result.builds},
                        {"variants", summaries},
                        {"merge",
                         {{"variant_files", result.variant_globs},
                          {"driver_fallback", result.driver_fallback},
                          {"runtime_requirements", result.runtime_requirements}}},
                        {"log_dir", result.log_dir.empty() ? nlohmann::json() : nlohmann::json(result.log_dir)},
                        {"seconds", seconds}};
    wm::cli::print_out("{}\n", j.dump(2));
  }
  return 0;
}

int run_build(const Output& out, wm::BuildOptions& options, const std::vector<std::string>& cuda,
              const std::vector<std::string>& variants, const std::vector<std::string>& settings) {
  if (auto bad = wm::take_cuda_options(cuda, options.majors, options.toolkit_paths))
    return out.fail(
        {{wm::ProblemKind::usage, {}, {}, "invalid --cuda", "N=PATH or N, e.g. 12=/usr/local/cuda-12.9", *bad}});
  if (auto bad = take_variant_options(variants, options.labels)) return out.fail({*bad});
  for (const std::string& kv : settings) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid -C", "KEY=VALUE", kv}});
    options.config_settings[kv.substr(0, eq)].push_back(kv.substr(eq + 1));
  }
  auto start = std::chrono::steady_clock::now();
  wm::Problems problems;
  const wm::PhaseHooks phases{[&](const std::string& title) { out.begin_group(title); }, [&] { out.end_group(); }};
  auto result = wm::build_project(
      options,
      [&](const std::string& line) {
        if (line.starts_with("warning: "))
          out.warning(line.substr(9));
        else
          out.info(line);
      },
      problems, phases);
  if (!result) return out.fail(problems);
  if (!options.merge_builds) return report_builds(out, *result, start);
  // With --variants, the variant wheels' warnings hold the merged wheel's as well (each once).
  for (const std::string& w : result->variant_wheels ? result->variant_wheels->warnings : result->merge.plan.warnings)
    out.warning(w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result->variant_wheels)
    out.info(fmt::format("wrote {} variant wheels ({}) and {}", result->variant_wheels->wheels.size(),
                         fmt::join(wm::label_strings(result->variant_wheels->labels), ", "),
                         result->variant_wheels->index));
  out.info(fmt::format("wrote {} in {:.1f}s{}", result->merge.output, seconds, logs_note(result->log_dir)));
  if (out.json) {
    nlohmann::json summaries = nlohmann::json::array();
    for (const wm::VariantBuild& v : result->variants) summaries.push_back(variant_summary(v));
    nlohmann::json j = {{"output", result->merge.output},
                        {"variants", summaries},
                        {"log_dir", result->log_dir.empty() ? nlohmann::json() : nlohmann::json(result->log_dir)},
                        {"shared", result->merge.plan.shared_files},
                        {"variant_files", result->merge.plan.variant_files.size()},
                        {"seconds", seconds}};
    if (result->variant_wheels) {
      j["variant_wheels"] = result->variant_wheels->wheels;
      j["variants_index"] = result->variant_wheels->index;
    }
    wm::cli::print_out("{}\n", j.dump(2));
  }
  return 0;
}

// What the build of `label` would use: its toolkit (none for cpu labels) and the environment
// its build would get; nullopt after a warning when its toolkit is not found.
std::optional<nlohmann::json> variant_toolkit(const Output& out, const wm::VariantLabel& label,
                                              const wm::BuildOptions& options, const wm::ProjectConfig& project,
                                              const std::string& python_cflags) {
  const std::string& project_dir = options.project_dir;
  const wm::ToolkitHints hints =
      wm::toolkit_hints(options.toolkit_paths, project.wheelmerge, project_dir, wm::current_environment(), &label);
  std::optional<wm::Toolkit> t;
  if (label.cuda_major() != 0) {  // a CPU level or a CPU-only torch needs no toolkit
    wm::Problems missing;
    t = wm::find_toolkit(label.cuda_major(), hints, missing);
    for (const wm::Problem& p : missing) out.warning(wm::describe(p));
    if (!t) return std::nullopt;
  }
  const wm::Environment env =
      wm::variant_environment(label, t ? &*t : nullptr, project.wheelmerge, hints.env, python_cflags);
  nlohmann::json j = {{"label", label.str()}, {"env", wm::environment_changes(hints.env, env)}};
  if (!t) {
    out.info(fmt::format("{}: no toolkit, -march={}", label.str(), wm::march_value(label.cpu_level())));
    return j;
  }
  j.update({{"major", t->major},
            {"root", t->root},
            {"version", t->version},
            {"version_source", t->version_source},
            {"found_by", t->found_by}});
  out.info(fmt::format("{}: CUDA {} at {} (found by {})", label.str(), t->version, t->root, t->found_by));
  return j;
}

// The sysconfig CFLAGS of the build interpreter, read in a temporary directory of its own.
std::optional<std::string> read_python_cflags(const std::string& python, wm::Problems& problems) {
  std::string error;
  std::optional<std::string> made = wm::make_temp_directory("wheelmerge-toolkit", error);
  if (!made) {
    problems.push_back({wm::ProblemKind::other,
                        {},
                        {},
                        "cannot create a temporary directory",
                        "a writable directory (set TMPDIR to one)",
                        error});
    return std::nullopt;
  }
  const std::string dir = *made;
  auto flags = wm::python_cflags(python, wm::current_environment(), dir, error);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!flags)
    problems.push_back({wm::ProblemKind::usage, python, {}, "cannot read the interpreter's CFLAGS", {}, error, true});
  return flags;
}

// The toolkit each variant's build would use, and the environment its build would get.
int run_toolkit(const Output& out, wm::BuildOptions& options, const std::vector<std::string>& cuda,
                const std::vector<std::string>& variants) {
  wm::Problems problems;
  auto project = wm::load_project_config(options.project_dir, problems);
  if (!project) return out.fail(problems);
  if (auto bad = wm::take_cuda_options(cuda, options.majors, options.toolkit_paths))
    return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid --cuda", "N=PATH or N", *bad}});
  if (auto bad = take_variant_options(variants, options.labels)) return out.fail({*bad});
  const std::vector<wm::VariantLabel> labels =
      wm::chosen_labels(wm::requested_labels(options, project->wheelmerge), project->wheelmerge);
  std::optional<std::string> cflags = std::string();
  if (std::any_of(labels.begin(), labels.end(), [](const auto& l) { return l.selector() == wm::Selector::cpu; }))
    cflags = read_python_cflags(options.python, problems);
  if (!cflags) return out.fail(problems);
  nlohmann::json found = nlohmann::json::array();
  for (const wm::VariantLabel& label : labels)
    if (auto j = variant_toolkit(out, label, options, *project, *cflags)) found.push_back(*j);
  if (out.json) wm::cli::print_out("{}\n", nlohmann::json{{"toolkits", found}}.dump(2));
  return found.empty() ? 2 : 0;
}

// The project's configuration as wheelmerge reads it, for tools (the PEP 517 shim) that must
// not parse pyproject.toml or wheelmerge.yaml a second way.
int run_config(const Output& out, const std::string& project_dir) {
  wm::Problems problems;
  auto project = wm::load_project_config(project_dir, problems);
  if (!project) return out.fail(problems);
  wm::cli::print_out("{}\n",
                     wm::config_json(*project).dump(2));  // JSON whether or not --json is given: it is the output
  return 0;
}

}  // namespace

Subcommand add_build(CLI::App& app, Output& out) {
  struct Args {
    wm::BuildOptions options;
    std::vector<std::string> cuda, variants, settings;
  };
  auto a = std::make_shared<Args>();
  wm::BuildOptions& o = a->options;
  auto* build =
      app.add_subcommand("build", "build a project once per CUDA major, torch release or CPU level, then merge");
  build->add_option("project", o.project_dir, "the project directory (default: .)");
  repeatable(build->add_option(
      "--variant", a->variants,
      "a variant to build: cuNN, torchMmm_cuNN or x86_64_vN (repeatable; default: the configuration's)"));
  repeatable(build->add_option("--cuda", a->cuda,
                               "N: a CUDA major to build (instead of the configured variants); N=TOOLKIT_ROOT: the "
                               "toolkit of CUDA N, built only when the configuration or another --cuda N names N "
                               "(repeatable)"));
  build->add_option("-o,--output-dir", o.out_dir, "output directory, created when missing (default: dist)");
  build->add_flag("!--no-isolation", o.isolation, "build in the current environment");
  repeatable(build->add_option("-C,--config-setting", a->settings, "KEY=VALUE for the project's build backend"));
  build->add_option("-j,--jobs", o.jobs, "variants built at once (default: 1)");
  build->add_option("--python", o.python, "the Python that builds (default: python3)");
  build
      ->add_option("--installer", o.installer,
                   "what makes each isolated build environment and installs into it: pip (default) or uv (the "
                   "uv beside --python, else on PATH; files hardlinked from uv's cache)")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, BuildOptions::Installer>{{"pip", BuildOptions::Installer::pip},
                                                                                 {"uv", BuildOptions::Installer::uv}},
                                  CLI::ignore_case));
  repeatable(
      build->add_option("--find-links", o.find_links, "a directory or URL pip may install build requirements from"));
  build->add_option("--log-dir", o.log_dir, "where each variant's log is kept");
  repeatable(
      build->add_option("--variant-file", o.merge.variant_globs, "glob of other paths that may differ per build"));
  build->add_flag("--driver-fallback", o.merge.driver_fallback, "see merge --driver-fallback");
  build->add_flag("--runtime-requirements", o.merge.runtime_requirements, "see merge --runtime-requirements");
  build->add_flag(
      "--variants", o.variants,
      "also write PEP 825 variant wheels of the builds and their {name}-{version}-variants.json (see variants)");
  build->add_flag("!--no-sm-arch", o.sm_arch, "with --variants: give no nvidia :: sm_arch property (see variants)");
  build->add_flag("!--no-merge", o.merge_builds,
                  "check each build as merge checks its inputs and write it as built, named NAME.LABEL.whl, "
                  "instead of merging (one label per CI job; merge them later)");
  add_common(build, out, "print only errors (no progress lines)");
  build->footer(examples(
      {{"wheelmerge build", "build the project in . for each configured variant (default: CUDA 12 and 13) into dist/"},
       {"wheelmerge build --cuda 12=/usr/local/cuda-12.9 --cuda 13=/opt/cuda-13.0",
        "the same builds, naming each major's toolkit (N=PATH chooses no builds)"},
       {"wheelmerge build --cuda 13", "CUDA 13 only: a one-build wheel"},
       {"wheelmerge build --variant cu12 --no-merge -o wheelhouse",
        "the CUDA 12 build alone, as wheelhouse/NAME.cu12.whl, for a later merge"}}));
  return {build, [&out, a] { return run_build(out, a->options, a->cuda, a->variants, a->settings); }};
}

Subcommand add_config(CLI::App& app, Output& out) {
  auto project = std::make_shared<std::string>(".");
  auto* config = app.add_subcommand("config", "show the project's wheelmerge configuration as read");
  config->add_option("project", *project, "the project directory (default: .)");
  add_common(config, out, "with --json: no error lines on stderr, only the JSON", {},
             "on failure, the problems as JSON on stdout (the configuration is JSON either way)");
  config->footer(examples({{"wheelmerge config", "the configuration of the project in ., as JSON"}}));
  return {config, [&out, project] { return run_config(out, *project); }};
}

Subcommand add_toolkit(CLI::App& app, Output& out) {
  struct Args {
    wm::BuildOptions options;
    std::vector<std::string> cuda, variants;
  };
  auto a = std::make_shared<Args>();
  auto* toolkit =
      app.add_subcommand("toolkit", "show the CUDA toolkits a build would use, and each variant's build environment");
  toolkit->add_option("project", a->options.project_dir, "the project directory (default: .)");
  repeatable(toolkit->add_option(
      "--cuda", a->cuda,
      "N: a CUDA major to show; N=TOOLKIT_ROOT: the toolkit of CUDA N, choosing nothing (repeatable)"));
  repeatable(toolkit->add_option("--variant", a->variants, "a variant: cuNN, torchMmm_cuNN or x86_64_vN (repeatable)"));
  toolkit->add_option("--python", a->options.python,
                      "the Python that would build (default: python3; its CFLAGS start a CPU level's)");
  add_common(toolkit, out, "print only errors (and the JSON with --json)");
  toolkit->footer(examples({{"wheelmerge toolkit", "the toolkit each configured variant's build would use"},
                            {"wheelmerge toolkit --cuda 12=/usr/local/cuda-12.9 --json",
                             "the same with CUDA 12's toolkit named, as JSON"}}));
  return {toolkit, [&out, a] { return run_toolkit(out, a->options, a->cuda, a->variants); }};
}

}  // namespace wm::cli
