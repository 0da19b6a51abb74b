// Python literals as wheelmerge writes them into the loader (strings, tuples of strings, dicts
// of them), laid out as ruff format lays them out, and read back: only the canonical form
// written here is read, so a loader that reads as its manifest says is the one wheelmerge wrote.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

// A Python string literal Python and ruff format read back as `s`: double quotes, printable
// ASCII as it is, '"' and other characters as lower-case hex escapes (UTF-8 decoded; a byte
// that is no UTF-8 as \xNN).
std::string py_string(std::string_view s);

// A literal value as ruff format lays it out (Black's rule for literals without comments): on
// the line when it fits in 88 columns, else one item per line, each laid out the same way,
// with a trailing comma. `prefix` and `suffix` are what shares its first and last line.
struct PyValue {
  std::string text;               // a string's literal, when no items
  std::vector<std::string> keys;  // a dict's key literals, one per value; empty for a tuple
  std::vector<PyValue> values;    // the items
  char open = 0;                  // '(' or '{', 0 for a string

  void add(std::string key, PyValue value) {
    if (!key.empty()) keys.push_back(std::move(key));
    values.push_back(std::move(value));
  }
  // "KEY: " before item `i`, empty in a tuple.
  std::string head(size_t i) const { return keys.empty() ? std::string() : keys[i] + ": "; }
};

// A tuple of string literals; a dict of string literals to string literals, or to tuples of them.
PyValue py_strings(const std::vector<std::string>& items);
PyValue py_strings(const std::map<std::string, std::string>& map);
PyValue py_strings(const std::map<std::string, std::vector<std::string>>& map);  // of tuples

// `NAME: annotation = value` (no annotation when empty), laid out, with its newline.
std::string py_assign(std::string_view name, std::string_view annotation, const PyValue& value);

// Reads back the canonical literals py_assign writes, as JSON values: strings, tuples of strings
// (arrays), dicts (objects), nested four deep at most.
class LiteralReader {
 public:
  explicit LiteralReader(std::string_view s) : s_(s) {}
  size_t pos = 0;

  // Whether `text` comes next; it is then read.
  bool expect(std::string_view text) {
    if (s_.substr(pos, text.size()) != text) return false;
    pos += text.size();
    return true;
  }
  void skip_space() {
    while (pos < s_.size() && (s_[pos] == ' ' || s_[pos] == '\n')) ++pos;
  }
  // The literal that comes next, nullopt for anything py_assign does not write.
  std::optional<nlohmann::json> value(int depth = 0);

 private:
  std::optional<std::string> string();

  std::string_view s_;
};

}  // namespace wm
