// Errors as values: every refusal names the file, the member, what was expected and what was
// found, and travels as data until the command line prints it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wm {

enum class ProblemKind {
  usage,          // the command line asked for something impossible (exit 2)
  invalid_input,  // an input is not a valid wheel (exit 3)
  conflict,       // inputs are valid but cannot be merged (exit 4)
  interrupted,    // SIGINT or SIGTERM arrived; nothing was left behind (exit 128 + signal)
  other,          // I/O and everything else (exit 1)
};

struct Problem {
  ProblemKind kind = ProblemKind::invalid_input;
  std::string file;    // the input or output file
  std::string member;  // the archive member, when one is concerned
  std::string what;
  std::string expected;
  std::string found;
  // `found` is a log's last lines, written by a tool wheelmerge ran: printed as lines, each
  // indented. Every other value's line breaks are input's, printed as \n like any control.
  bool found_is_log = false;
};

using Problems = std::vector<Problem>;

// The problem a run stopped by `signal` reports, at `file` (and `member`) where it stopped.
Problem interruption(std::string file, std::string member, int signal);

// `text` safe to print: valid UTF-8 kept, line breaks as \n, other control characters and
// invalid bytes as \xNN, C1 and bidirectional controls as \u{XXXX}; line breaks kept where
// `keep_lines` (a log's last lines); at most the first 4 KiB of a one-line value and the last 16 KiB
// of a multi-line one, with the whole length said.
std::string printable(std::string_view text, bool keep_lines = false);

// "FILE: MEMBER: WHAT: expected E, found F", leaving out the parts that are empty; printable.
// `expected` and `found` are noun phrases ("a RECORD row", "no such member", "\"1.0\""). A
// problem with nothing expected gives in `found` the reason itself (an error's text, "signal 15",
// a log), printed without the word: "FILE: WHAT: REASON".
std::string describe(const Problem& problem);

const char* kind_name(ProblemKind kind);

// The exit code for a set of problems: the first problem's kind decides.
int exit_code(const Problems& problems);

}  // namespace wm
