// The wheelmerge command line: the table of commands (cli/commands.hpp), the arguments every
// command shares (cli/arguments.hpp), the output and exit status (cli/output.hpp); the work is
// done by the merger library, the driver and ci/.
#include "cli/arguments.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/render.hpp"
#include "merger/base/interrupt.hpp"
#include "merger/base/problem.hpp"
#include "merger/base/text.hpp"
#include "merger/version.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

namespace wm::cli {
namespace {

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

// The app and its commands, in the order `--help` lists them; each command takes what it does
// not know as extras, refused after the parse naming the nearest option.
std::vector<Subcommand> add_commands(CLI::App& app, Output& out) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", std::string(kVersion), "print the version and exit");
  app.set_help_flag("-h,--help", "print this help and exit");  // before the commands, which copy it
  app.require_subcommand(1);
  std::vector<Subcommand> commands = {
      add_merge(app, out), add_inspect(app, out), add_variants(app, out), add_build(app, out),   add_verify(app, out),
      add_ci(app, out),    add_ci_plan(app, out), add_config(app, out),   add_toolkit(app, out), add_loader(app, out)};
  app.footer(kHelpFooter);  // after the commands, which would inherit it
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    cmd->allow_extras();
    for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; })) sub->allow_extras();
  }
  return commands;
}

// Every value is text: paths, names and labels are written into wheels, JSON and messages,
// so bytes that are not UTF-8 are refused here, naming where they were given.
std::optional<Problem> non_utf8_argument(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_valid_utf8(args[i])) continue;
    std::string where = fmt::format("argument {}", i + 1);
    if (args[i].starts_with("--") && args[i].find('=') != std::string::npos &&
        is_valid_utf8(args[i].substr(0, args[i].find('='))))
      where += ", the value of " + args[i].substr(0, args[i].find('='));
    else if (i > 0 && args[i - 1].starts_with('-') && args[i - 1].find('=') == std::string::npos)
      where += ", after " + printable(args[i - 1]);
    return Problem{ProblemKind::usage,
                   {},
                   {},
                   "invalid UTF-8 in the command line",
                   "UTF-8 text",
                   fmt::format("{}: {}", where, args[i])};
  }
  return std::nullopt;
}

// The short form: `wheelmerge a.whl b.whl` means `wheelmerge merge a.whl b.whl`, when the first
// argument is a wheel input (ends in .whl, is PATH=LABEL of one, or names a file); any other
// word is a mistyped command, and an option before any command one no command takes (`ci
// init` is one command). `args` gains "merge" where the short form is used.
std::optional<Problem> expand_short_form(CLI::App& app, std::vector<std::string>& args) {
  std::vector<std::string> listed;  // the commands --help lists (not the hidden `loader`)
  std::set<std::string> all;
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    all.insert(cmd->get_name());
    if (!cmd->get_group().empty()) listed.push_back(cmd->get_name());
  }
  if (!args.empty() && !all.count(args[0]) && !args[0].starts_with('-')) {
    const std::string path = parse_input(args[0]).path;
    std::error_code ec;
    if (path.ends_with(".whl") || args[0].ends_with(".whl") || std::filesystem::is_regular_file(path, ec)) {
      args.insert(args.begin(), "merge");
      return std::nullopt;
    }
    return Problem{ProblemKind::usage,
                   {},
                   {},
                   fmt::format("unknown command \"{}\"{}; the commands are {} (and wheel files, to merge them)",
                               args[0], did_you_mean(args[0], listed), fmt::join(listed, ", ")),
                   {},
                   {}};
  }
  if (!args.empty() && args[0].starts_with('-') && args[0] != "-h" && args[0] != "--help" && args[0] != "--version") {
    const std::string name = args[0].substr(0, args[0].find('='));
    return Problem{ProblemKind::usage,
                   {},
                   {},
                   fmt::format("unknown option {}{}; options of a command come after it (wheelmerge COMMAND --help)",
                               name, did_you_mean(name, {"--help", "--version"})),
                   {},
                   {}};
  }
  return std::nullopt;
}

// CLI11's parse of `args`: 0 when the command is to run, else the exit status of what was
// printed (help, the version, a usage error).
std::optional<int> parse(CLI::App& app, const char* program, const std::vector<std::string>& args, const Output& out) {
  std::vector<const char*> cargv = {program};
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
    out.fail({{ProblemKind::usage, {}, {}, fmt::format("{} ({} --help lists the options)", what, command), {}, {}}});
    return 2;
  }
  if (auto bad = unexpected_argument(parsed_command(app))) return out.fail({*bad});
  return std::nullopt;
}

}  // namespace

int run_command_line(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  CLI::App app{
      "wheelmerge: merge per-build wheels (CUDA majors, torch versions, CPU levels) into one that imports the right "
      "build",
      "wheelmerge"};
  Output out;
  out.color = isatty(STDERR_FILENO) && !std::getenv("NO_COLOR");
  const char* github = std::getenv("GITHUB_ACTIONS");
  out.github = github && std::string_view(github) == "true";
  const std::vector<Subcommand> commands = add_commands(app, out);
  if (auto bad = non_utf8_argument(args)) return out.fail({*bad});
  if (auto bad = expand_short_form(app, args)) {
    out.fail({*bad});
    return 2;
  }
  if (auto done = parse(app, argv[0], args, out)) return *done;
  catch_interrupts();
  // The local zone, named: with TZ unset glibc stats /etc/localtime again on every mktime(),
  // which libzip calls for each entry it reads (the output check), 0.2 s of a 70,000-entry merge.
  // The same zone, read once; children (builds) see the same zone too.
  if (!std::getenv("TZ")) ::setenv("TZ", ":/etc/localtime", 0);
  try {
    auto given = std::find_if(commands.begin(), commands.end(), [](const Subcommand& c) { return c.app->parsed(); });
    int rc = (given == commands.end() ? commands[1] : *given).run();  // exactly one is given; inspect as before
    // A run that completed despite a late signal reports its success: its output is in place.
    return rc != 0 && interrupted() ? 128 + interrupted() : rc;
  } catch (const std::exception& e) {
    return out.fail({{ProblemKind::other, {}, {}, std::string("internal error: ") + e.what(), {}, {}}});
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

}  // namespace wm::cli

int main(int argc, char** argv) {
  using namespace wm::cli;
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
