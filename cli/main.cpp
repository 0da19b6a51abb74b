// The wheelmerge command line: arguments, output formatting and exit codes; the work is done
// by the merger library.
#include <fstream>
#include "ci/workflow.hpp"
#include "cli/render.hpp"
#include "driver/build.hpp"
#include "driver/config.hpp"
#include "driver/toolkit.hpp"
#include "merger/base/interrupt.hpp"
#include "merger/base/problem.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/manifest.hpp"
#include "merger/format/wheel_name.hpp"
#include "merger/loader.hpp"
#include "merger/merge.hpp"
#include "merger/variants.hpp"
#include "merger/verify.hpp"
#include "merger/version.hpp"

#include <fmt/color.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>

namespace {

nlohmann::json problem_list(const wm::Problems& problems) {
  nlohmann::json list = nlohmann::json::array();
  for (const wm::Problem& p : problems)
    list.push_back({{"kind", wm::kind_name(p.kind)},
                    {"file", wm::printable(p.file)},
                    {"member", wm::printable(p.member)},
                    {"what", wm::printable(p.what)},
                    {"expected", wm::printable(p.expected)},
                    {"found", wm::printable(p.found, p.found_is_log)},
                    {"message", wm::describe(p)}});
  return list;
}

// GitHub Actions workflow commands (docs.github.com, "Workflow commands for GitHub Actions"):
// the message of a command escaped as data, its properties (file=, title=) further escaped.
std::string github_data(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else
      out += c;
  }
  return out;
}

std::string github_property(std::string_view text) {
  std::string out;
  for (char c : github_data(text)) {
    if (c == ':')
      out += "%3A";
    else if (c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

// Text printed as lines while GitHub reads them: a line that (after leading blanks, which the
// runner trims) starts with "::" would be taken as a workflow command, so it gets a backslash
// before them. Build logs shown in errors and paths given on the command line reach these lines.
std::string no_workflow_commands(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line.compare(first, 2, "::") == 0) line.insert(first, "\\");
    out += line;
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

// Writes `text` to stderr, whatever becomes of it: a closed or failing stderr (a full disk, a
// reader gone) loses the messages, never the run, whose outcome the exit status still tells.
void to_stderr(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stderr) != text.size()) std::clearerr(stderr);
}

struct Output {
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  bool color = false;
  bool github = false;  // GITHUB_ACTIONS=true: errors and warnings also as workflow commands, phases as groups

  // Text for stderr: with GitHub reading it, no line of it a workflow command.
  std::string line(const std::string& text) const { return github ? no_workflow_commands(text) : text; }

  // The workflow command of an error or warning, on stderr (stdout is --json's): file= names
  // the problem's file when it has one.
  void annotate(const char* command, const std::string& file, const std::string& message) const {
    if (!github) return;
    // file= for a path; not for a variant label (a build's problems name their label there).
    std::string why;
    const bool path = !file.empty() && !wm::VariantLabel::parse(file, why);
    std::string properties =
        path ? "file=" + github_property(wm::is_valid_utf8(file) ? file : wm::printable(file)) + "," : std::string();
    to_stderr(fmt::format("::{} {}title=wheelmerge::{}\n", command, properties, github_data(message)));
  }
  // A collapsible group of the log; nothing outside GitHub. Groups do not nest.
  void begin_group(const std::string& title) const {
    if (github) to_stderr(fmt::format("::group::{}\n", github_data(wm::printable(title))));
  }
  void end_group() const {
    if (github) to_stderr("::endgroup::\n");
  }

  void error(const wm::Problem& p) const {
    annotate("error", p.file, wm::describe(p));
    if (quiet && json) return;
    std::string prefix =
        color ? fmt::format(fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, "error") : std::string("error");
    to_stderr(fmt::format("wheelmerge: {}: {}\n", prefix, line(wm::describe(p))));
  }
  void warning(const std::string& text) const {
    if (quiet) return;
    annotate("warning", {}, wm::printable(text));
    std::string prefix = color ? fmt::format(fmt::fg(fmt::terminal_color::yellow), "warning") : std::string("warning");
    to_stderr(fmt::format("wheelmerge: {}: {}\n", prefix, line(wm::printable(text))));
  }
  void info(const std::string& text) const {
    if (!quiet) to_stderr(fmt::format("{}\n", line(wm::printable(text))));
  }
  void detail(const std::string& text) const {
    if (verbose) to_stderr(fmt::format("  {}\n", line(wm::printable(text))));
  }

  int fail(const wm::Problems& problems) const {
    for (const wm::Problem& p : problems) error(p);
    if (json) {
      nlohmann::json out = {
          {"error", {{"kind", wm::kind_name(problems.front().kind)}, {"problems", problem_list(problems)}}}};
      wm::cli::print_out("{}\n", out.dump(2));
    }
    return wm::exit_code(problems);
  }
};

// An option given once per value (`--variant-file A --variant-file B`): each takes exactly one
// value, so the input wheels after it are not taken for more of its values.
CLI::Option* repeatable(CLI::Option* option) {
  return option->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

wm::WheelInput parse_input(const std::string& arg) {
  // PATH=LABEL, where LABEL looks like a label: short, no '/' (a path may contain '=' too).
  size_t eq = arg.rfind('=');
  if (eq != std::string::npos && arg.find('/', eq) == std::string::npos && arg.size() - eq - 1 <= wm::kMaxLabelLength)
    return {arg.substr(0, eq), arg.substr(eq + 1)};
  return {arg, {}};
}

std::vector<wm::WheelInput> parse_inputs(const std::vector<std::string>& args) {
  std::vector<wm::WheelInput> inputs;
  for (const std::string& a : args) inputs.push_back(parse_input(a));
  return inputs;
}

// A problem for each input file that cannot be opened for reading, naming it and the system's
// reason: said before anything about the inputs' names or labels.
wm::Problems unreadable_inputs(const std::vector<std::string>& paths) {
  wm::Problems problems;
  for (const std::string& path : paths) {
    int error = 0;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0)
      error = errno;
    else if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
      error = EISDIR;
    if (fd >= 0) ::close(fd);
    if (error)
      problems.push_back({wm::ProblemKind::usage, path, {}, "cannot read the input", {}, std::strerror(error)});
  }
  return problems;
}

wm::Problems unreadable_inputs(const std::vector<wm::WheelInput>& inputs) {
  std::vector<std::string> paths;
  for (const wm::WheelInput& input : inputs) paths.push_back(input.path);
  return unreadable_inputs(paths);
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

// --cuda values into `options`: "12" or "cu12" chooses CUDA 12 as a build, "12=PATH" only names
// the toolkit of CUDA 12 (the builds stay the configured or --variant ones); the first value
// that is neither, if any.
std::optional<std::string> take_cuda_options(const std::vector<std::string>& cuda, wm::BuildOptions& options) {
  for (const std::string& c : cuda) {
    auto option = wm::parse_cuda_option(c);
    if (!option || (option->toolkit && option->toolkit->empty())) return c;
    if (option->toolkit)
      options.toolkit_paths[option->major] = *option->toolkit;
    else
      options.majors.push_back(option->major);
  }
  // `--cuda 12=PATH --cuda 13` builds 12 and 13: once majors are chosen on the command line, a
  // major named with its toolkit is one of them. Alone, N=PATH chooses nothing.
  if (!options.majors.empty())
    for (const auto& [major, path] : options.toolkit_paths)
      if (std::find(options.majors.begin(), options.majors.end(), major) == options.majors.end())
        options.majors.push_back(major);
  return std::nullopt;
}

// --variant values (canonical labels) into `labels`; a usage problem for the first that is no label.
std::optional<wm::Problem> take_variant_options(const std::vector<std::string>& variants,
                                                std::vector<wm::VariantLabel>& labels) {
  for (const std::string& v : variants) {
    std::string why;
    auto label = wm::VariantLabel::parse(v, why);
    if (!label || label->str() != v) return wm::Problem{wm::ProblemKind::usage, {}, {}, "invalid --variant", why, v};
    labels.push_back(*label);
  }
  return std::nullopt;
}

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

int run_build(const Output& out, wm::BuildOptions& options, const std::vector<std::string>& cuda,
              const std::vector<std::string>& variants, const std::vector<std::string>& settings) {
  if (auto bad = take_cuda_options(cuda, options))
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
  // With --variants, the variant wheels' warnings hold the merged wheel's as well (each once).
  for (const std::string& w : result->variant_wheels ? result->variant_wheels->warnings : result->merge.plan.warnings)
    out.warning(w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result->variant_wheels)
    out.info(fmt::format("wrote {} variant wheels ({}) and {}", result->variant_wheels->wheels.size(),
                         fmt::join(wm::label_strings(result->variant_wheels->labels), ", "),
                         result->variant_wheels->index));
  out.info(fmt::format("wrote {} in {:.1f}s{}", result->merge.output, seconds,
                       result->log_dir.empty() ? std::string() : " (logs in " + result->log_dir + ")"));
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
  if (auto bad = take_cuda_options(cuda, options))
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

int run_verify(const Output& out, const std::vector<std::string>& paths) {
  if (auto missing = unreadable_inputs(paths); !missing.empty()) return out.fail(missing);
  nlohmann::json reports = nlohmann::json::array();
  wm::Problems all;
  for (const std::string& path : paths) {
    wm::Problems problems;
    auto report = wm::verify_wheel(path, problems);
    if (report) {
      for (const std::string& w : report->warnings) out.warning(w);
      out.info(fmt::format("{}: valid{}", path,
                           report->variants_index ? " variants index"
                           : report->merged()     ? " merged wheel"
                                                  : " wheel"));
      reports.push_back(wm::cli::to_json(*report));
    } else {
      for (const wm::Problem& p : problems) out.error(p);
      reports.push_back({{"file", path}, {"valid", false}, {"problems", problem_list(problems)}});
      all.insert(all.end(), problems.begin(), problems.end());
    }
  }
  if (out.json) wm::cli::print_out("{}\n", nlohmann::json{{"wheels", reports}}.dump(2));
  return wm::exit_code(all);
}

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
  // cuNN builds go to the workflow as CUDA majors, any other labels as labels: those given, else
  // the configuration's.
  if (labels.empty() && majors.empty() && project->wheelmerge.selector() != wm::Selector::cuda)
    labels = project->wheelmerge.labels;
  if (std::all_of(labels.begin(), labels.end(),
                  [](const wm::VariantLabel& l) { return l.selector() == wm::Selector::cuda; })) {
    for (const wm::VariantLabel& label : labels) majors.push_back(label.cuda_major());
    labels.clear();
  }
  options.labels = labels;
  if (labels.empty()) options.cuda_majors = wm::chosen_cuda_majors(majors, project->wheelmerge);
  if (options.import_name.empty()) {
    if (!project->name.empty() && !wm::is_project_name(project->name))
      return out.fail({{wm::ProblemKind::usage,
                        project_dir + "/pyproject.toml",
                        {},
                        "invalid [project] name",
                        "a PEP 508 name: ASCII letters and digits, with -, _ or . inside",
                        project->name}});
    options.import_name = wm::normalize_name(project->name);
    if (options.import_name.empty())
      return out.fail({{wm::ProblemKind::usage,
                        project_dir + "/pyproject.toml",
                        {},
                        "no import name",
                        "--import-name or a static [project] name",
                        "neither"}});
  }
  options.variant_files = project->wheelmerge.variant_files;
  options.driver_fallback = project->wheelmerge.driver_fallback;
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

int run_inspect(const Output& out, const std::string& path, bool gpu_code) {
  if (auto missing = unreadable_inputs(std::vector<std::string>{path}); !missing.empty()) return out.fail(missing);
  wm::Problems problems;
  auto report = wm::inspect_wheel(path, problems, gpu_code);
  if (!report) return out.fail(problems);
  for (const std::string& w : report->warnings) out.warning(w);
  if (out.json)
    wm::cli::print_out("{}\n", wm::cli::to_json(*report).dump(2));
  else
    wm::cli::print_text(*report);
  return 0;
}

}  // namespace

namespace {

// A subcommand: its options, bound to arguments the runner owns, and what it runs when given.
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

// --json and -q, which every subcommand takes, each described as it works there; -v where it
// prints more (`verbose` empty: not taken).
void add_common(CLI::App* cmd, Output& out, const std::string& quiet, const std::string& verbose = {},
                const std::string& json = "print a JSON summary on stdout") {
  cmd->add_flag("--json", out.json, json);
  auto* q = cmd->add_flag("-q,--quiet", out.quiet, quiet);
  if (!verbose.empty()) cmd->add_flag("-v,--verbose", out.verbose, verbose)->excludes(q);
}

// The examples a subcommand's --help ends with, one command line and what it does each.
std::string examples(std::initializer_list<std::pair<const char*, const char*>> items) {
  std::string text = "Examples:\n";
  for (const auto& [command, what] : items) text += fmt::format("  {}\n      {}\n", command, what);
  return text;
}

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

Subcommand add_inspect(CLI::App& app, Output& out) {
  auto path = std::make_shared<std::string>();
  auto* inspect = app.add_subcommand("inspect", "validate a wheel and show its variants");
  inspect->add_option("wheel", *path, "the wheel")->required();
  auto gpu_code = std::make_shared<bool>(false);
  inspect->add_flag("--gpu-code", *gpu_code,
                    "also read the GPU code of each file's CUDA fat binaries and the sm_arch values of each build");
  add_common(inspect, out, "leave out warnings (the report is printed still)", {},
             "print the report as JSON on stdout");
  inspect->footer(examples(
      {{"wheelmerge inspect dist/pkg-1.0-cp312-cp312-linux_x86_64.whl", "the wheel's tags, variants and loaders"},
       {"wheelmerge inspect --gpu-code --json dist/pkg-1.0-cp312-cp312-linux_x86_64.whl",
        "also the GPU architectures each build has code for, as JSON"}}));
  return {inspect, [&out, path, gpu_code] { return run_inspect(out, *path, *gpu_code); }};
}

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
  repeatable(
      build->add_option("--find-links", o.find_links, "a directory or URL pip may install build requirements from"));
  build->add_option("--log-dir", o.log_dir, "where each variant's log is kept");
  repeatable(
      build->add_option("--variant-file", o.merge.variant_globs, "glob of other paths that may differ per build"));
  build->add_flag("--driver-fallback", o.merge.driver_fallback, "see merge --driver-fallback");
  build->add_flag(
      "--variants", o.variants,
      "also write PEP 825 variant wheels of the builds and their {name}-{version}-variants.json (see variants)");
  build->add_flag("!--no-sm-arch", o.sm_arch, "with --variants: give no nvidia :: sm_arch property (see variants)");
  add_common(build, out, "print only errors (no progress lines)");
  build->footer(examples(
      {{"wheelmerge build", "build the project in . for each configured variant (default: CUDA 12 and 13) into dist/"},
       {"wheelmerge build --cuda 12=/usr/local/cuda-12.9 --cuda 13=/opt/cuda-13.0",
        "the same builds, naming each major's toolkit (N=PATH chooses no builds)"},
       {"wheelmerge build --cuda 13", "CUDA 13 only: a one-build wheel"}}));
  return {build, [&out, a] { return run_build(out, a->options, a->cuda, a->variants, a->settings); }};
}

Subcommand add_verify(CLI::App& app, Output& out) {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto* verify = app.add_subcommand("verify", "check wheels strictly: zip structure, names, hashes, metadata, loaders");
  verify->add_option("wheels", *paths, "the wheels")->required();
  add_common(verify, out, "print only errors (no \"valid\" lines or warnings)");
  verify->footer(
      examples({{"wheelmerge verify dist/*.whl", "check every wheel in dist/; exit status 3 if one is invalid"}}));
  return {verify, [&out, paths] { return run_verify(out, *paths); }};
}

// `ci init`, the one subcommand of `ci`.
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

// `wheelmerge loader MANIFEST.json -o DIR` (not listed in --help): writes the loader and rules
// module a merge would give a package with that manifest (the JSON of `inspect --json`'s
// loaders, docs/interfaces.md), so that they can be tested and read without a merge.
Subcommand add_loader(CLI::App& app, Output& out) {
  struct Args {
    std::string manifest, out_dir = ".";
  };
  auto a = std::make_shared<Args>();
  auto* loader = app.add_subcommand("loader", "write the loader of a manifest (for tests)")->group("");
  loader->add_option("manifest", a->manifest, "the manifest as JSON")->required();
  loader->add_option("-o,--output", a->out_dir, "the directory to write _wheelmerge.py and _wheelmerge_rules.py into");
  add_common(loader, out, "print only errors");
  return {loader, [&out, a] {
            std::ifstream in(a->manifest, std::ios::binary);
            std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            std::string why;
            auto manifest = in ? wm::LoaderManifest::parse(json, why) : std::nullopt;
            if (!manifest)
              return out.fail({{wm::ProblemKind::usage,
                                a->manifest,
                                {},
                                in ? "not a loader manifest of format 2" : "cannot read the manifest",
                                {},
                                in ? why : std::string(std::strerror(errno))}});
            if (manifest->wheelmerge.empty()) manifest->wheelmerge = std::string(wm::kVersion);
            for (const auto& [name, text] :
                 {std::pair{std::string(wm::kLoaderModule), wm::render_loader(*manifest)},
                  std::pair{std::string(wm::kRulesModule), wm::render_rules(manifest->selector, manifest->package)}}) {
              std::ofstream file(a->out_dir + "/" + name, std::ios::binary | std::ios::trunc);
              file << text;
              if (!file.flush())
                return out.fail(
                    {{wm::ProblemKind::other, a->out_dir + "/" + name, {}, "cannot write", {}, std::strerror(errno)}});
            }
            return 0;
          }};
}

// --help without the parser's internals: each option's names (no {false} of a negated flag)
// and its value's type, without defaults, exclusions or requirements between options.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    if (is_positional) return opt->get_name(true, false);
    std::vector<std::string> names;
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    return fmt::format("{}", fmt::join(names, ","));
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_expected_max() == 0) return {};
    std::string text = " " + opt->get_type_name();
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) text += " ...";
    if (opt->get_required()) text += " (required)";
    return text;
  }
};

// Levenshtein distance, for "did you mean".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// ` (did you mean "X"?)` for the nearest of `names` to `given`, when it is near enough to be
// a typing mistake. Letters' case counts for nothing (`MERGE` is `merge` typed with caps lock).
std::string did_you_mean(const std::string& given, const std::vector<std::string>& names) {
  if (given.size() <= 2) return {};  // -x: any other letter is as near
  auto folded = [](std::string text) {
    for (char& c : text) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    return text;
  };
  const std::string typed = folded(given);
  const std::string* best = nullptr;
  size_t distance = 0;
  for (const std::string& name : names)
    if (size_t d = edit_distance(typed, folded(name)); !best || d < distance) best = &name, distance = d;
  if (!best || distance > std::max<size_t>(2, given.size() / 3)) return {};
  return fmt::format(" (did you mean \"{}\"?)", *best);
}

// The long and short option names `cmd` takes, as typed.
std::vector<std::string> option_names(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd->get_options()) {
    if (opt->get_positional() && opt->get_lnames().empty() && opt->get_snames().empty()) continue;
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// "wheelmerge ci init" for the `init` command of `ci`: the words that name `cmd`.
std::string command_line_name(const CLI::App* cmd) {
  std::string words;
  for (const CLI::App* at = cmd; at && at->get_parent(); at = at->get_parent()) words = " " + at->get_name() + words;
  return "wheelmerge" + words;
}

// The first argument `cmd` did not take (CLI11's extras: an option it does not have, or a word
// no positional takes), as a usage problem naming the nearest option; nullopt when none.
std::optional<wm::Problem> unexpected_argument(const CLI::App* cmd) {
  const std::string command = command_line_name(cmd);
  // "--" ends the options (`merge -o dist -- a.whl b.whl`); CLI11 keeps it among the extras.
  const std::vector<std::string> extras = cmd->remaining();
  const auto first = std::find_if(extras.begin(), extras.end(), [](const std::string& a) { return a != "--"; });
  if (first == extras.end()) return std::nullopt;
  const std::string& arg = *first;
  std::string what;
  if (arg.size() >= 2 && arg[0] == '-') {
    const std::string name = arg.starts_with("--") ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
    what = fmt::format("unknown option {} of {}{}", name, command, did_you_mean(name, option_names(cmd)));
  } else {
    what = fmt::format("unexpected argument \"{}\" of {} ({} --help lists what it takes)", arg, command, command);
  }
  return wm::Problem{wm::ProblemKind::usage, {}, {}, what, {}, {}};
}

// The command CLI11 parsed last: the one whose arguments these were.
CLI::App* parsed_command(CLI::App& app) {
  CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

const char* kHelpFooter = R"(Examples:
  wheelmerge merge pkg-1.0-cp312-cp312-linux_x86_64.whl=cu12 other/pkg-1.0-cp312-cp312-linux_x86_64.whl=cu13
      merge two CUDA builds into dist/ (`merge` may be left out when the first input ends in .whl)
  wheelmerge build --cuda 12=/usr/local/cuda-12.9 --cuda 13=/usr/local/cuda-13.0
      build the project in . once per configured variant with those toolkits, merge into dist/
  wheelmerge verify dist/*.whl
      check wheels strictly

Output: merge, variants and build write into dist/ (created when missing) unless -o names
another directory. Errors and warnings go to stderr, each line starting "wheelmerge: error:" or
"wheelmerge: warning:"; --json puts a summary (or the problems) on stdout.

Environment:
  SOURCE_DATE_EPOCH     the timestamp of every file written into a wheel (default: 1980-01-01)
  NO_COLOR              no colour in messages (colour is used only when stderr is a terminal)
  GITHUB_ACTIONS=true   also print each error and warning as a GitHub Actions annotation
                        (::error file=...,title=wheelmerge::...) and group long phases (the
                        builds, the merge) with ::group::, on stderr
  WHEELMERGE_CUDA_N     build: the root of CUDA N's toolkit (as --cuda N=PATH)
  CUDA_HOME, CUDA_PATH  build: where a toolkit is looked for, with nvcc on PATH and
                        /usr/local/cuda-N.M (`wheelmerge toolkit` shows what is found)
  TMPDIR                build: where each variant's source copy and logs are made; nothing is
                        left there after a successful build

Exit status:
  0  success
  1  other errors (I/O, a failed build)
  2  usage: the command line asks for something impossible, or names a file that is missing
  3  an input is not a valid wheel
  4  the inputs are valid but cannot be merged
  128+N  interrupted by signal N; nothing is left behind

Documentation: https://github.com/wheelmerge/wheelmerge#readme
)";

}  // namespace

int run_command_line(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);

  CLI::App app{
      "wheelmerge: merge per-build wheels (CUDA majors, torch versions, CPU levels) into one that imports the right "
      "build",
      "wheelmerge"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", std::string(wm::kVersion), "print the version and exit");
  app.set_help_flag("-h,--help", "print this help and exit");  // before the commands, which copy it
  app.require_subcommand(1);
  Output out;
  out.color = isatty(STDERR_FILENO) && !std::getenv("NO_COLOR");
  const char* github = std::getenv("GITHUB_ACTIONS");
  out.github = github && std::string_view(github) == "true";
  // In the order `--help` lists them.
  const std::vector<Subcommand> commands = {add_merge(app, out),  add_inspect(app, out), add_variants(app, out),
                                            add_build(app, out),  add_verify(app, out),  add_ci(app, out),
                                            add_config(app, out), add_toolkit(app, out), add_loader(app, out)};
  app.footer(kHelpFooter);  // after the commands, which would inherit it
  // Arguments a command does not take are kept (CLI11's extras) and refused after the parse,
  // naming the nearest option.
  std::vector<std::string> command_names;  // those --help lists (not the hidden `loader`)
  std::set<std::string> all_commands;
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    cmd->allow_extras();
    for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; })) sub->allow_extras();
    all_commands.insert(cmd->get_name());
    if (!cmd->get_group().empty()) command_names.push_back(cmd->get_name());
  }
  auto is_command = [&](const std::string& a) { return all_commands.count(a) != 0; };

  // Every value is text: paths, names and labels are written into wheels, JSON and messages,
  // so bytes that are not UTF-8 are refused here, naming where they were given.
  for (size_t i = 0; i < args.size(); ++i) {
    if (wm::is_valid_utf8(args[i])) continue;
    std::string where = fmt::format("argument {}", i + 1);
    if (args[i].starts_with("--") && args[i].find('=') != std::string::npos &&
        wm::is_valid_utf8(args[i].substr(0, args[i].find('='))))
      where += ", the value of " + args[i].substr(0, args[i].find('='));
    else if (i > 0 && args[i - 1].starts_with('-') && args[i - 1].find('=') == std::string::npos)
      where += ", after " + wm::printable(args[i - 1]);
    return out.fail({{wm::ProblemKind::usage,
                      {},
                      {},
                      "invalid UTF-8 in the command line",
                      "UTF-8 text",
                      fmt::format("{}: {}", where, args[i])}});
  }

  // The short form: `wheelmerge a.whl b.whl` means `wheelmerge merge a.whl b.whl`, when the first
  // argument is a wheel input (ends in .whl, is PATH=LABEL of one, or names a file); any other
  // word is a mistyped command.
  if (!args.empty() && !is_command(args[0]) && !args[0].starts_with('-')) {
    const std::string path = parse_input(args[0]).path;
    std::error_code ec;
    if (path.ends_with(".whl") || args[0].ends_with(".whl") || std::filesystem::is_regular_file(path, ec)) {
      args.insert(args.begin(), "merge");
    } else {
      out.fail({{wm::ProblemKind::usage,
                 {},
                 {},
                 fmt::format("unknown command \"{}\"{}; the commands are {} (and wheel files, to merge them)", args[0],
                             did_you_mean(args[0], command_names), fmt::join(command_names, ", ")),
                 {},
                 {}}});
      return 2;
    }
  }
  // Options no command takes: at the top level, and after the command (`ci init` is one).
  if (!args.empty() && args[0].starts_with('-') && args[0] != "-h" && args[0] != "--help" && args[0] != "--version") {
    const std::string name = args[0].substr(0, args[0].find('='));
    out.fail({{wm::ProblemKind::usage,
               {},
               {},
               fmt::format("unknown option {}{}; options of a command come after it (wheelmerge COMMAND --help)", name,
                           did_you_mean(name, {"--help", "--version"})),
               {},
               {}}});
    return 2;
  }
  std::vector<const char*> cargv = {argv[0]};
  for (const std::string& a : args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An argument the command does not take says more than what it then missed.
    if (auto bad = unexpected_argument(parsed_command(app))) return out.fail({*bad});
    // CLI11's own text quotes the argument as given: printed as every message is, escaped.
    const std::string command = command_line_name(parsed_command(app));
    std::string what = e.what();
    if (what == "A subcommand is required") what = "a command is required";
    out.fail(
        {{wm::ProblemKind::usage, {}, {}, fmt::format("{} ({} --help lists the options)", what, command), {}, {}}});
    return 2;
  }
  if (auto bad = unexpected_argument(parsed_command(app))) return out.fail({*bad});
  wm::catch_interrupts();
  // The local zone, named: with TZ unset glibc stats /etc/localtime again on every mktime(),
  // which libzip calls for each entry it reads (the output check), 0.2 s of a 70,000-entry merge.
  // The same zone, read once; children (builds) see the same zone too.
  if (!std::getenv("TZ")) ::setenv("TZ", ":/etc/localtime", 0);
  try {
    auto given = std::find_if(commands.begin(), commands.end(), [](const Subcommand& c) { return c.app->parsed(); });
    int rc = (given == commands.end() ? commands[1] : *given).run();  // exactly one is given; inspect as before
    // A run that completed despite a late signal reports its success: its output is in place.
    return rc != 0 && wm::interrupted() ? 128 + wm::interrupted() : rc;
  } catch (const std::exception& e) {
    return out.fail({{wm::ProblemKind::other, {}, {}, std::string("internal error: ") + e.what(), {}, {}}});
  }
}

// Standard streams the caller closed are opened again, on /dev/null (or, with no /dev, on the
// root directory), before anything else opens a file: otherwise the first file opened (an
// output wheel) would take their number, and messages would be written into it. stdout is
// reopened read-only, so that its writes still fail and are reported; stderr writable, so
// that its messages are lost quietly; stdin readable, at its end.
void reopen_closed_standard_streams() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int opened = ::open("/dev/null", fd == STDERR_FILENO ? O_WRONLY : O_RDONLY);
    if (opened < 0) opened = ::open("/", O_RDONLY | O_DIRECTORY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

int main(int argc, char** argv) {
  reopen_closed_standard_streams();
  // A reader that goes away (`wheelmerge inspect ... | head`) is a failed write like any other,
  // reported below, rather than a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  int rc = run_command_line(argc, argv);
  // What is still buffered for stdout is written now: a full disk or a closed stdout shows here.
  if (int error = wm::cli::stdout_error()) {
    to_stderr(fmt::format("wheelmerge: error: cannot write the output to stdout: {}\n", std::strerror(error)));
    if (rc == 0) rc = 1;
  }
  return rc;
}
