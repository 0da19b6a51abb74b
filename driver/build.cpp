#include "driver/build.hpp"

#include "merger/base/parallel.hpp"

#include "merger/base/interrupt.hpp"
#include "merger/base/text.hpp"
#include "merger/format/requirement.hpp"
#include "merger/format/wheel_name.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <unistd.h>  // mkdtemp (<stdlib.h> on Linux, <unistd.h> on macOS)
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace wm {

namespace fs = std::filesystem;

extern const std::string_view kHookRunnerTemplate;

namespace {

// Run by the build's Python: what the build environment holds, as JSON in argv[1]. torch's
// version.py is read rather than torch imported (seconds, and a GPU library load).
constexpr std::string_view kProbeScript = R"(import json, sys
from importlib import metadata

def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

found = {"cuda_bindings": version("cuda-bindings"), "torch": version("torch")}
if found["torch"]:
    try:
        namespace = {}
        path = metadata.distribution("torch").locate_file("torch/version.py")
        exec(compile(open(path).read(), str(path), "exec"), namespace)
        found["torch_cuda"] = namespace.get("cuda")
    except Exception:
        import torch
        found["torch_cuda"] = torch.version.cuda
with open(sys.argv[1], "w") as out:
    json.dump({k: v for k, v in found.items() if v}, out)
)";

}  // namespace

namespace {

bool is_build_output(const fs::path& p) {
  static const std::set<std::string> kNames = {
      ".git",  ".hg",  ".svn", "build",       "dist",          "__pycache__", ".venv",      "_skbuild",
      ".eggs", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".wheelmerge"};
  std::string name = p.filename().string();
  return kNames.count(name) || (name.size() > 9 && name.ends_with(".egg-info"));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

bool copy_source_tree(const std::string& from, const std::string& to, std::string& error) {
  std::error_code ec;
  fs::create_directories(to, ec);
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (is_build_output(it->path()) && it->is_directory()) {
      it.disable_recursion_pending();
      continue;
    }
    fs::path target = fs::path(to) / fs::relative(it->path(), from);
    if (it->is_symlink())
      fs::copy_symlink(it->path(), target, ec);
    else if (it->is_directory())
      fs::create_directories(target, ec);
    else if (it->is_regular_file())
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
    if (ec) break;
  }
  if (ec) error = ec.message();
  return !ec;
}

namespace {

// Every toolkit variable names `toolkit`, and no other toolkit's nvcc stays on PATH.
void toolkit_environment(const Toolkit& toolkit, const Environment& base, Environment& env) {
  const fs::path root = toolkit.root;
  // CMake (FindCUDAToolkit, FindCUDA), meson, setuptools and torch read these.
  for (const char* var :
       {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "CUDA_BIN_PATH"})
    env[var] = toolkit.root;
  std::error_code ec;
  if (fs::exists(root / "bin" / "nvcc", ec))
    env["CUDACXX"] = (root / "bin" / "nvcc").string();
  else
    env.erase("CUDACXX");  // an inherited one would compile this variant with another toolkit
  std::string path = (root / "bin").string();
  if (auto it = base.find("PATH"); it != base.end()) {
    for (const std::string& dir : path_list(it->second)) {
      fs::path nvcc = fs::path(dir) / "nvcc";
      bool other_toolkit = fs::exists(nvcc, ec) &&
                           fs::weakly_canonical(nvcc, ec).parent_path().parent_path() != fs::weakly_canonical(root, ec);
      if (!other_toolkit) path += ":" + dir;
    }
  }
  env["PATH"] = path;
  env["WHEELMERGE_BUILD_CUDA_MAJOR"] = std::to_string(toolkit.major);
}

}  // namespace

std::string march_value(int level) { return level <= 1 ? "x86-64" : fmt::format("x86-64-v{}", level); }

Environment variant_environment(const VariantLabel& label, const Toolkit* toolkit, const BuildConfig& config,
                                const Environment& base, const std::string& python_cflags) {
  Environment env = base;
  if (toolkit) toolkit_environment(*toolkit, base, env);
  env["WHEELMERGE_BUILD_VARIANT"] = label.str();
  for (const auto& [k, v] : config.env) env[k] = v;
  const VariantConfig& own = config.variant(label);
  if (label.selector() == Selector::cpu) {
    // Appended to what the inherited environment and the shared env give (else to the
    // interpreter's flags); the variant's own setting of the variable is taken as it is.
    const std::string flag = "-march=" + march_value(label.cpu_level());
    for (const char* var : {"CFLAGS", "CXXFLAGS"}) {
      if (own.env.count(var)) continue;
      std::string& flags = env.emplace(var, python_cflags).first->second;
      flags += (flags.empty() ? "" : " ") + flag;
    }
  }
  for (const auto& [k, v] : own.env) env[k] = v;
  return env;
}

std::optional<std::string> python_cflags(const std::string& python, const Environment& env, const std::string& work_dir,
                                         std::string& error) {
  const std::string out = work_dir + "/python-cflags.txt", log = work_dir + "/python-cflags.log";
  const std::vector<std::string> argv = {
      python, "-c", "import sys, sysconfig; open(sys.argv[1], 'w').write(sysconfig.get_config_var('CFLAGS') or '')",
      out};
  int rc = run_logged(argv, env, work_dir, log, error);
  auto text = read_file(out);
  if (rc == 0 && text) return text;
  if (rc != -1) error = fmt::format("{} exited with status {}: {}", shell_quote(argv), rc, tail_lines(log, 5));
  return std::nullopt;
}

Environment variant_environment(const Toolkit& toolkit, const BuildConfig& config, const Environment& base) {
  return variant_environment(VariantLabel::cuda(toolkit.major), &toolkit, config, base);
}

namespace {

// "12.9.1" -> "12.9"; "2.10.0+cu128" -> "2.10.0" (with `parts` 3).
std::string version_prefix(std::string version, size_t parts) {
  version = version.substr(0, version.find('+'));
  size_t end = 0;
  for (size_t i = 0; i < parts && end != std::string::npos; ++i) end = version.find('.', end == 0 ? 0 : end + 1);
  return end == std::string::npos ? version : version.substr(0, end);
}

std::string probed(const nlohmann::json& probe, const char* key) {
  return probe.contains(key) && probe[key].is_string() ? probe[key].get<std::string>() : std::string();
}

}  // namespace

std::map<std::string, std::string> variant_build_info(const VariantLabel& label, const Toolkit* toolkit,
                                                      const nlohmann::json& probe) {
  std::map<std::string, std::string> info;
  if (toolkit) info["cuda_version"] = version_prefix(toolkit->version, 2);
  if (label.selector() == Selector::cpu) info["march"] = march_value(label.cpu_level());
  for (const char* key : {"cuda_bindings", "torch_cuda"})
    if (std::string v = probed(probe, key); !v.empty()) info[key] = v;
  if (std::string v = probed(probe, "torch"); !v.empty()) info["torch"] = version_prefix(v, 3);
  return info;
}

std::optional<std::string> torch_mismatch(const VariantLabel& label, const nlohmann::json& probe) {
  const std::string torch = version_prefix(probed(probe, "torch"), 3), cuda = probed(probe, "torch_cuda");
  if (torch.empty()) return "the environment has no torch";
  std::vector<std::string> tv = split(torch, '.'), cv = split(cuda, '.');
  auto number = [](const std::string& s) {
    return !s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos ? std::stoi(s) : -1;
  };
  const std::string built = cuda.empty() ? std::string("without CUDA") : "with CUDA " + cuda;
  int major = number(tv[0]), minor = tv.size() > 1 ? number(tv[1]) : -1, cuda_major = cuda.empty() ? 0 : number(cv[0]);
  if (major < 0 || minor < 0 || cuda_major < 0)
    return fmt::format("the environment has torch {} built {}, which no torch label names", torch, built);
  const VariantLabel found = VariantLabel::torch(major, minor, cuda_major, label.torch_floor());
  if (found == label) return std::nullopt;
  if (label.torch_floor() && found.cuda_major() == label.cuda_major() && major == label.torch_version().first &&
      minor >= label.torch_version().second)
    return std::nullopt;  // a floor build against a later torch of its major
  return fmt::format("the environment has torch {} built {}, whose label is {}", torch, built, found.str());
}

std::string labelled_wheel_name(const std::string& wheel_file_name, const VariantLabel& label) {
  std::string stem = wheel_file_name;
  if (stem.size() > 4 && stem.ends_with(".whl")) stem.resize(stem.size() - 4);
  return stem + "." + label.str() + ".whl";
}

namespace {
// Whether a requirement of `requirements` is on torch (the project's own choice of its torch).
bool names_torch(const std::vector<std::string>& requirements) {
  return std::any_of(requirements.begin(), requirements.end(), [](const std::string& text) {
    std::string error;
    const std::optional<Requirement> r = parse_requirement(text, error);
    return r && normalize_name(r->name) == "torch";
  });
}
}  // namespace

std::optional<std::string> label_torch_requirement(const VariantLabel& label) {
  if (label.selector() != Selector::torch) return std::nullopt;
  const auto [major, minor] = label.torch_version();
  return fmt::format("torch=={}.{}.*", major, minor);
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
  explicit VariantJob(VariantBuild build) : build(std::move(build)) {}
  VariantBuild build;
  std::string work;  // this variant's directory: src/, env/, dist/
  Problems problems;
};

// The backend that builds each variant: the project's, or the inner one when the project uses
// wheelmerge's own backend.
struct VariantBackend {
  std::string backend;
  std::vector<std::string> backend_path;
  std::vector<std::string> requirements;
};

// One variant's build: its copy of the source tree, its environment, the build requirements and
// the backend's hooks. Problems go to the job's list.
class VariantBuilder {
 public:
  VariantBuilder(VariantJob& job, const ProjectConfig& project, const BuildOptions& options,
                 const VariantBackend& backend, const ProgressSink& progress)
      : job_(job),
        b_(job.build),
        project_(project),
        options_(options),
        backend_(backend),
        progress_(progress),
        python_(options.python) {}

  void build() {
    if (!prepare() || (options_.isolation && !isolate())) return;
    // A torch label's torch is checked before any of the project's code runs (setup.py may
    // import torch to ask for more, and fail its own way on the wrong one).
    bool probed = b_.label.selector() == Selector::torch;
    if (probed && !probe_environment()) return;
    const std::string runner = job_.work + "/hook_runner.py";
    if (!write_text(runner, kHookRunnerTemplate)) return;
    // One value as a string, a repeated key as a list, as frontends pass them.
    nlohmann::json settings = nlohmann::json::object();
    for (const auto& [key, values] : options_.config_settings)
      settings[key] = values.size() == 1 ? nlohmann::json(values.front()) : nlohmann::json(values);
    if (options_.isolation) {
      auto extra = hook(runner, "get_requires_for_build_wheel", {{"config_settings", settings}});
      if (!extra) return;
      if (!extra->empty()) {
        step(fmt::format("installing what the backend asks for: {}",
                         fmt::join(extra->get<std::vector<std::string>>(), ", ")));
        if (!pip_install(extra->get<std::vector<std::string>>())) return;
        probed = false;  // what the backend brought may change what the build is made with
      }
    }
    if (!probed && !probe_environment()) return;
    step(fmt::format("building the wheel with {} {}", backend_.backend, target()));
    fs::create_directories(job_.work + "/dist");
    auto wheel = hook(runner, "build_wheel", {{"wheel_directory", job_.work + "/dist"}, {"config_settings", settings}});
    if (!wheel) return;
    b_.wheel = job_.work + "/dist/" + wheel->get<std::string>();
    b_.seconds = seconds_since(start_);
    step("built " + wheel->get<std::string>());
  }

 private:
  // A file the build's commands read, written whole or reported (a full disk, a removed
  // directory) rather than left short for a command to misread.
  bool write_text(const std::string& path, std::string_view text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (out.flush()) return true;
    fail(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    return false;
  }
  void step(const std::string& what) const {
    progress_(fmt::format("[{}] {} ({:.1f}s)", b_.label.str(), what, seconds_since(start_)));
  }
  void fail(std::string what, const std::vector<std::string>& argv = {}) {
    std::string found = argv.empty() ? std::string() : "$ " + shell_quote(argv);
    job_.problems.push_back({ProblemKind::other,
                             b_.label.str(),
                             {},
                             std::move(what),
                             {},
                             found + "\n  last lines of " + b_.log + ":\n" + tail_lines(b_.log, 25),
                             true});
  }

  // The source copy and the environment the variant's commands run in.
  bool prepare() {
    src_ = job_.work + "/src";
    std::string error;
    step("copying the source tree");
    if (!copy_source_tree(options_.project_dir, src_, error)) {
      fail("cannot copy the source tree: " + error);
      return false;
    }
    const Environment inherited = current_environment();
    std::string cflags;
    if (b_.label.selector() == Selector::cpu) {
      auto flags = python_cflags(options_.python, inherited, job_.work, error);
      if (!flags) {
        fail("cannot read the build interpreter's CFLAGS: " + error);
        return false;
      }
      cflags = *flags;
    }
    env_ = variant_environment(b_.label, b_.toolkit ? &*b_.toolkit : nullptr, project_.wheelmerge, inherited, cflags);
    // An isolated build sees its own environment only; without isolation the frontend's
    // environment is the build environment (pip's build isolation works through PYTHONPATH).
    if (options_.isolation) env_.erase("PYTHONPATH");
    // Temporary files of pip and the backend stay inside the variant's directory, removed with it.
    fs::create_directories(job_.work + "/tmp");
    env_["TMPDIR"] = job_.work + "/tmp";
    b_.env = environment_changes(inherited, env_);
    return true;
  }

  // A virtual environment of the variant's own, with the build requirements installed.
  bool isolate() {
    step("creating an isolated build environment");
    const std::vector<std::string> make =
        uses_uv()
            ? std::vector<std::string>{options_.uv, "venv", "--quiet", "--python", options_.python, job_.work + "/env"}
            : std::vector<std::string>{options_.python, "-m", "venv", job_.work + "/env"};
    if (!run(make)) return false;
    python_ = job_.work + "/env/bin/python";
    env_["VIRTUAL_ENV"] = job_.work + "/env";
    env_["PATH"] = job_.work + "/env/bin:" + env_["PATH"];
    // The project's requirements and the variant's own pins in one resolve: both must hold
    // (`torch` and `torch==2.10.0` give 2.10.0), and no package is installed twice (a newest
    // torch first, with its CUDA libraries, then the pinned one over it).
    std::vector<std::string> requirements = backend_.requirements;
    const std::vector<std::string>& own = project_.wheelmerge.variant(b_.label).build_requires;
    requirements.insert(requirements.end(), own.begin(), own.end());
    if (auto torch = label_torch_requirement(b_.label); torch && !names_torch(requirements))
      requirements.push_back(*torch);
    step(fmt::format("installing build requirements: {}", fmt::join(requirements, ", ")));
    return pip_install(requirements);
  }

  // What the build is made for, for the progress line.
  std::string target() const {
    if (!b_.toolkit) return "for " + march_value(b_.label.cpu_level());
    return fmt::format("against CUDA {} at {}", b_.toolkit->version, b_.toolkit->root);
  }

  // What the build environment holds (torch, cuda-bindings), for build_info; a torch label's
  // build stops when its torch is not the one the label names. A torch label's is run before the
  // project's code, and again only when the backend's own requirements brought more.
  bool probe_environment() {
    const std::string script = job_.work + "/probe.py", result = job_.work + "/probe.json";
    if (!write_text(script, kProbeScript) || !run({python_, script, result})) return false;
    auto probe = nlohmann::json::parse(read_file(result).value_or(""), nullptr, false);
    if (!probe.is_object()) {
      fail("the build environment's probe did not report back");
      return false;
    }
    if (b_.label.selector() == Selector::torch) {
      if (auto wrong = torch_mismatch(b_.label, probe)) {
        job_.problems.push_back({ProblemKind::usage,
                                 b_.label.str(),
                                 {},
                                 "the build environment does not fit the label",
                                 fmt::format("{} (pin it with build-requires in [tool.wheelmerge.{}])",
                                             torch_description(b_.label), b_.label.str()),
                                 *wrong});
        return false;
      }
    }
    b_.build_info = variant_build_info(b_.label, b_.toolkit ? &*b_.toolkit : nullptr, probe);
    return true;
  }

  bool run(const std::vector<std::string>& argv) {
    if (interrupted()) return false;
    std::string error;
    int rc = run_logged(argv, env_, src_, b_.log, error);
    if (rc == -1)
      fail(error, argv);
    else if (rc != 0)
      fail(fmt::format("command failed with exit status {}", rc), argv);
    return rc == 0;
  }

  bool pip_install(const std::vector<std::string>& reqs) {
    if (reqs.empty()) return true;
    std::vector<std::string> argv =
        uses_uv() ? std::vector<std::string>{options_.uv, "pip", "install", "--python", python_}
                  : std::vector<std::string>{
                        python_, "-m", "pip", "install", "--disable-pip-version-check", "--no-warn-script-location"};
    for (const std::string& f : options_.find_links) argv.insert(argv.end(), {"--find-links", f});
    argv.insert(argv.end(), reqs.begin(), reqs.end());
    return run(argv);
  }

  bool uses_uv() const { return options_.installer == BuildOptions::Installer::uv; }

  // A PEP 517 hook run by the hook runner; what it returned, or nullopt after a problem.
  std::optional<nlohmann::json> hook(const std::string& runner, const std::string& name, const nlohmann::json& kwargs) {
    const std::string args = job_.work + "/" + name + ".args.json", result = job_.work + "/" + name + ".result.json";
    if (!write_text(args, kwargs.dump())) return std::nullopt;
    std::vector<std::string> argv = {
        python_, runner, name, backend_.backend, nlohmann::json(backend_.backend_path).dump(), args, result};
    std::string error;
    if (run_logged(argv, env_, src_, b_.log, error) == -1) {
      fail(error, argv);
      return std::nullopt;
    }
    auto j = nlohmann::json::parse(read_file(result).value_or(""), nullptr, false);
    if (j.is_discarded() || j.contains("error")) {
      fail(j.is_discarded() ? fmt::format("the {} hook did not report back", name) : j["error"].get<std::string>(),
           argv);
      return std::nullopt;
    }
    return j["return"];
  }

  VariantJob& job_;
  VariantBuild& b_;
  const ProjectConfig& project_;
  const BuildOptions& options_;
  const VariantBackend& backend_;
  const ProgressSink& progress_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::string python_;  // the interpreter that runs pip and the hooks
  std::string src_;
  Environment env_;
};

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

// The labels to build, sorted and distinct, of one selector (one is a one-build wheel, as a merge
// of one input is).
std::vector<VariantLabel> build_labels(const BuildOptions& options, const BuildConfig& config, Problems& problems) {
  std::vector<VariantLabel> labels = chosen_labels(requested_labels(options, config), config);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  // What the merge at the end would refuse, refused before minutes of builds (label_set_problems).
  const auto broken = label_set_problems(labels, " in one build");
  for (const LabelSetProblem& p : broken) problems.push_back({ProblemKind::usage, {}, {}, p.what, p.expected, p.found});
  if (!broken.empty()) return {};
  if (labels.empty())
    problems.push_back({ProblemKind::usage, {}, {}, "a build needs a variant", "at least one variant", "no variants"});
  return labels;
}

// Without isolation there is no environment of the variant's own to install build-requires into.
void check_isolation(const std::vector<VariantLabel>& labels, const BuildOptions& options, const BuildConfig& config,
                     Problems& problems) {
  if (options.isolation) return;
  for (const VariantLabel& label : labels)
    if (const VariantConfig& v = config.variant(label); !v.build_requires.empty())
      problems.push_back(
          {ProblemKind::usage,
           config.source,
           {},
           fmt::format("[tool.wheelmerge.{}] build-requires needs an isolated build", label.str()),
           "a build without --no-isolation, or no build-requires for " + label.str(),
           fmt::format("--no-isolation and build-requires = {}", nlohmann::json(v.build_requires).dump())});
}

// --installer uv runs the uv beside --python (`pip install uv` into the Python that builds),
// else the one on PATH; none is refused before any build starts.
void resolve_installer(BuildOptions& options, Problems& problems) {
  if (options.installer != BuildOptions::Installer::uv || !options.isolation) return;
  const Environment env = current_environment();
  const fs::path python_dir = fs::path(find_program(options.python, env).value_or(options.python)).parent_path();
  const fs::path beside = python_dir / options.uv;
  const std::optional<std::string> found =
      options.uv.find('/') == std::string::npos && ::access(beside.c_str(), X_OK) == 0
          ? std::optional<std::string>(beside.string())
          : find_program(options.uv, env);
  if (found && ::access(found->c_str(), X_OK) == 0) {
    options.uv = *found;
    return;
  }
  problems.push_back({ProblemKind::usage,
                      {},
                      {},
                      "--installer uv needs uv",
                      fmt::format("uv beside {} or on PATH (pip install uv)", options.python),
                      fmt::format("no executable {} in {} or on PATH", options.uv, python_dir.string())});
}

VariantBackend variant_backend(const ProjectConfig& project, const std::string& project_dir, Problems& problems) {
  const BuildConfig& config = project.wheelmerge;
  VariantBackend b{project.build_system.backend, project.build_system.backend_path, project.build_system.requirements};
  if (b.backend == "wheelmerge.backend") {
    b.backend = config.backend;
    b.backend_path = config.backend_path;
    if (b.backend.empty())
      problems.push_back({ProblemKind::usage,
                          config.source.empty() ? project_dir + "/pyproject.toml" : config.source,
                          {},
                          "build-backend is wheelmerge.backend but no inner backend is configured",
                          "[tool.wheelmerge] backend = \"setuptools.build_meta\" (or another)",
                          "no backend setting"});
    // The inner backend builds each variant and needs no wheelmerge: a requirement on it goes,
    // under the distribution's name (wheelmerge-cuda) or the command's (wheelmerge).
    std::erase_if(b.requirements, [](const std::string& text) {
      std::string error;
      const std::optional<Requirement> r = parse_requirement(text, error);
      const std::string name = r ? normalize_name(r->name) : "";
      return name == "wheelmerge_cuda" || name == "wheelmerge";
    });
  }
  return b;
}

// A job per label; for cuda and torch labels, one whose toolkit is found and a problem for each
// that is not.
std::vector<VariantJob> variant_jobs(const std::vector<VariantLabel>& labels, const BuildOptions& options,
                                     const BuildConfig& config, Problems& problems) {
  const Environment env = current_environment();
  std::vector<VariantJob> jobs;
  for (const VariantLabel& label : labels) {
    if (label.cuda_major() == 0) {  // a CPU level, or a CPU-only torch: no toolkit
      jobs.emplace_back(VariantBuild(label, std::nullopt));
      continue;
    }
    const ToolkitHints hints = toolkit_hints(options.toolkit_paths, config, options.project_dir, env, &label);
    if (auto t = find_toolkit(label.cuda_major(), hints, problems)) jobs.emplace_back(VariantBuild(label, *t));
  }
  return jobs;
}

// Each job's directory under `tmp` and its (emptied) log under the log directory.
void place_jobs(std::vector<VariantJob>& jobs, const std::string& tmp, const std::string& log_dir,
                const ProgressSink& progress) {
  fs::create_directories(log_dir);
  for (VariantJob& job : jobs) {
    const std::string& label = job.build.label.str();
    job.work = tmp + "/" + label;
    job.build.log = log_dir + "/" + label + ".log";
    std::ofstream(job.build.log, std::ios::trunc);
    if (const auto& t = job.build.toolkit)
      progress(fmt::format("[{}] CUDA {} at {} (found by {}, version from {}); log: {}", label, t->version, t->root,
                           t->found_by, t->version_source, job.build.log));
    else
      progress(fmt::format("[{}] -march={}; log: {}", label, march_value(job.build.label.cpu_level()), job.build.log));
  }
}

// Builds the jobs, up to `workers` (--jobs) at once: each is a compiler run, often parallel
// itself, and the default is one at a time. An exception in one build stops the others from
// starting and reaches the caller (`build` reports it).
void build_jobs(std::vector<VariantJob>& jobs, int workers, const ProjectConfig& project, const BuildOptions& options,
                const VariantBackend& backend, const ProgressSink& progress, const PhaseHooks& phases) {
  std::mutex progress_lock;
  ProgressSink locked = [&](const std::string& line) {
    std::lock_guard lock(progress_lock);
    progress(line);
  };
  auto begin = [&](const std::string& title) {
    if (phases.begin) phases.begin(title);
  };
  auto end = [&] {
    if (phases.end) phases.end();
  };
  const bool one_at_a_time = workers <= 1 || jobs.size() == 1;
  if (!one_at_a_time) {
    std::vector<std::string> labels;
    for (const VariantJob& job : jobs) labels.push_back(job.build.label.str());
    begin(fmt::format("build {}", fmt::join(labels, ", ")));
  }
  parallel_for(
      jobs.size(),
      [&](size_t i) {
        if (one_at_a_time) begin("build " + jobs[i].build.label.str());
        VariantBuilder(jobs[i], project, options, backend, locked).build();
        if (one_at_a_time) end();
      },
      static_cast<size_t>(std::max(1, workers)));
  if (!one_at_a_time) end();
}

// The merge options of the builds: the command line's, and the configuration's variant files and
// driver fallback.
MergeOptions merge_options(const BuildOptions& options, const BuildConfig& config) {
  MergeOptions merge = options.merge;
  merge.variant_globs.insert(merge.variant_globs.end(), config.variant_files.begin(), config.variant_files.end());
  merge.driver_fallback = merge.driver_fallback || config.driver_fallback;
  merge.runtime_requirements = merge.runtime_requirements || config.runtime_requirements;
  return merge;
}

// The merge of the built variants, with what each was built against recorded for the loader's
// build_info() (values the command line gives for a label win); with --variants, then the
// variant wheels and their index beside it.
bool merge_variants(std::vector<VariantJob>& jobs, const std::vector<VariantLabel>& labels, const BuildOptions& options,
                    const BuildConfig& config, const ProgressSink& progress, BuildResult& result, Problems& problems) {
  std::vector<WheelInput> inputs;
  MergeOptions merge = merge_options(options, config);
  for (VariantJob& job : jobs) {
    inputs.push_back({job.build.wheel, job.build.label.str()});
    std::map<std::string, std::string>& info = merge.build_info[job.build.label];
    for (const auto& [key, value] : job.build.build_info) info.emplace(key, value);
  }
  std::vector<std::string> names;
  for (const VariantLabel& label : labels) names.push_back(label.str());
  progress(fmt::format("merging {}{}", fmt::join(names, " and "),
                       options.variants ? ", and writing their variant wheels" : ""));
  std::string warning;
  DosTime time = output_time_from_environment(warning);
  if (!warning.empty()) progress("warning: " + warning);
  if (!options.variants) {
    auto merged = merge_wheels(inputs, merge, options.out_dir, time, problems);
    if (!merged) return false;
    result.merge = std::move(*merged);
    return true;
  }
  // The merged wheel and the variant wheels from one reading of the builds.
  auto variants =
      write_variants(inputs, VariantsOptions{merge, true, options.sm_arch}, options.out_dir, time, problems);
  if (!variants) return false;  // write_variants leaves nothing behind
  result.merge.output = *variants->merged;
  result.merge.plan = std::move(*variants->merged_plan);
  result.variant_wheels = std::move(*variants);
  return true;
}

// --no-merge: the builds checked as a merge checks its inputs (label, members, what each build
// links), then each written to the output directory as built, named NAME.LABEL.whl: a temporary
// file there renamed into place, so an interrupted copy leaves no wheel behind.
bool keep_builds(std::vector<VariantJob>& jobs, const BuildOptions& options, const BuildConfig& config,
                 BuildResult& result, Problems& problems) {
  const MergeOptions merge = merge_options(options, config);
  result.variant_globs = merge.variant_globs;
  result.driver_fallback = merge.driver_fallback;
  result.runtime_requirements = merge.runtime_requirements;
  std::vector<WheelInput> inputs;
  for (const VariantJob& job : jobs) inputs.push_back({job.build.wheel, job.build.label.str()});
  if (!read_inputs(inputs, merge, problems)) return false;
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  for (const VariantJob& job : jobs) {
    if (interrupted()) return false;
    const fs::path target =
        fs::path(options.out_dir) / labelled_wheel_name(fs::path(job.build.wheel).filename().string(), job.build.label);
    const fs::path partial = fs::path(options.out_dir) / ("." + target.filename().string() + ".part");
    fs::copy_file(job.build.wheel, partial, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(partial, target, ec);
    if (ec) {
      fs::remove(partial, ec);
      problems.push_back({ProblemKind::other,
                          target.string(),
                          {},
                          "cannot write the build wheel",
                          "a writable output directory",
                          ec.message()});
      return false;
    }
    result.builds.push_back(target.string());
  }
  return true;
}

}  // namespace

std::vector<VariantLabel> requested_labels(const BuildOptions& options, const BuildConfig& config) {
  std::vector<VariantLabel> given = options.labels;
  const Selector selector = given.empty() ? config.selector() : given.front().selector();
  if (selector != Selector::torch)
    for (int major : options.majors) given.push_back(VariantLabel::cuda(major));
  return given;
}

namespace {
// With --variants, each build's label must give variant properties (CUDA majors, x86-64 levels).
void check_variant_properties(const std::vector<VariantLabel>& labels, const std::string& project_dir,
                              Problems& problems) {
  for (const VariantLabel& label : labels) {
    std::string why;
    if (!variant_properties(label, why))
      problems.push_back({ProblemKind::usage,
                          project_dir,
                          {},
                          "--variants: no variant properties for a build's label",
                          "CUDA labels (cuNN) or x86-64 levels (x86_64_vN)",
                          why});
  }
}

// --cuda N=PATH names a toolkit and chooses no build: one that no build uses is said so.
void warn_unused_toolkits(const std::vector<VariantLabel>& labels, const BuildOptions& options,
                          const ProgressSink& progress) {
  for (const auto& [major, path] : options.toolkit_paths)
    if (std::none_of(labels.begin(), labels.end(), [major = major](const VariantLabel& l) {
          return l.selector() != Selector::cpu && l.cuda_major() == major;
        })) {
      std::vector<std::string> names;
      for (const VariantLabel& label : labels) names.push_back(label.str());
      progress(
          fmt::format("warning: --cuda {0}={1} names the toolkit of CUDA {0}, which none of the builds ({2}) uses; "
                      "--cuda {0} chooses it as a build",
                      major, path, fmt::join(names, ", ")));
    }
}
}  // namespace

std::optional<BuildResult> build_project(const BuildOptions& given, const ProgressSink& progress, Problems& problems,
                                         const PhaseHooks& phases) {
  BuildOptions options = with_absolute_paths(given);
  const size_t before = problems.size();
  resolve_installer(options, problems);
  auto project = load_project_config(options.project_dir, problems);
  if (!project) return std::nullopt;
  const std::vector<VariantLabel> labels = build_labels(options, project->wheelmerge, problems);
  check_isolation(labels, options, project->wheelmerge, problems);
  if (options.variants) check_variant_properties(labels, options.project_dir, problems);
  if (options.variants && !options.merge_builds)
    problems.push_back({ProblemKind::usage,
                        {},
                        {},
                        "--variants writes variant wheels from the merge's reading of the builds",
                        "--variants or --no-merge",
                        "both"});
  const VariantBackend backend = variant_backend(*project, options.project_dir, problems);
  std::vector<VariantJob> jobs = variant_jobs(labels, options, project->wheelmerge, problems);
  if (problems.size() != before) return std::nullopt;
  warn_unused_toolkits(labels, options, progress);

  std::string why;
  std::optional<std::string> made = make_temp_directory("wheelmerge-build", why);
  if (!made) {
    problems.push_back({ProblemKind::other,
                        {},
                        {},
                        "cannot create the builds' temporary directory",
                        "a writable directory (set TMPDIR to one)",
                        why});
    return std::nullopt;
  }
  const std::string tmp = *made;
  BuildResult result;
  result.log_dir = options.log_dir.empty() ? tmp + "/logs" : options.log_dir;
  place_jobs(jobs, tmp, result.log_dir, progress);
  build_jobs(jobs, options.jobs, *project, options, backend, progress, phases);
  if (int signal = interrupted())
    problems.push_back(interruption(options.project_dir, {}, signal));
  else
    for (VariantJob& job : jobs) problems.insert(problems.end(), job.problems.begin(), job.problems.end());
  // After success (or an interruption) nothing is left in the temporary directory; after a
  // failure it keeps the logs, which the problems name.
  auto cleanup = [&](bool keep_logs) {
    std::error_code ec;
    for (VariantJob& job : jobs) fs::remove_all(job.work, ec);
    if (interrupted() || !keep_logs)
      fs::remove_all(tmp, ec);
    else
      fs::remove(tmp, ec);  // gone unless it holds the logs
  };
  if (problems.size() != before) {
    cleanup(true);
    if (options.log_dir.empty() && !interrupted()) progress("the build logs are kept in " + result.log_dir);
    return std::nullopt;
  }
  for (VariantJob& job : jobs) result.variants.push_back(job.build);
  if (phases.begin) phases.begin(options.merge_builds ? "merge" : "check the builds");
  const bool merged = options.merge_builds
                          ? merge_variants(jobs, labels, options, project->wheelmerge, progress, result, problems)
                          : keep_builds(jobs, options, project->wheelmerge, result, problems);
  if (phases.end) phases.end();
  cleanup(!merged);
  if (!merged) {
    if (options.log_dir.empty() && !interrupted()) progress("the build logs are kept in " + result.log_dir);
    return std::nullopt;
  }
  if (options.log_dir.empty()) {  // removed with the temporary directory
    result.log_dir.clear();
    for (VariantBuild& v : result.variants) v.log.clear();
  }
  return result;
}

}  // namespace wm
