#include "loader.hpp"

#include <stdexcept>

namespace wm {

extern const std::string_view kLoaderTemplate;

namespace {
constexpr std::string_view kManifestLinePrefix = "_MANIFEST_JSON = r\"\"\"";
constexpr std::string_view kManifestLineSuffix = "\"\"\"";

// The [begin, end) of the manifest line's JSON in `source`.
std::optional<std::pair<size_t, size_t>> manifest_span(std::string_view source) {
  size_t at = 0;
  while ((at = source.find(kManifestLinePrefix, at)) != std::string_view::npos) {
    if (at == 0 || source[at - 1] == '\n') {
      size_t begin = at + kManifestLinePrefix.size();
      size_t end = source.find(kManifestLineSuffix, begin);
      if (end == std::string_view::npos) return std::nullopt;
      return std::make_pair(begin, end);
    }
    at += kManifestLinePrefix.size();
  }
  return std::nullopt;
}
}  // namespace

std::string render_loader(std::string_view manifest_json) {
  auto span = manifest_span(kLoaderTemplate);
  if (!span) throw std::logic_error("templates/loader.py has no _MANIFEST_JSON line");
  std::string out(kLoaderTemplate.substr(0, span->first));
  out += manifest_json;
  out += kLoaderTemplate.substr(span->second);
  return out;
}

std::optional<std::string> manifest_of_loader(std::string_view source) {
  auto span = manifest_span(source);
  if (!span) return std::nullopt;
  return std::string(source.substr(span->first, span->second - span->first));
}

namespace {

// A small scanner over the start of a Python module: enough to step over blank lines,
// comments, one docstring and `from __future__` statements.
struct Scanner {
  std::string_view s;
  size_t pos = 0;

  bool at_end() const { return pos >= s.size(); }
  void skip_spaces() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\f')) ++pos;
  }
  void skip_line() {
    size_t eol = s.find('\n', pos);
    pos = eol == std::string_view::npos ? s.size() : eol + 1;
  }
  // Steps over lines holding only whitespace or a comment.
  void skip_blank_lines() {
    for (;;) {
      size_t start = pos;
      skip_spaces();
      if (pos < s.size() && (s[pos] == '#' || s[pos] == '\n' || s[pos] == '\r')) {
        skip_line();
        continue;
      }
      pos = start;
      return;
    }
  }
  // A string literal at pos (with an optional prefix); false when there is none.
  bool skip_string(std::string& why) {
    size_t p = pos;
    while (p < s.size() && p - pos < 2 && std::string_view("rRuUbBfF").find(s[p]) != std::string_view::npos) ++p;
    if (p >= s.size() || (s[p] != '"' && s[p] != '\'')) return false;
    char q = s[p];
    bool triple = s.substr(p, 3) == std::string(3, q);
    p += triple ? 3 : 1;
    while (p < s.size()) {
      if (s[p] == '\\') {  // escapes the next character, in raw strings too
        p += 2;
        continue;
      }
      if (triple ? s.substr(p, 3) == std::string(3, q) : s[p] == q) {
        pos = p + (triple ? 3 : 1);
        return true;
      }
      if (!triple && s[p] == '\n') break;
      ++p;
    }
    why = "unterminated string literal at the start of the module";
    return false;
  }
  // Steps over one statement that may continue over lines in parentheses or after a backslash.
  void skip_statement() {
    int depth = 0;
    while (pos < s.size()) {
      char c = s[pos];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (c == '\\' && pos + 1 < s.size() && s[pos + 1] == '\n') { pos += 2; continue; }
      if (c == '#') { while (pos < s.size() && s[pos] != '\n') ++pos; continue; }
      if (c == '\n' && depth <= 0) { ++pos; return; }
      ++pos;
    }
  }
};

bool starts_future_import(std::string_view rest) {
  constexpr std::string_view kFrom = "from";
  if (rest.substr(0, kFrom.size()) != kFrom) return false;
  rest.remove_prefix(kFrom.size());
  size_t spaces = rest.find_first_not_of(" \t");
  if (spaces == 0 || spaces == std::string_view::npos) return false;
  rest.remove_prefix(spaces);
  constexpr std::string_view kFuture = "__future__";
  return rest.substr(0, kFuture.size()) == kFuture &&
         (rest.size() == kFuture.size() || rest[kFuture.size()] == ' ' || rest[kFuture.size()] == '\t');
}

}  // namespace

std::optional<std::string> inject_loader_import(std::string_view source, std::string& why) {
  Scanner sc{source};
  sc.skip_blank_lines();
  size_t statement = sc.pos;
  sc.skip_spaces();
  if (sc.pos == statement && sc.skip_string(why)) {
    sc.skip_statement();  // the rest of the docstring's line
  } else {
    if (!why.empty()) return std::nullopt;
    sc.pos = statement;
  }
  for (;;) {
    sc.skip_blank_lines();
    if (sc.at_end() || !starts_future_import(source.substr(sc.pos))) break;
    sc.skip_statement();
  }
  std::string out(source.substr(0, sc.pos));
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += kLoaderImport;
  out += source.substr(sc.pos);
  return out;
}

}  // namespace wm
