#include "merger/format/headers.hpp"

#include <fmt/format.h>

namespace wm {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::vector<std::string> Headers::all(std::string_view key) const {
  std::vector<std::string> out;
  for (const Header& h : fields)
    if (iequals(h.key, key)) out.push_back(h.value);
  return out;
}

std::optional<std::string> Headers::one(std::string_view key) const {
  for (const Header& h : fields)
    if (iequals(h.key, key)) return h.value;
  return std::nullopt;
}

std::string Headers::to_string() const {
  std::string out;
  for (const Header& h : fields) out += h.key + ": " + h.value + "\n";
  if (!body.empty()) out += "\n" + body;
  return out;
}

std::optional<Headers> parse_headers(std::string_view text, const std::string& display_name, const std::string& member,
                                     Problems& problems) {
  Headers headers;
  size_t pos = 0;
  size_t line_no = 0;
  while (pos < text.size()) {
    // Lines end at "\r\n", "\r" or "\n", as Python's email parser (METADATA's readers) splits them.
    size_t eol = text.find_first_of("\r\n", pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? text.size() - pos : eol - pos);
    size_t next = eol == std::string_view::npos ? text.size() : text.compare(eol, 2, "\r\n") == 0 ? eol + 2 : eol + 1;
    ++line_no;
    if (line.empty()) {
      headers.body = std::string(text.substr(next));
      return headers;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (headers.fields.empty()) {
        problems.push_back({ProblemKind::invalid_input, display_name, member,
                            fmt::format("line {}: continuation line before any field", line_no), "\"Key: value\"",
                            fmt::format("\"{}\"", line)});
        return std::nullopt;
      }
      headers.fields.back().value += "\n" + std::string(line);
    } else {
      size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        problems.push_back({ProblemKind::invalid_input, display_name, member,
                            fmt::format("line {}: not a header field", line_no), "\"Key: value\"",
                            fmt::format("\"{}\"", line)});
        return std::nullopt;
      }
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      headers.fields.push_back({std::string(line.substr(0, colon)), std::string(value)});
    }
    pos = next;
  }
  return headers;
}

}  // namespace wm
