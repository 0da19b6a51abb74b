#include "driver/build.hpp"

#include "merger/interrupt.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

namespace wm {

namespace fs = std::filesystem;

extern const std::string_view kHookRunnerTemplate;

namespace {

bool is_build_output(const fs::path& p) {
  static const std::set<std::string> kNames = {".git", ".hg", ".svn", "build", "dist", "__pycache__", ".venv",
                                               "_skbuild", ".eggs", ".tox", ".nox", ".mypy_cache",
                                               ".pytest_cache", ".ruff_cache", ".wheelmerge"};
  std::string name = p.filename().string();
  return kNames.count(name) || (name.size() > 9 && name.substr(name.size() - 9) == ".egg-info");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

bool copy_source_tree(const std::string& from, const std::string& to, std::string& error) {
  std::error_code ec;
  fs::create_directories(to, ec);
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (is_build_output(it->path()) && it->is_directory()) {
      it.disable_recursion_pending();
      continue;
    }
    fs::path target = fs::path(to) / fs::relative(it->path(), from);
    if (it->is_symlink()) fs::copy_symlink(it->path(), target, ec);
    else if (it->is_directory()) fs::create_directories(target, ec);
    else if (it->is_regular_file()) fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
    if (ec) break;
  }
  if (ec) error = ec.message();
  return !ec;
}

Environment variant_environment(const Toolkit& toolkit, const BuildConfig& config, const Environment& base) {
  Environment env = base;
  const fs::path root = toolkit.root;
  // CMake (FindCUDAToolkit, FindCUDA), meson, setuptools and torch read these.
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "CUDA_BIN_PATH"})
    env[var] = toolkit.root;
  std::error_code ec;
  if (fs::exists(root / "bin" / "nvcc", ec)) env["CUDACXX"] = (root / "bin" / "nvcc").string();
  else env.erase("CUDACXX");  // an inherited one would compile this variant with another toolkit
  std::string path = (root / "bin").string();
  if (auto it = base.find("PATH"); it != base.end()) {
    for (size_t start = 0; start <= it->second.size();) {
      size_t end = it->second.find(':', start);
      if (end == std::string::npos) end = it->second.size();
      std::string dir = it->second.substr(start, end - start);
      start = end + 1;
      fs::path nvcc = fs::path(dir) / "nvcc";
      bool other_toolkit = !dir.empty() && fs::exists(nvcc, ec) &&
                           fs::weakly_canonical(nvcc, ec).parent_path().parent_path() != fs::weakly_canonical(root, ec);
      if (!dir.empty() && !other_toolkit) path += ":" + dir;
    }
  }
  env["PATH"] = path;
  env["WHEELMERGE_BUILD_CUDA_MAJOR"] = std::to_string(toolkit.major);
  for (const auto& [k, v] : config.env) env[k] = v;
  if (auto it = config.variants.find(toolkit.major); it != config.variants.end())
    for (const auto& [k, v] : it->second.env) env[k] = v;
  return env;
}

Environment environment_changes(const Environment& base, const Environment& env) {
  Environment changes;
  for (const auto& [k, v] : env)
    if (auto it = base.find(k); it == base.end() || it->second != v) changes[k] = v;
  for (const auto& [k, v] : base)
    if (!env.count(k)) changes[k] = "";
  return changes;
}

namespace {

struct VariantJob {
  VariantBuild build;
  std::string work;  // this variant's directory: src/, env/, dist/
  Problems problems;
};

// One variant's build: environment, requirements, the backend's hooks.
void build_variant(VariantJob& job, const ProjectConfig& project, const BuildOptions& options,
                   const std::string& backend, const std::vector<std::string>& backend_path,
                   const std::vector<std::string>& requirements,
                   const ProgressSink& progress) {
  VariantBuild& b = job.build;
  const auto start = std::chrono::steady_clock::now();
  auto step = [&](const std::string& what) {
    progress(fmt::format("[{}] {} ({:.1f}s)", b.label, what, seconds_since(start)));
  };
  auto fail = [&](std::string what, const std::vector<std::string>& argv = {}) {
    std::string found = argv.empty() ? std::string() : "$ " + shell_quote(argv);
    job.problems.push_back({ProblemKind::other, b.label, {}, std::move(what), {},
                            found + "\n  last lines of " + b.log + ":\n" + tail_lines(b.log, 25)});
  };
  const std::string src = job.work + "/src";
  std::string error;
  step("copying the source tree");
  if (!copy_source_tree(options.project_dir, src, error)) return fail("cannot copy the source tree: " + error);

  const Environment inherited = current_environment();
  Environment env = variant_environment(b.toolkit, project.wheelmerge, inherited);
  // An isolated build sees its own environment only; without isolation the frontend's
  // environment is the build environment (pip's build isolation works through PYTHONPATH).
  if (options.isolation) env.erase("PYTHONPATH");
  // Temporary files of pip and the backend stay inside the variant's directory, removed with it.
  fs::create_directories(job.work + "/tmp");
  env["TMPDIR"] = job.work + "/tmp";
  b.env = environment_changes(inherited, env);
  auto run = [&](const std::vector<std::string>& argv) {
    if (interrupted()) return false;
    int rc = run_logged(argv, env, src, b.log, error);
    if (rc == -1) fail(error, argv);
    else if (rc != 0) fail(fmt::format("command failed with exit status {}", rc), argv);
    return rc == 0;
  };

  std::string python = options.python;
  auto pip_install = [&](const std::vector<std::string>& reqs) {
    if (reqs.empty()) return true;
    std::vector<std::string> argv = {python, "-m", "pip", "install", "--disable-pip-version-check", "--no-warn-script-location"};
    for (const std::string& f : options.find_links) argv.insert(argv.end(), {"--find-links", f});
    argv.insert(argv.end(), reqs.begin(), reqs.end());
    return run(argv);
  };
  if (options.isolation) {
    step("creating an isolated build environment");
    if (!run({options.python, "-m", "venv", job.work + "/env"})) return;
    python = job.work + "/env/bin/python";
    env["VIRTUAL_ENV"] = job.work + "/env";
    env["PATH"] = job.work + "/env/bin:" + env["PATH"];
    step(fmt::format("installing build requirements: {}", fmt::join(requirements, ", ")));
    if (!pip_install(requirements)) return;
  }

  const std::string runner = job.work + "/hook_runner.py";
  std::ofstream(runner) << kHookRunnerTemplate;
  auto hook = [&](const std::string& name, const nlohmann::json& kwargs) -> std::optional<nlohmann::json> {
    const std::string args = job.work + "/" + name + ".args.json", result = job.work + "/" + name + ".result.json";
    std::ofstream(args) << kwargs.dump();
    std::vector<std::string> argv = {python, runner, name, backend, nlohmann::json(backend_path).dump(), args, result};
    if (run_logged(argv, env, src, b.log, error) == -1) {
      fail(error, argv);
      return std::nullopt;
    }
    std::ifstream in(result);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || j.contains("error")) {
      fail(j.is_discarded() ? fmt::format("the {} hook did not report back", name) : j["error"].get<std::string>(), argv);
      return std::nullopt;
    }
    return j["return"];
  };
  // One value as a string, a repeated key as a list, as frontends pass them.
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [key, values] : options.config_settings)
    settings[key] = values.size() == 1 ? nlohmann::json(values.front()) : nlohmann::json(values);
  if (options.isolation) {
    auto extra = hook("get_requires_for_build_wheel", {{"config_settings", settings}});
    if (!extra) return;
    if (!extra->empty()) {
      step(fmt::format("installing what the backend asks for: {}", fmt::join(extra->get<std::vector<std::string>>(), ", ")));
      if (!pip_install(extra->get<std::vector<std::string>>())) return;
    }
  }
  step(fmt::format("building the wheel with {} against CUDA {} at {}", backend, b.toolkit.version, b.toolkit.root));
  fs::create_directories(job.work + "/dist");
  auto wheel = hook("build_wheel", {{"wheel_directory", job.work + "/dist"}, {"config_settings", settings}});
  if (!wheel) return;
  b.wheel = job.work + "/dist/" + wheel->get<std::string>();
  b.seconds = seconds_since(start);
  step("built " + wheel->get<std::string>());
}

}  // namespace

namespace {
// Paths the user gave, made absolute: the builds run in other directories.
BuildOptions with_absolute_paths(BuildOptions options) {
  auto absolute = [](std::string& path) {
    if (!path.empty() && path.find("://") == std::string::npos) path = fs::absolute(path).lexically_normal().string();
  };
  absolute(options.project_dir);
  absolute(options.out_dir);
  absolute(options.log_dir);
  if (options.python.find('/') != std::string::npos) absolute(options.python);
  for (std::string& f : options.find_links) absolute(f);
  for (auto& [major, path] : options.toolkit_paths) absolute(path);
  return options;
}
}  // namespace

std::optional<BuildResult> build_project(const BuildOptions& given, const ProgressSink& progress, Problems& problems) {
  const BuildOptions options = with_absolute_paths(given);
  const size_t before = problems.size();
  auto project = load_project_config(options.project_dir, problems);
  if (!project) return std::nullopt;
  const BuildConfig& config = project->wheelmerge;

  // Which majors: the command line's, else the configuration's, else 12 and 13.
  std::vector<int> majors = options.majors;
  if (majors.empty()) majors = config.cuda;
  if (majors.empty()) majors = {12, 13};
  std::sort(majors.begin(), majors.end());
  majors.erase(std::unique(majors.begin(), majors.end()), majors.end());
  if (majors.size() < 2)
    problems.push_back({ProblemKind::usage, {}, {}, "a build needs two or more CUDA majors", "at least 2",
                        fmt::format("{}", fmt::join(majors, ", "))});

  // The backend that builds each variant: the project's, or the inner one when the project
  // uses wheelmerge's own backend.
  std::string backend = project->build_system.backend;
  std::vector<std::string> backend_path = project->build_system.backend_path;
  std::vector<std::string> requirements = project->build_system.requirements;
  if (backend == "wheelmerge.backend") {
    backend = config.backend;
    backend_path = config.backend_path;
    if (backend.empty())
      problems.push_back({ProblemKind::usage, config.source.empty() ? options.project_dir + "/pyproject.toml" : config.source,
                          {}, "build-backend is wheelmerge.backend but no inner backend is configured",
                          "[tool.wheelmerge] backend = \"setuptools.build_meta\" (or another)", "none"});
    std::erase_if(requirements, [](const std::string& r) { return r.rfind("wheelmerge", 0) == 0; });
  }

  ToolkitHints hints;
  hints.command_line = options.toolkit_paths;
  for (const auto& [major, v] : config.variants)  // relative to the project, like backend-path
    if (!v.toolkit.empty()) hints.config[major] = (fs::path(options.project_dir) / v.toolkit).lexically_normal().string();
  hints.env = current_environment();
  std::vector<VariantJob> jobs;
  for (int major : majors) {
    if (auto t = find_toolkit(major, hints, problems)) {
      VariantJob job;
      job.build.major = major;
      job.build.label = fmt::format("cu{}", major);
      job.build.toolkit = *t;
      jobs.push_back(std::move(job));
    }
  }
  if (problems.size() != before) return std::nullopt;

  std::string tmp = fs::temp_directory_path().string() + "/wheelmerge-build-XXXXXX";
  if (!mkdtemp(tmp.data())) {
    problems.push_back({ProblemKind::other, tmp, {}, "cannot create a temporary directory", {}, std::strerror(errno)});
    return std::nullopt;
  }
  BuildResult result;
  result.log_dir = options.log_dir.empty() ? tmp + "/logs" : options.log_dir;
  fs::create_directories(result.log_dir);
  for (VariantJob& job : jobs) {
    job.work = tmp + "/" + job.build.label;
    job.build.log = result.log_dir + "/" + job.build.label + ".log";
    std::ofstream(job.build.log, std::ios::trunc);
    progress(fmt::format("[{}] CUDA {} at {} (found by {}, version from {}); log: {}", job.build.label,
                         job.build.toolkit.version, job.build.toolkit.root, job.build.toolkit.found_by,
                         job.build.toolkit.version_source, job.build.log));
  }

  std::mutex progress_lock;
  ProgressSink locked = [&](const std::string& line) {
    std::lock_guard lock(progress_lock);
    progress(line);
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) build_variant(jobs[i], *project, options, backend, backend_path, requirements, locked);
  };
  {
    std::vector<std::jthread> threads;
    for (int t = 1; t < std::max(1, std::min<int>(options.jobs, static_cast<int>(jobs.size()))); ++t) threads.emplace_back(worker);
    worker();
  }
  if (int signal = interrupted())
    problems.push_back({ProblemKind::other, options.project_dir, {}, "interrupted", {}, fmt::format("signal {}", signal)});
  else
    for (VariantJob& job : jobs) problems.insert(problems.end(), job.problems.begin(), job.problems.end());
  auto cleanup = [&] {
    std::error_code ec;
    for (VariantJob& job : jobs) fs::remove_all(job.work, ec);
    if (interrupted()) fs::remove_all(tmp, ec);  // an interrupted run leaves nothing behind
    else fs::remove(tmp, ec);                    // gone unless it holds the logs
  };
  if (problems.size() != before) {
    cleanup();
    return std::nullopt;
  }

  // The merge, with each variant's toolkit recorded for the loader's build_info().
  std::vector<WheelInput> inputs;
  MergeOptions merge = options.merge;
  merge.variant_globs.insert(merge.variant_globs.end(), config.variant_files.begin(), config.variant_files.end());
  merge.driver_fallback = merge.driver_fallback || config.driver_fallback;
  for (VariantJob& job : jobs) {
    inputs.push_back({job.build.wheel, job.build.label});
    merge.build_info[job.build.label] = {{"cuda_version", job.build.toolkit.version}};
    result.variants.push_back(job.build);
  }
  progress(fmt::format("merging {}", fmt::join(majors, " and ")));
  std::string warning;
  DosTime time = output_time_from_environment(warning);
  if (!warning.empty()) progress("warning: " + warning);
  auto merged = merge_wheels(inputs, merge, options.out_dir, time, problems);
  cleanup();
  if (!merged) return std::nullopt;
  result.merge = std::move(*merged);
  return result;
}

}  // namespace wm
