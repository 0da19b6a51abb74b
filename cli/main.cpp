// The wheelmerge command line: arguments, output formatting and exit codes; the work is done
// by the merger library.
#include "merge.hpp"
#include "problem.hpp"
#include "version.hpp"

#include <CLI/CLI.hpp>
#include <fmt/color.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace {

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
    fmt::print(stderr, "wheelmerge: {}: {}\n", prefix, text);
  }
  void info(const std::string& text) const {
    if (!quiet) fmt::print(stderr, "{}\n", text);
  }
  void detail(const std::string& text) const {
    if (verbose) fmt::print(stderr, "  {}\n", text);
  }

  int fail(const wm::Problems& problems) const {
    for (const wm::Problem& p : problems) error(p);
    if (json) {
      nlohmann::json list = nlohmann::json::array();
      for (const wm::Problem& p : problems)
        list.push_back({{"kind", wm::kind_name(p.kind)}, {"file", wm::printable(p.file)},
                        {"member", wm::printable(p.member)}, {"what", wm::printable(p.what)},
                        {"expected", wm::printable(p.expected)}, {"found", wm::printable(p.found)},
                        {"message", wm::describe(p)}});
      nlohmann::json out = {{"error", {{"kind", wm::kind_name(problems.front().kind)}, {"problems", list}}}};
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
  const char* sde = std::getenv("SOURCE_DATE_EPOCH");
  if (!sde || !*sde) return {};
  char* end = nullptr;
  long long seconds = std::strtoll(sde, &end, 10);
  if (*end != '\0') {
    out.warning(fmt::format("SOURCE_DATE_EPOCH={} is not a number of seconds; using 1980-01-01", sde));
    return {};
  }
  return wm::dos_time_from_epoch(seconds);
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
  if (!args.empty() && args[0] != "merge" && args[0] != "inspect" && args[0].rfind('-', 0) != 0)
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
  try {
    if (merge->parsed()) return run_merge(out, wheels, out_dir, options);
    return run_inspect(out, inspect_path);
  } catch (const std::exception& e) {
    return out.fail({{wm::ProblemKind::other, {}, {}, std::string("internal error: ") + e.what(), {}, {}}});
  }
}
