#include "merger/base/text.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace wm {

bool is_ascii_identifier(std::string_view text) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  return !text.empty() && letter(text[0]) &&
         std::all_of(text.begin(), text.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? text.size() - start : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

size_t invalid_utf8_at(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = b[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || b[i + 1] < lo || b[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (b[i + k] < 0x80 || b[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

bool is_valid_utf8(std::string_view s) { return invalid_utf8_at(s) == std::string_view::npos; }

namespace {
// U+11A7 HANGUL JUNGSEONG O-YAE. Hangul composition joins an LV syllable and a trailing consonant
// U+11A8..U+11C2 only, but utf8proc 2.8.0 also takes U+11A7 (TIndex 0) and so drops it: "\uAC00\u11A7"
// becomes "\uAC00" (fixed upstream after 2.8.0, JuliaStrings/utf8proc#317).
constexpr std::string_view kHangulOYae = "\xE1\x86\xA7";

// Valid UTF-8 `text` mapped by utf8proc with `options`; false where utf8proc fails (out of memory).
// U+11A7 has no decomposition and no case folding, and composes with nothing before or after it
// (nor can a mark be reordered across it, a starter), so the pieces between U+11A7s are mapped
// one by one and U+11A7 is kept as it is.
bool map(std::string_view text, utf8proc_option_t options, std::string& out) {
  for (size_t start = 0;;) {
    size_t end = text.find(kHangulOYae, start);
    std::string_view piece = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    utf8proc_uint8_t* mapped = nullptr;
    utf8proc_ssize_t length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(piece.data()),
                                           static_cast<utf8proc_ssize_t>(piece.size()), &mapped, options);
    if (length < 0) return false;
    std::unique_ptr<utf8proc_uint8_t, decltype(&free)> owner(mapped, &free);  // utf8proc's buffers are malloc'd
    out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(length));
    if (end == std::string_view::npos) return true;
    out += kHangulOYae;
    start = end + kHangulOYae.size();
  }
}
}  // namespace

std::string fold_case(const std::string& name) {
  if (!is_valid_utf8(name)) return name;  // not UTF-8: compared as bytes
  // NFC(toCasefold(NFD(name))), Unicode's canonical caseless match (D145). utf8proc folds each
  // character before it orders the marks, hence the NFD first: folded first, U+0345 (a mark of
  // class 240) becomes the letter U+03B9 and no longer moves past the marks of lower class that
  // follow it, so "\u0345\u0301" and its NFD "\u0301\u0345" would fold apart.
  std::string decomposed, folded;
  if (!map(name, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE), decomposed) ||
      !map(decomposed, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD), folded))
    return name;
  return folded;
}

std::string nfc(const std::string& name) {
  if (!is_valid_utf8(name)) return name;
  std::string normal;
  return map(name, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE), normal) ? normal : name;
}

bool has_hidden_controls(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<uint8_t>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > text.size()) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    if ((cp >= 0x80 && cp <= 0x9F && len == 2) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
        (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
      return true;
    i += len;
  }
  return false;
}

std::string code_points(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<uint8_t>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len <= 1 || i + len > text.size() || !is_valid_utf8(text.substr(i, len))) {
      out += (len == 1 && c >= 0x20 && c != 0x7F) ? std::string(1, text[i]) : fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    uint32_t cp = c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    out += fmt::format("\\u{{{:04x}}}", cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace wm
