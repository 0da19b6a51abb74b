#include "merger/format/python_literal.hpp"

#include "merger/base/text.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace wm {

std::string py_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    uint32_t cp = c;
    size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (len > 1 && i + len <= s.size()) {
      cp = c & (0xff >> (len + 1));
      for (size_t k = 1; k < len; ++k) {
        auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xc0) != 0x80) {
          len = 0;
          break;
        }
        cp = (cp << 6) | (b & 0x3f);
      }
    }
    if (len <= 1) {
      cp = c;
      len = 1;
    }
    out += cp <= 0xff     ? fmt::format("\\x{:02x}", cp)
           : cp <= 0xffff ? fmt::format("\\u{:04x}", cp)
                          : fmt::format("\\U{:08x}", cp);
    i += len;
  }
  return out + "\"";
}

namespace {

std::string flat(const PyValue& v) {
  if (!v.open) return v.text;
  std::string out(1, v.open);
  for (size_t i = 0; i < v.values.size(); ++i) {
    if (i) out += ", ";
    out += v.head(i) + flat(v.values[i]);
  }
  if (v.open == '(' && v.values.size() == 1) out += ",";
  return out + (v.open == '(' ? ")" : "}");
}

std::string laid_out(const PyValue& v, size_t indent, size_t prefix, size_t suffix) {
  std::string one = flat(v);
  constexpr size_t kLineLength = 88;
  if (!v.open || v.values.empty() || indent + prefix + one.size() + suffix <= kLineLength) return one;
  std::string pad(indent + 4, ' ');
  std::string out(1, v.open);
  out += "\n";
  for (size_t i = 0; i < v.values.size(); ++i) {
    std::string head = v.head(i);
    out += pad + head + laid_out(v.values[i], indent + 4, head.size(), 1) + ",\n";
  }
  return out + std::string(indent, ' ') + (v.open == '(' ? ")" : "}");
}

}  // namespace

PyValue py_strings(const std::vector<std::string>& items) {
  PyValue v;
  v.open = '(';
  for (const std::string& item : items) v.add({}, PyValue{py_string(item), {}, {}, 0});
  return v;
}

PyValue py_strings(const std::map<std::string, std::string>& map) {
  PyValue v;
  v.open = '{';
  for (const auto& [key, value] : map) v.add(py_string(key), PyValue{py_string(value), {}, {}, 0});
  return v;
}

PyValue py_strings(const std::map<std::string, std::vector<std::string>>& map) {
  PyValue v;
  v.open = '{';
  for (const auto& [key, value] : map) v.add(py_string(key), py_strings(value));
  return v;
}

std::string py_assign(std::string_view name, std::string_view annotation, const PyValue& value) {
  std::string head = std::string(name) + (annotation.empty() ? "" : ": " + std::string(annotation)) + " = ";
  return head + laid_out(value, 0, head.size(), 0) + "\n";
}

std::optional<nlohmann::json> LiteralReader::value(int depth) {
  skip_space();
  if (pos >= s_.size() || depth > 4) return std::nullopt;
  if (s_[pos] == '"') {
    auto text = string();
    return text ? std::optional<nlohmann::json>(*text) : std::nullopt;
  }
  const char open = s_[pos];
  if (open != '(' && open != '{') return std::nullopt;
  ++pos;
  nlohmann::json out = open == '(' ? nlohmann::json::array() : nlohmann::json::object();
  for (;;) {
    skip_space();
    if (expect(open == '(' ? ")" : "}")) return out;
    if (open == '(') {
      auto item = value(depth + 1);
      if (!item || !item->is_string()) return std::nullopt;
      out.push_back(std::move(*item));
    } else {
      auto key = string();
      if (!key || !expect(": ") || out.contains(*key)) return std::nullopt;
      auto item = value(depth + 1);
      if (!item) return std::nullopt;
      out[*key] = std::move(*item);
    }
    if (expect(", ")) continue;
    if (!expect(",")) {  // the last item on one line: no comma, or a one-item tuple's
      skip_space();
      if (s_.substr(pos, 1) != (open == '(' ? ")" : "}")) return std::nullopt;
    }
  }
}

std::optional<std::string> LiteralReader::string() {
  if (!expect("\"")) return std::nullopt;
  std::string out;
  while (pos < s_.size() && s_[pos] != '"' && s_[pos] != '\n') {
    char c = s_[pos++];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (expect("\\")) {
      out += '\\';
      continue;
    }
    size_t digits = expect("x") ? 2 : expect("u") ? 4 : expect("U") ? 8 : 0;
    if (digits == 0 || pos + digits > s_.size()) return std::nullopt;
    uint32_t cp = 0;
    for (size_t k = 0; k < digits; ++k) {
      char h = s_[pos++];
      int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
      if (v < 0) return std::nullopt;
      cp = cp * 16 + static_cast<uint32_t>(v);
    }
    if (cp > 0x10ffff) return std::nullopt;
    append_utf8(out, cp);
  }
  if (!expect("\"")) return std::nullopt;
  return out;
}

}  // namespace wm
