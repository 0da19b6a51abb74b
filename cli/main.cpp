// The wheelmerge command line: arguments, output formatting and exit codes; the work is done
// by the merger library.
#include "driver/build.hpp"
#include "merger/interrupt.hpp"
#include "merger/merge.hpp"
#include "merger/problem.hpp"
#include "merger/text.hpp"
#include "merger/verify.hpp"
#include "merger/wheel_name.hpp"
#include "ci/workflow.hpp"
#include "merger/version.hpp"

#include <CLI/CLI.hpp>
#include <fmt/color.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

namespace {

nlohmann::json problem_list(const wm::Problems& problems) {
  nlohmann::json list = nlohmann::json::array();
  for (const wm::Problem& p : problems)
    list.push_back({{"kind", wm::kind_name(p.kind)}, {"file", wm::printable(p.file)},
                    {"member", wm::printable(p.member)}, {"what", wm::printable(p.what)},
                    {"expected", wm::printable(p.expected, true)}, {"found", wm::printable(p.found, true)},
                    {"message", wm::describe(p)}});
  return list;
}

struct Output {
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  bool color = false;

  void error(const wm::Problem& p) const {
    if (quiet && json) return;
    std::string prefix = color ? fmt::format(fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, "error")
                               : std::string("error");
    fmt::print(stderr, "wheelmerge: {}: {}\n", prefix, wm::describe(p));
  }
  void warning(const std::string& text) const {
    if (quiet) return;
    std::string prefix = color ? fmt::format(fmt::fg(fmt::terminal_color::yellow), "warning") : std::string("warning");
    fmt::print(stderr, "wheelmerge: {}: {}\n", prefix, wm::printable(text));
  }
  void info(const std::string& text) const {
    if (!quiet) fmt::print(stderr, "{}\n", wm::printable(text));
  }
  void detail(const std::string& text) const {
    if (verbose) fmt::print(stderr, "  {}\n", wm::printable(text));
  }

  int fail(const wm::Problems& problems) const {
    for (const wm::Problem& p : problems) error(p);
    if (json) {
      nlohmann::json out = {{"error", {{"kind", wm::kind_name(problems.front().kind)}, {"problems", problem_list(problems)}}}};
      fmt::print("{}\n", out.dump(2));
    }
    return wm::exit_code(problems);
  }
};

wm::WheelInput parse_input(const std::string& arg) {
  // PATH=LABEL, where LABEL looks like a label (a path may contain '=' too).
  size_t eq = arg.rfind('=');
  if (eq != std::string::npos && arg.find('/', eq) == std::string::npos && arg.size() - eq - 1 <= 5)
    return {arg.substr(0, eq), arg.substr(eq + 1)};
  return {arg, {}};
}

wm::DosTime output_time(const Output& out) {
  std::string warning;
  wm::DosTime time = wm::output_time_from_environment(warning);
  if (!warning.empty()) out.warning(warning);
  return time;
}

int run_merge(const Output& out, const std::vector<std::string>& args, const std::string& out_dir,
              const wm::MergeOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::vector<wm::WheelInput> inputs;
  for (const std::string& a : args) inputs.push_back(parse_input(a));
  wm::Problems problems;
  auto result = wm::merge_wheels(inputs, options, out_dir, output_time(out), problems);
  if (!result) return out.fail(problems);
  for (const std::string& w : result->plan.warnings) out.warning(w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const wm::VariantFile& v : result->plan.variant_files) out.detail(fmt::format("{}: {} -> {}", v.label, v.original, v.stored));
  out.info(fmt::format("wrote {} ({} shared files, {} variant files for {}) in {:.2f}s", result->output,
                       result->plan.shared_files, result->plan.variant_files.size(),
                       fmt::join(result->plan.labels, ", "), seconds));
  if (out.json) {
    nlohmann::json j = {{"output", result->output},
                        {"variants", result->plan.labels},
                        {"tags", result->plan.tags},
                        {"shared", result->plan.shared_files},
                        {"variant_files", result->plan.variant_files.size()},
                        {"loaders", result->plan.loader_packages},
                        {"warnings", result->plan.warnings},
                        {"seconds", seconds}};
    fmt::print("{}\n", j.dump(2));
  }
  return 0;
}

// "12=PATH" or "12".
bool parse_cuda_option(const std::string& value, wm::BuildOptions& options) {
  size_t eq = value.find('=');
  std::string major = value.substr(0, eq);
  if (major.rfind("cu", 0) == 0) major = major.substr(2);
  if (major.empty() || major.size() > 2 || major.find_first_not_of("0123456789") != std::string::npos) return false;
  options.majors.push_back(std::stoi(major));
  if (eq != std::string::npos) options.toolkit_paths[std::stoi(major)] = value.substr(eq + 1);
  return true;
}

int run_build(const Output& out, wm::BuildOptions& options, const std::vector<std::string>& cuda,
              const std::vector<std::string>& settings) {
  for (const std::string& c : cuda)
    if (!parse_cuda_option(c, options))
      return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid --cuda", "N=PATH or N, e.g. 12=/usr/local/cuda-12.9", c}});
  for (const std::string& kv : settings) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid -C", "KEY=VALUE", kv}});
    options.config_settings[kv.substr(0, eq)].push_back(kv.substr(eq + 1));
  }
  auto start = std::chrono::steady_clock::now();
  wm::Problems problems;
  auto result = wm::build_project(options, [&](const std::string& line) { out.info(line); }, problems);
  if (!result) return out.fail(problems);
  for (const std::string& w : result->merge.plan.warnings) out.warning(w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.info(fmt::format("wrote {} in {:.1f}s (logs in {})", result->merge.output, seconds, result->log_dir));
  if (out.json) {
    nlohmann::json variants = nlohmann::json::array();
    for (const wm::VariantBuild& v : result->variants)
      variants.push_back({{"label", v.label}, {"cuda_version", v.toolkit.version}, {"toolkit", v.toolkit.root},
                          {"found_by", v.toolkit.found_by}, {"log", v.log}, {"seconds", v.seconds}});
    nlohmann::json j = {{"output", result->merge.output}, {"variants", variants}, {"log_dir", result->log_dir},
                        {"shared", result->merge.plan.shared_files},
                        {"variant_files", result->merge.plan.variant_files.size()}, {"seconds", seconds}};
    fmt::print("{}\n", j.dump(2));
  }
  return 0;
}

// The toolkit a build of `major` would use, and the environment its build would get.
int run_toolkit(const Output& out, const std::string& project_dir, const std::vector<std::string>& cuda) {
  wm::Problems problems;
  auto project = wm::load_project_config(project_dir, problems);
  if (!project) return out.fail(problems);
  wm::BuildOptions options;
  for (const std::string& c : cuda)
    if (!parse_cuda_option(c, options))
      return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid --cuda", "N=PATH or N", c}});
  if (options.majors.empty()) options.majors = project->wheelmerge.cuda;
  if (options.majors.empty()) options.majors = {12, 13};
  wm::ToolkitHints hints;
  hints.command_line = options.toolkit_paths;
  for (const auto& [major, v] : project->wheelmerge.variants)
    if (!v.toolkit.empty()) hints.config[major] = (std::filesystem::path(project_dir) / v.toolkit).lexically_normal().string();
  hints.env = wm::current_environment();
  nlohmann::json found = nlohmann::json::array();
  for (int major : options.majors) {
    wm::Problems missing;
    auto t = wm::find_toolkit(major, hints, missing);
    if (!t) {
      for (const wm::Problem& p : missing) out.warning(wm::describe(p));
      continue;
    }
    found.push_back({{"label", fmt::format("cu{}", major)}, {"major", major}, {"root", t->root},
                     {"version", t->version}, {"version_source", t->version_source}, {"found_by", t->found_by},
                     {"env", wm::environment_changes(hints.env, wm::variant_environment(*t, project->wheelmerge, hints.env))}});
    out.info(fmt::format("cu{}: CUDA {} at {} (found by {})", major, t->version, t->root, t->found_by));
  }
  if (out.json) fmt::print("{}\n", nlohmann::json{{"toolkits", found}}.dump(2));
  return found.empty() ? 2 : 0;
}

int run_verify(const Output& out, const std::vector<std::string>& paths) {
  nlohmann::json reports = nlohmann::json::array();
  wm::Problems all;
  for (const std::string& path : paths) {
    wm::Problems problems;
    auto summary = wm::verify_wheel(path, problems);
    if (summary) {
      for (const auto& w : (*summary)["warnings"]) out.warning(w.get<std::string>());
      out.info(fmt::format("{}: valid{}", path, (*summary)["merged"].get<bool>() ? " merged wheel" : " wheel"));
      reports.push_back(*summary);
    } else {
      for (const wm::Problem& p : problems) out.error(p);
      reports.push_back({{"file", path}, {"valid", false}, {"problems", problem_list(problems)}});
      all.insert(all.end(), problems.begin(), problems.end());
    }
  }
  if (out.json) fmt::print("{}\n", nlohmann::json{{"wheels", reports}}.dump(2));
  return wm::exit_code(all);
}

int run_ci_init(const Output& out, const std::string& project_dir, wm::WorkflowOptions options,
                const std::string& pythons, const std::string& cuda, bool force) {
  wm::Problems problems;
  auto project = wm::load_project_config(project_dir, problems);
  if (!project) return out.fail(problems);
  auto split = [](const std::string& list) {  // "3.10,3.11" -> 3.10, 3.11; empty pieces dropped
    std::vector<std::string> items = wm::split(list, ',');
    std::erase(items, std::string());
    return items;
  };
  options.python_versions = split(pythons);
  for (const std::string& major : split(cuda)) {
    if (major.find_first_not_of("0123456789") != std::string::npos || major.size() > 2)
      return out.fail({{wm::ProblemKind::usage, {}, {}, "invalid --cuda", "majors such as 12,13", cuda}});
    options.cuda_majors.push_back(std::stoi(major));
  }
  if (options.cuda_majors.empty()) options.cuda_majors = project->wheelmerge.cuda;
  if (options.cuda_majors.empty()) options.cuda_majors = {12, 13};
  if (options.import_name.empty()) {
    options.import_name = wm::normalize_name(project->name);
    if (options.import_name.empty())
      return out.fail({{wm::ProblemKind::usage, project_dir + "/pyproject.toml", {}, "no import name",
                        "--import-name or a static [project] name", "neither"}});
  }
  options.variant_files = project->wheelmerge.variant_files;
  options.driver_fallback = project->wheelmerge.driver_fallback;
  const auto path = std::filesystem::path(project_dir) / ".github" / "workflows" / "wheels.yml";
  if (std::filesystem::exists(path) && !force)
    return out.fail({{wm::ProblemKind::usage, path.string(), {}, "the workflow already exists",
                      "--force to replace it", "a file"}});
  std::filesystem::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::trunc);
  file << wm::caller_workflow(options);
  if (!file.flush())
    return out.fail({{wm::ProblemKind::other, path.string(), {}, "cannot write the workflow", {}, std::strerror(errno)}});
  out.info(fmt::format("wrote {}: builds {} x CUDA {}, imports {}", path.string(), fmt::join(options.python_versions, ", "),
                       fmt::join(options.cuda_majors, ", "), options.import_name));
  if (out.json) fmt::print("{}\n", nlohmann::json{{"output", path.string()}}.dump(2));
  return 0;
}

// The project's configuration as wheelmerge reads it, for tools (the PEP 517 shim) that must
// not parse pyproject.toml or wheelmerge.yaml a second way.
int run_config(const Output& out, const std::string& project_dir) {
  wm::Problems problems;
  auto project = wm::load_project_config(project_dir, problems);
  if (!project) return out.fail(problems);
  const wm::BuildConfig& c = project->wheelmerge;
  nlohmann::json variants = nlohmann::json::object();
  for (const auto& [major, v] : c.variants)
    variants[fmt::format("cu{}", major)] = {{"toolkit", v.toolkit}, {"env", v.env}};
  nlohmann::json j = {{"source", c.source}, {"cuda", c.cuda}, {"backend", c.backend}, {"backend-path", c.backend_path},
                      {"variant-files", c.variant_files}, {"driver-fallback", c.driver_fallback}, {"env", c.env},
                      {"variants", variants},
                      {"build-system", {{"requires", project->build_system.requirements},
                                        {"build-backend", project->build_system.backend},
                                        {"backend-path", project->build_system.backend_path}}}};
  fmt::print("{}\n", j.dump(2));  // JSON whether or not --json is given: it is the output
  return 0;
}

int run_inspect(const Output& out, const std::string& path) {
  wm::Problems problems;
  auto report = wm::inspect_wheel(path, problems);
  if (!report) return out.fail(problems);
  for (const auto& w : (*report)["warnings"]) out.warning(w.get<std::string>());
  if (out.json) {
    fmt::print("{}\n", report->dump(2));
    return 0;
  }
  const auto& r = *report;
  fmt::print("{} {}: valid wheel\n", r["name"].get<std::string>(), r["version"].get<std::string>());
  fmt::print("tags: {}\n", fmt::join(r["tags"].get<std::vector<std::string>>(), ", "));
  if (!r["merged"].get<bool>()) {
    fmt::print("not a merged wheel: no wheelmerge loader\n");
    return 0;
  }
  fmt::print("variants: {}\n", fmt::join(r["variants"].get<std::vector<std::string>>(), ", "));
  for (const auto& l : r["loaders"])
    fmt::print("loader: {} (package {}, driver fallback {})\n", l["loader"].get<std::string>(),
               l["package"].get<std::string>(), l["driver_fallback"].get<bool>() ? "on" : "off");
  for (const auto& l : r["loaders"])
    for (const auto& [label, info] : l["build_info"].items())
      if (!info.empty()) fmt::print("{} built with: {}\n", label, info.dump());
  fmt::print("shared: {} bytes\n", r["shared_bytes"].get<uint64_t>());
  for (const auto& [label, bytes] : r["variant_bytes"].items())
    fmt::print("{}: {} bytes\n", label, bytes.get<uint64_t>());
  for (const auto& f : r["files"])
    fmt::print("  {:>6} {:>12} {}\n", f["variant"].is_null() ? "shared" : f["variant"].get<std::string>(),
               f["size"].get<uint64_t>(), f["path"].get<std::string>());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The short form: `wheelmerge a.whl b.whl` means `wheelmerge merge a.whl b.whl`.
  static const std::set<std::string> kCommands = {"merge", "inspect", "build", "toolkit", "verify", "ci", "config"};
  if (!args.empty() && !kCommands.count(args[0]) && args[0].rfind('-', 0) != 0)
    args.insert(args.begin(), "merge");

  CLI::App app{"wheelmerge: merge per-CUDA-major wheels into one that imports the right build"};
  app.set_version_flag("--version", std::string(wm::kVersion));
  app.require_subcommand(1);
  Output out;
  out.color = isatty(STDERR_FILENO) && !std::getenv("NO_COLOR");

  auto add_common = [&](CLI::App* cmd) {
    cmd->add_flag("--json", out.json, "print a JSON summary on stdout");
    auto* quiet = cmd->add_flag("-q,--quiet", out.quiet, "print only errors");
    cmd->add_flag("-v,--verbose", out.verbose, "print each variant file")->excludes(quiet);
  };
  std::vector<std::string> wheels;
  std::string out_dir = ".";
  wm::MergeOptions options;
  auto* merge = app.add_subcommand("merge", "merge wheels built for different CUDA majors");
  merge->add_option("wheels", wheels, "input wheels, each optionally PATH=cuNN")->required();
  merge->add_option("-o,--output-dir", out_dir, "output directory (default: current directory)");
  merge->add_option("--variant-file", options.variant_globs, "glob of other paths that may differ per build");
  merge->add_flag("--driver-fallback", options.driver_fallback,
                  "let the loader use the driver's CUDA version when cuda-bindings is not installed");
  add_common(merge);
  std::string inspect_path;
  auto* inspect = app.add_subcommand("inspect", "validate a wheel and show its variants");
  inspect->add_option("wheel", inspect_path, "the wheel")->required();
  add_common(inspect);

  wm::BuildOptions build_options;
  std::vector<std::string> cuda, settings;
  auto* build = app.add_subcommand("build", "build a project once per CUDA major, then merge");
  build->add_option("project", build_options.project_dir, "the project directory (default: .)");
  build->add_option("--cuda", cuda, "a CUDA major to build, N or N=TOOLKIT_ROOT (repeatable)");
  build->add_option("-o,--output-dir", build_options.out_dir, "output directory (default: dist)");
  build->add_flag("!--no-isolation", build_options.isolation, "build in the current environment");
  build->add_option("-C,--config-setting", settings, "KEY=VALUE for the project's build backend");
  build->add_option("-j,--jobs", build_options.jobs, "variants built at once (default: 1)");
  build->add_option("--python", build_options.python, "the Python that builds (default: python3)");
  build->add_option("--find-links", build_options.find_links, "a directory or URL pip may install build requirements from");
  build->add_option("--log-dir", build_options.log_dir, "where each variant's log is kept");
  build->add_option("--variant-file", build_options.merge.variant_globs, "glob of other paths that may differ per build");
  build->add_flag("--driver-fallback", build_options.merge.driver_fallback, "see merge --driver-fallback");
  add_common(build);

  std::vector<std::string> verify_paths;
  auto* verify = app.add_subcommand("verify", "check wheels strictly: zip structure, names, hashes, metadata, loaders");
  verify->add_option("wheels", verify_paths, "the wheels")->required();
  add_common(verify);

  auto* ci = app.add_subcommand("ci", "GitHub Actions for the project");
  ci->require_subcommand(1);
  auto* ci_init = ci->add_subcommand("init", "write .github/workflows/wheels.yml: build each variant on runners, merge, test");
  std::string ci_project = ".", ci_pythons = "3.10,3.11,3.12,3.13", ci_cuda;
  bool ci_force = false;
  wm::WorkflowOptions workflow;
  ci_init->add_option("project", ci_project, "the project directory (default: .)");
  ci_init->add_option("--python", ci_pythons, "Python versions, comma-separated (default: 3.10,3.11,3.12,3.13)");
  ci_init->add_option("--cuda", ci_cuda, "CUDA majors, comma-separated (default: the configuration's, else 12,13)");
  ci_init->add_flag("--container", workflow.container, "build in NVIDIA's CUDA container images");
  ci_init->add_flag("--publish", workflow.publish, "publish the merged wheels to PyPI on version tags");
  ci_init->add_option("--import-name", workflow.import_name, "the package to import in the test job (default: from [project] name)");
  ci_init->add_option("--ref", workflow.ref, "the ref of wheelmerge's reusable workflow (default: main)");
  ci_init->add_flag("--force", ci_force, "replace an existing workflow file");
  add_common(ci_init);

  std::string config_project = ".";
  auto* config = app.add_subcommand("config", "show the project's wheelmerge configuration as read");
  config->add_option("project", config_project, "the project directory (default: .)");
  add_common(config);

  std::string toolkit_project = ".";
  std::vector<std::string> toolkit_cuda;
  auto* toolkit = app.add_subcommand("toolkit", "show the CUDA toolkits a build would use, and their build environment");
  toolkit->add_option("project", toolkit_project, "the project directory (default: .)");
  toolkit->add_option("--cuda", toolkit_cuda, "a CUDA major, N or N=TOOLKIT_ROOT (repeatable)");
  add_common(toolkit);

  std::vector<const char*> cargv = {argv[0]};
  for (const std::string& a : args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  wm::catch_interrupts();
  try {
    int rc = 0;
    if (merge->parsed()) rc = run_merge(out, wheels, out_dir, options);
    else if (build->parsed()) rc = run_build(out, build_options, cuda, settings);
    else if (toolkit->parsed()) rc = run_toolkit(out, toolkit_project, toolkit_cuda);
    else if (verify->parsed()) rc = run_verify(out, verify_paths);
    else if (config->parsed()) rc = run_config(out, config_project);
    else if (ci_init->parsed()) rc = run_ci_init(out, ci_project, workflow, ci_pythons, ci_cuda, ci_force);
    else rc = run_inspect(out, inspect_path);
    // A run that completed despite a late signal reports its success: its output is in place.
    return rc != 0 && wm::interrupted() ? 128 + wm::interrupted() : rc;
  } catch (const std::exception& e) {
    return out.fail({{wm::ProblemKind::other, {}, {}, std::string("internal error: ") + e.what(), {}, {}}});
  }
}
