#include "cli/arguments.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

namespace wm::cli {

namespace {
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
}  // namespace

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

void add_common(CLI::App* cmd, Output& out, const std::string& quiet, const std::string& verbose,
                const std::string& json) {
  cmd->add_flag("--json", out.json, json);
  auto* q = cmd->add_flag("-q,--quiet", out.quiet, quiet);
  if (!verbose.empty()) cmd->add_flag("-v,--verbose", out.verbose, verbose)->excludes(q);
}

std::string examples(std::initializer_list<std::pair<const char*, const char*>> items) {
  std::string text = "Examples:\n";
  for (const auto& [command, what] : items) text += fmt::format("  {}\n      {}\n", command, what);
  return text;
}

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

std::string command_line_name(const CLI::App* cmd) {
  std::string words;
  for (const CLI::App* at = cmd; at && at->get_parent(); at = at->get_parent()) words = " " + at->get_name() + words;
  return "wheelmerge" + words;
}

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

CLI::App* parsed_command(CLI::App& app) {
  CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

}  // namespace wm::cli
