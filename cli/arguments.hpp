// The command line's pieces every command shares: wheel inputs (PATH=LABEL), options given
// once per value, --help's form, and the words of a usage error (the nearest option or
// command, "did you mean").
#pragma once

#include "cli/output.hpp"
#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"
#include "merger/merge.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wm::cli {

// A subcommand: its options, bound to arguments the runner owns, and what it runs when given.
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

// An option given once per value (`--variant-file A --variant-file B`): each takes exactly one
// value, so the input wheels after it are not taken for more of its values.
CLI::Option* repeatable(CLI::Option* option);

// PATH=LABEL, where LABEL looks like a label: short, no '/' (a path may contain '=' too).
wm::WheelInput parse_input(const std::string& arg);
std::vector<wm::WheelInput> parse_inputs(const std::vector<std::string>& args);

// A problem for each input file that cannot be opened for reading, naming it and the system's
// reason: said before anything about the inputs' names or labels.
wm::Problems unreadable_inputs(const std::vector<std::string>& paths);
wm::Problems unreadable_inputs(const std::vector<wm::WheelInput>& inputs);

// --variant values (canonical labels) into `labels`; a usage problem for the first that is no label.
std::optional<wm::Problem> take_variant_options(const std::vector<std::string>& variants,
                                                std::vector<wm::VariantLabel>& labels);

// --json and -q, which every subcommand takes, each described as it works there; -v where it
// prints more (`verbose` empty: not taken).
void add_common(CLI::App* cmd, Output& out, const std::string& quiet, const std::string& verbose = {},
                const std::string& json = "print a JSON summary on stdout");

// The examples a subcommand's --help ends with, one command line and what it does each.
std::string examples(std::initializer_list<std::pair<const char*, const char*>> items);

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

// ` (did you mean "X"?)` for the nearest of `names` to `given`, when it is near enough to be
// a typing mistake. Letters' case counts for nothing (`MERGE` is `merge` typed with caps lock).
std::string did_you_mean(const std::string& given, const std::vector<std::string>& names);

// "wheelmerge ci init" for the `init` command of `ci`: the words that name `cmd`.
std::string command_line_name(const CLI::App* cmd);

// The first argument `cmd` did not take (CLI11's extras: an option it does not have, or a word
// no positional takes), as a usage problem naming the nearest option; nullopt when none.
std::optional<wm::Problem> unexpected_argument(const CLI::App* cmd);

// The command CLI11 parsed last: the one whose arguments these were.
CLI::App* parsed_command(CLI::App& app);

}  // namespace wm::cli
