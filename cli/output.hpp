// What a command says: errors and warnings on stderr (with GitHub Actions annotations and log
// groups when GitHub reads them), problems as JSON for --json, and the exit status.
#pragma once

#include "cli/render.hpp"
#include "merger/base/problem.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"

#include <fmt/color.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace wm::cli {

// The problems as --json lists them.
nlohmann::json problem_list(const wm::Problems& problems);

// GitHub Actions workflow commands (docs.github.com, "Workflow commands for GitHub Actions"):
// the message of a command escaped as data, its properties (file=, title=) further escaped.
std::string github_data(std::string_view text);
std::string github_property(std::string_view text);

// Text printed as lines while GitHub reads them: a line that (after leading blanks, which the
// runner trims) starts with "::" would be taken as a workflow command, so it gets a backslash
// before them. Build logs shown in errors and paths given on the command line reach these lines.
std::string no_workflow_commands(const std::string& text);

// Writes `text` to stderr, whatever becomes of it: a closed or failing stderr (a full disk, a
// reader gone) loses the messages, never the run, whose outcome the exit status still tells.
void to_stderr(std::string_view text);

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

}  // namespace wm::cli
