#include "merger/base/problem.hpp"

#include "merger/base/interrupt.hpp"
#include "merger/base/text.hpp"

#include <fmt/format.h>

namespace wm {

namespace {
// Continuation lines of a multi-line value are indented, so that no input can start a line
// of its own (a forged "wheelmerge: ..." line).
std::string indented(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

// A message shows at most this much of any one value (an input's text can be megabytes long):
// the start of a one-line value, the end of a multi-line one (a log's last lines matter most).
constexpr size_t kMaxShown = 4096;
constexpr size_t kMaxShownLines = 16384;
}  // namespace

std::string printable(std::string_view text, bool keep_lines) {
  std::string out;
  const size_t whole = text.size();
  if (keep_lines && text.size() > kMaxShownLines) {
    text = text.substr(text.size() - kMaxShownLines);
    out = fmt::format("({} bytes in all, the last {} shown) ...", whole, kMaxShownLines);
  } else if (!keep_lines && text.size() > kMaxShown) {
    text = text.substr(0, kMaxShown);
  }
  size_t i = 0;
  auto escape = [&](uint8_t byte) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  };
  while (i < text.size()) {
    auto c = static_cast<uint8_t>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len > 1 && i + len <= text.size() && is_valid_utf8(text.substr(i, len))) {
      if (has_hidden_controls(text.substr(i, len)))
        out += code_points(text.substr(i, len));
      else
        out += text.substr(i, len);
      i += len;
    } else if (len == 1 && c >= 0x20 && c != 0x7F) {
      out += text[i++];
    } else if (len == 1 && c == '\n') {
      out += keep_lines ? "\n" : "\\n";
      ++i;
    } else {
      escape(c);
      ++i;
    }
  }
  if (!keep_lines && whole > kMaxShown) out += fmt::format("... ({} bytes in all)", whole);
  return out;
}

std::string describe(const Problem& p) {
  std::string out;
  auto add = [&](const std::string& part) {
    if (part.empty()) return;
    if (!out.empty()) out += ": ";
    out += printable(part);
  };
  add(p.file);
  add(p.member);
  add(p.what);
  if (!p.expected.empty() || !p.found.empty()) {
    // With nothing expected, `found` is the reason itself (an error's text, a signal, a log):
    // it follows `what` as it is, without the word "found".
    std::string detail;
    if (!p.expected.empty()) detail += "expected " + printable(p.expected);
    if (!p.found.empty())
      detail += (detail.empty() ? "" : ", found ") +
                (p.found_is_log ? indented(printable(p.found, true)) : printable(p.found));
    out += out.empty() ? detail : ": " + detail;
  }
  return out;
}

const char* kind_name(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::usage:
      return "usage";
    case ProblemKind::invalid_input:
      return "invalid-input";
    case ProblemKind::conflict:
      return "conflict";
    case ProblemKind::interrupted:
      return "interrupted";
    case ProblemKind::other:
      break;
  }
  return "error";
}

int exit_code(const Problems& problems) {
  if (problems.empty()) return 0;
  switch (problems.front().kind) {
    case ProblemKind::usage:
      return 2;
    case ProblemKind::invalid_input:
      return 3;
    case ProblemKind::conflict:
      return 4;
    case ProblemKind::interrupted:
      return 128 + (interrupted() ? interrupted() : 2);
    case ProblemKind::other:
      break;
  }
  return 1;
}

Problem interruption(std::string file, std::string member, int signal) {
  return {ProblemKind::interrupted,        std::move(file), std::move(member), "interrupted", {},
          fmt::format("signal {}", signal)};
}

}  // namespace wm
