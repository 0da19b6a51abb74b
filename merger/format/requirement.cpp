#include "merger/format/requirement.hpp"

#include "merger/base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace wm {

namespace {

// --- characters ---------------------------------------------------------------------------------

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
// The separators of the pre-, post- and dev-release parts of a version.
bool is_version_sep(char c) { return c == '-' || c == '_' || c == '.'; }

// What `\b` sees as a word character. packaging matches on Unicode text, where letters beyond
// ASCII are word characters too; treating every non-ASCII byte as one changes no verdict, since
// no token the grammar allows next to a keyword or name starts or ends with one.
bool is_word_byte(char c) { return is_alnum(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }

// The length in bytes of the UTF-8 sequence starting with `lead` (1 for continuation bytes, so
// that scanning never stalls on text not yet validated).
size_t utf8_length(char lead) {
  auto b = static_cast<unsigned char>(lead);
  if (b >= 0xF0 && b <= 0xF4) return 4;
  if (b >= 0xE0) return b <= 0xEF ? 3 : 1;
  if (b >= 0xC2) return 2;
  return 1;
}

// The length of the whitespace character at `p` as Python's `\s` and str.strip() know it
// (ASCII controls 9-13 and 28-31, space, and Unicode's spaces), or 0.
size_t unicode_space_at(std::string_view s, size_t p) {
  if (p >= s.size()) return 0;
  auto b = [&](size_t k) { return p + k < s.size() ? static_cast<unsigned char>(s[p + k]) : 0u; };
  unsigned c = b(0);
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) return 1;
  if (c == 0xC2 && (b(1) == 0x85 || b(1) == 0xA0)) return 2;
  if (c == 0xE1 && b(1) == 0x9A && b(2) == 0x80) return 3;  // U+1680
  if (c == 0xE2 && b(1) == 0x80 && ((b(2) >= 0x80 && b(2) <= 0x8A) || b(2) == 0xA8 || b(2) == 0xA9 || b(2) == 0xAF))
    return 3;                                               // U+2000-200A, 2028, 2029, 202F
  if (c == 0xE2 && b(1) == 0x81 && b(2) == 0x9F) return 3;  // U+205F
  if (c == 0xE3 && b(1) == 0x80 && b(2) == 0x80) return 3;  // U+3000
  return 0;
}

size_t skip_unicode_space(std::string_view s, size_t p) {
  while (size_t n = unicode_space_at(s, p)) p += n;
  return p;
}

std::string_view strip_unicode_space(std::string_view s) {
  size_t start = skip_unicode_space(s, 0);
  size_t end = start, p = start;
  while (p < s.size()) {
    if (size_t n = unicode_space_at(s, p)) {
      p += n;
    } else {
      p += utf8_length(s[p]);
      end = p;
    }
  }
  return s.substr(start, end - start);
}

size_t skip_digits(std::string_view s, size_t p) {
  while (p < s.size() && is_digit(s[p])) ++p;
  return p;
}

// --- version specifiers -------------------------------------------------------------------------
// packaging's Specifier regex, matched as Python's `re` does (leftmost alternative first, greedy
// parts). Every part after the release is optional and nothing follows it in the pattern, so the
// first way each part can match is the one the regex takes, and the longest prefix the pattern
// matches is found in one pass without backtracking over earlier parts.

enum class SpecKind { equality, compatible, ordered };  // == !=, ~=, <= >= < >

// A word of the version grammar, case-insensitively. The `~=` branch of the pattern is not
// ASCII-only, so there Python's Unicode case folding also lets U+0130 and U+0131 stand for "i"
// and U+017F for "s".
size_t match_word(std::string_view s, size_t p, std::string_view word, bool unicode_folds) {
  for (char w : word) {
    if (p >= s.size()) return std::string_view::npos;
    if (lower(s[p]) == w) {
      ++p;
      continue;
    }
    if (unicode_folds && p + 1 < s.size()) {
      auto b0 = static_cast<unsigned char>(s[p]), b1 = static_cast<unsigned char>(s[p + 1]);
      if ((w == 'i' && b0 == 0xC4 && (b1 == 0xB0 || b1 == 0xB1)) || (w == 's' && b0 == 0xC5 && b1 == 0xBF)) {
        p += 2;
        continue;
      }
    }
    return std::string_view::npos;
  }
  return p;
}

template <size_t N>
size_t match_first_word(std::string_view s, size_t p, const std::array<std::string_view, N>& words,
                        bool unicode_folds) {
  for (std::string_view w : words)
    if (size_t end = match_word(s, p, w, unicode_folds); end != std::string_view::npos) return end;
  return std::string_view::npos;
}

// `[-_.]? WORD [-_.]? [0-9]*`, or nothing.
template <size_t N>
size_t optional_labelled_part(std::string_view s, size_t p, const std::array<std::string_view, N>& words,
                              bool unicode_folds) {
  size_t q = p < s.size() && is_version_sep(s[p]) ? p + 1 : p;
  size_t end = match_first_word(s, q, words, unicode_folds);
  if (end == std::string_view::npos) return p;
  if (end < s.size() && is_version_sep(s[end])) ++end;
  return skip_digits(s, end);
}

// The version after a specifier's operator (`\s*` included); the end of the match or npos.
size_t match_spec_version(std::string_view s, size_t p, SpecKind kind) {
  constexpr std::array<std::string_view, 8> pre{"alpha", "beta", "preview", "pre", "a", "b", "c", "rc"};
  constexpr std::array<std::string_view, 3> post{"post", "rev", "r"};
  constexpr std::array<std::string_view, 1> dev{"dev"};
  const bool folds = kind == SpecKind::compatible;
  p = skip_unicode_space(s, p);
  if (p < s.size() && lower(s[p]) == 'v') ++p;
  if (size_t e = skip_digits(s, p); e > p && e < s.size() && s[e] == '!') p = e + 1;  // epoch
  size_t e = skip_digits(s, p);
  if (e == p) return std::string_view::npos;
  p = e;
  int components = 1;
  while (p + 1 < s.size() && s[p] == '.' && is_digit(s[p + 1])) {
    p = skip_digits(s, p + 1);
    ++components;
  }
  if (kind == SpecKind::compatible && components < 2) return std::string_view::npos;
  if (kind == SpecKind::equality && s.substr(p, 2) == ".*") return p + 2;
  p = optional_labelled_part(s, p, pre, folds);
  if (p + 1 < s.size() && s[p] == '-' && is_digit(s[p + 1]))
    p = skip_digits(s, p + 1);  // the "-N" form of a post-release
  else
    p = optional_labelled_part(s, p, post, folds);
  p = optional_labelled_part(s, p, dev, folds);
  if (kind == SpecKind::equality && p + 1 < s.size() && s[p] == '+' && is_alnum(s[p + 1])) {
    p += 1;
    while (p < s.size() && is_alnum(s[p])) ++p;
    while (p + 1 < s.size() && is_version_sep(s[p]) && is_alnum(s[p + 1]))
      for (++p; p < s.size() && is_alnum(s[p]);) ++p;
  }
  return p;
}

// The end of the one specifier ("op version") the pattern matches at `p`, or npos.
size_t match_specifier(std::string_view s, size_t p) {
  std::string_view rest = s.substr(p);
  if (rest.starts_with("===")) {
    // The arbitrary-equality escape hatch: anything up to whitespace, ";" or ")".
    size_t q = skip_unicode_space(s, p + 3);
    while (q < s.size() && s[q] != ';' && s[q] != ')' && !unicode_space_at(s, q)) q += utf8_length(s[q]);
    return q;
  }
  if (rest.starts_with("==") || rest.starts_with("!=")) return match_spec_version(s, p + 2, SpecKind::equality);
  if (rest.starts_with("~=")) return match_spec_version(s, p + 2, SpecKind::compatible);
  if (rest.starts_with("<=") || rest.starts_with(">=")) return match_spec_version(s, p + 2, SpecKind::ordered);
  if (rest.starts_with("<") || rest.starts_with(">")) return match_spec_version(s, p + 1, SpecKind::ordered);
  return std::string_view::npos;
}

// One specifier as packaging's Specifier() takes it, leading and trailing whitespace already
// stripped; "op" + "version" without the whitespace between them, or nullopt when invalid.
std::optional<std::string> normalise_specifier(std::string_view piece) {
  if (match_specifier(piece, 0) != piece.size()) return std::nullopt;
  size_t op = piece.starts_with("===") ? 3 : (piece.size() >= 2 && piece[1] == '=') ? 2 : 1;
  return std::string(piece.substr(0, op)) + std::string(strip_unicode_space(piece.substr(op)));
}

// --- marker strings ---------------------------------------------------------------------------

// A \xHH, \uHHHH or \UHHHHHHHH escape's `digits` hex digits at body[i], appended to `out` as
// UTF-8; false with `why` when Python refuses it or UTF-8 cannot carry it.
bool read_hex_escape(std::string_view body, size_t& i, size_t digits, char letter, std::string& out, std::string& why) {
  if (i + digits > body.size()) {
    why = fmt::format("truncated \\{} escape", letter);
    return false;
  }
  char32_t cp = 0;
  for (size_t k = 0; k < digits; ++k) {
    char c = body[i + k];
    if (!is_hex(c)) {
      why = fmt::format("truncated \\{} escape", letter);
      return false;
    }
    cp = cp * 16 + static_cast<char32_t>(is_digit(c) ? c - '0' : lower(c) - 'a' + 10);
  }
  if (cp > 0x10FFFF) {
    why = fmt::format("\\{} escape past U+10FFFF", letter);
    return false;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) {
    why = "a surrogate escape, which UTF-8 cannot carry";
    return false;
  }
  append_utf8(out, cp);
  i += digits;
  return true;
}

// The character a one-letter escape (\n, \t, \\, \' ...) stands for; nullopt for any other.
std::optional<char> simple_escape(char e) {
  static constexpr std::string_view kFrom = "\\'\"abfnrtv", kTo = "\\'\"\a\b\f\n\r\t\v";
  size_t at = kFrom.find(e);
  return at == std::string_view::npos ? std::nullopt : std::optional<char>(kTo[at]);
}

// The escape whose letter `e` is at body[i - 1] (i just past it), appended to `out`.
bool read_escape(std::string_view body, size_t& i, char e, std::string& out, std::string& why) {
  if (auto plain = simple_escape(e)) {
    out += *plain;
    return true;
  }
  switch (e) {
    case '\n':
      return true;  // a line continuation
    case '\r':
      if (i < body.size() && body[i] == '\n') ++i;
      return true;
    case 'x':
      return read_hex_escape(body, i, 2, 'x', out, why);
    case 'u':
      return read_hex_escape(body, i, 4, 'u', out, why);
    case 'U':
      return read_hex_escape(body, i, 8, 'U', out, why);
    case 'N':
      why = "a \\N{...} escape, which is not supported";
      return false;
    case '\0':
      why = "a NUL character";
      return false;
    default:
      if (e >= '0' && e <= '7') {
        char32_t cp = static_cast<char32_t>(e - '0');
        for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k, ++i)
          cp = cp * 8 + static_cast<char32_t>(body[i] - '0');
        append_utf8(out, cp);
      } else {
        out += '\\';  // an unknown escape keeps its backslash
        i -= 1;       // and the character after it is read as itself
      }
      return true;
  }
}

// The value of a quoted marker string as Python's ast.literal_eval reads it; nullopt with `why`
// when Python refuses it (or, for `\N{...}` and surrogates, when it cannot be represented).
std::optional<std::string> decode_python_string(std::string_view body, std::string& why) {
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size();) {
    char c = body[i];
    if (c == '\0' || c == '\n' || c == '\r') {
      why = c == '\0' ? "a NUL character" : "a line break";
      return std::nullopt;
    }
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 >= body.size()) {
      why = "a backslash escaping the closing quote";
      return std::nullopt;
    }
    char e = body[i + 1];
    i += 2;
    if (!read_escape(body, i, e, out, why)) return std::nullopt;
  }
  return out;
}

// Quoted so that packaging reads back exactly `value`.
std::string quote_value(std::string_view value) {
  bool plain = true, has_double = false, has_single = false;
  for (char c : value) {
    auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F || c == '\\') plain = false;
    has_double |= c == '"';
    has_single |= c == '\'';
  }
  if (plain && !has_double) return fmt::format("\"{}\"", value);
  if (plain && !has_single) return fmt::format("'{}'", value);
  // A quote cannot be escaped with a backslash (the tokenizer ends the string at the first
  // matching quote), but `\x22` is read as one.
  std::string out = "\"";
  for (char c : value) {
    auto b = static_cast<unsigned char>(c);
    if (c == '\\')
      out += "\\\\";
    else if (c == '"' || b < 0x20 || b == 0x7F)
      out += fmt::format("\\x{:02x}", b);
    else
      out += c;
  }
  return out + "\"";
}

// --- tree -----------------------------------------------------------------------------------------

MarkerPtr combine(MarkerExpr::Kind kind, std::vector<MarkerPtr> parts) {
  std::vector<MarkerPtr> children;
  for (auto& part : parts) {
    if (!part) continue;
    if (part->kind == kind)
      children.insert(children.end(), part->children.begin(), part->children.end());
    else
      children.push_back(std::move(part));
  }
  if (children.empty()) return nullptr;
  if (children.size() == 1) return children.front();
  auto node = std::make_shared<MarkerExpr>();
  node->kind = kind;
  node->children = std::move(children);
  return node;
}

void print_marker(const MarkerExpr& m, std::string& out, bool inside_and) {
  switch (m.kind) {
    case MarkerExpr::Kind::Compare:
      for (const MarkerOperand* side : {&m.lhs, &m.rhs}) {
        out += side->is_variable ? side->text : quote_value(side->text);
        if (side == &m.lhs) out += fmt::format(" {} ", m.op);
      }
      return;
    case MarkerExpr::Kind::And:
    case MarkerExpr::Kind::Or: {
      bool is_and = m.kind == MarkerExpr::Kind::And;
      bool parens = !is_and && inside_and;  // "or" binds looser than the "and" around it
      if (parens) out += '(';
      for (size_t i = 0; i < m.children.size(); ++i) {
        if (i) out += is_and ? " and " : " or ";
        print_marker(*m.children[i], out, is_and);
      }
      if (parens) out += ')';
      return;
    }
  }
}

// --- parser -------------------------------------------------------------------------------------
// A recursive descent over the text, the same decisions at the same places as packaging's
// tokenizer and parser (_tokenizer.py, _parser.py), so that verdicts agree. Each position is
// looked at a bounded number of times, and recursion only follows marker parentheses, which are
// bounded by kMaxMarkerNesting.

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<Requirement> requirement();
  MarkerPtr full_marker();
  const std::string& error() const { return error_; }

 private:
  bool at_end() const { return p_ >= s_.size(); }
  bool peek(char c) const { return p_ < s_.size() && s_[p_] == c; }
  void skip_ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t')) ++p_;
  }
  bool boundary(size_t p) const {
    bool before = p > 0 && is_word_byte(s_[p - 1]);
    bool after = p < s_.size() && is_word_byte(s_[p]);
    return before != after;
  }
  bool keyword_at(size_t p, std::string_view word) const {
    return s_.substr(p).starts_with(word) && boundary(p) && boundary(p + word.size());
  }

  // Records the first failure; always returns false, so callers can `return fail(...)`.
  bool fail(std::string_view expected, size_t at);
  bool fail_with(std::string message, size_t at);

  std::optional<std::string_view> identifier();
  bool extras(std::vector<std::string>& out);
  bool specifiers(std::string& out);
  bool version_many(std::string& concatenated);
  bool marker_after_semicolon(MarkerPtr& out, std::string_view expected);
  MarkerPtr marker(int depth);
  MarkerPtr marker_atom(int depth);
  MarkerPtr marker_item();
  std::optional<MarkerOperand> marker_operand();
  std::optional<std::string> marker_op();

  std::string_view s_;
  size_t p_ = 0;
  std::string error_;
};

bool Parser::fail(std::string_view expected, size_t at) {
  std::string found = "end of text";
  if (at < s_.size()) {
    // A few characters of what is there, cut at a character boundary.
    size_t end = at;
    for (int chars = 0; end < s_.size() && chars < 12; ++chars) end += utf8_length(s_[end]);
    end = std::min(end, s_.size());
    found = fmt::format("'{}'{}", s_.substr(at, end - at), end < s_.size() ? "..." : "");
  }
  return fail_with(fmt::format("expected {}, found {}", expected, found), at);
}

bool Parser::fail_with(std::string message, size_t at) {
  if (!error_.empty()) return false;
  size_t column = 1;
  for (size_t i = 0; i < at && i < s_.size(); i += utf8_length(s_[i])) ++column;
  error_ = fmt::format("column {}: {}", column, message);
  return false;
}

// `\b[a-zA-Z0-9][a-zA-Z0-9._-]*\b`: a name or extra. The greedy run gives back its trailing
// characters until a word boundary follows, as the regex does ("foo-" is the name "foo").
std::optional<std::string_view> Parser::identifier() {
  if (at_end() || !is_alnum(s_[p_]) || !boundary(p_)) return std::nullopt;
  size_t end = p_ + 1;
  while (end < s_.size() && (is_alnum(s_[end]) || s_[end] == '_' || s_[end] == '.' || s_[end] == '-')) ++end;
  for (; end > p_; --end) {
    if (boundary(end)) {
      std::string_view id = s_.substr(p_, end - p_);
      p_ = end;
      return id;
    }
  }
  return std::nullopt;
}

bool Parser::extras(std::vector<std::string>& out) {
  if (!peek('[')) return true;
  size_t open = p_++;
  skip_ws();
  if (auto first = identifier()) {
    out.emplace_back(*first);
    for (;;) {
      skip_ws();
      if (size_t at = p_; identifier()) return fail_with("expected a comma between extra names", at);
      if (!peek(',')) break;
      ++p_;
      skip_ws();
      auto next = identifier();
      if (!next) return fail("an extra name after the comma", p_);
      out.emplace_back(*next);
    }
  }
  skip_ws();
  if (!peek(']')) return fail(fmt::format("']' closing the extras opened at column {}", open + 1), p_);
  ++p_;
  return true;
}

// `version_many`: specifiers separated by commas, concatenated as packaging concatenates them
// (a trailing comma included) before SpecifierSet splits them again.
bool Parser::version_many(std::string& concatenated) {
  for (;;) {
    size_t start = p_;
    size_t end = match_specifier(s_, p_);
    if (end == std::string_view::npos) return true;
    std::string_view spec = s_.substr(start, end - start);
    concatenated += spec;
    p_ = end;
    if (s_.substr(p_).starts_with(".*")) {
      bool equality = spec.starts_with("!=") || (spec.starts_with("==") && !spec.starts_with("==="));
      return fail_with(equality ? "a .* suffix cannot follow a pre-, post-, dev- or local version"
                                : "a .* suffix can only follow == or !=",
                       start);
    }
    if (p_ + 1 < s_.size() && s_[p_] == '+' && ((s_[p_ + 1] >= 'a' && s_[p_ + 1] <= 'z') || is_digit(s_[p_ + 1])))
      return fail_with("a local version label can only follow == or !=", start);
    skip_ws();
    if (!peek(',')) return true;
    concatenated += ',';
    ++p_;
    skip_ws();
  }
}

bool Parser::specifiers(std::string& out) {
  size_t open = std::string_view::npos;
  if (peek('(')) open = p_++;
  skip_ws();
  size_t start = p_;
  std::string concatenated;
  if (!version_many(concatenated)) return false;
  skip_ws();
  if (open != std::string_view::npos) {
    if (!peek(')')) return fail(fmt::format("')' closing the version specifier opened at column {}", open + 1), p_);
    ++p_;
  }
  // SpecifierSet: split at commas, pieces stripped, empty ones dropped, each one validated.
  for (size_t from = 0; from <= concatenated.size();) {
    size_t comma = concatenated.find(',', from);
    if (comma == std::string::npos) comma = concatenated.size();
    std::string_view piece = strip_unicode_space(std::string_view(concatenated).substr(from, comma - from));
    from = comma + 1;
    if (piece.empty()) continue;
    auto normal = normalise_specifier(piece);
    if (!normal) return fail_with(fmt::format("invalid version specifier '{}'", piece), start);
    if (!out.empty()) out += ',';
    out += *normal;
  }
  return true;
}

bool Parser::marker_after_semicolon(MarkerPtr& out, std::string_view expected) {
  if (!peek(';')) return fail(fmt::format("{} or end of text", expected), p_);
  ++p_;
  out = marker(0);
  if (!out) return false;
  skip_ws();
  return true;
}

std::optional<Requirement> Parser::requirement() {
  Requirement r;
  skip_ws();
  auto name = identifier();
  if (!name) {
    fail("a package name", p_);
    return std::nullopt;
  }
  r.name = *name;
  skip_ws();
  if (!extras(r.extras)) return std::nullopt;
  skip_ws();
  if (peek('@')) {
    ++p_;
    skip_ws();
    size_t start = p_;
    while (p_ < s_.size() && s_[p_] != ' ' && s_[p_] != '\t') ++p_;
    if (p_ == start) {
      fail("a URL after '@'", p_);
      return std::nullopt;
    }
    r.url = s_.substr(start, p_ - start);
    if (!at_end()) {
      // A ";" right after the URL belongs to it; a marker needs whitespace before its ";".
      skip_ws();
      if (!at_end() && !marker_after_semicolon(r.marker, "';' (after the URL and whitespace)")) return std::nullopt;
    }
  } else {
    size_t start = p_;
    if (!specifiers(r.specifier)) return std::nullopt;
    skip_ws();
    if (!at_end() &&
        !marker_after_semicolon(r.marker, r.specifier.empty() && start == p_ ? "a version specifier, '@', ';'"
                                                                             : "',' (between version specifiers), ';'"))
      return std::nullopt;
  }
  if (!at_end()) {
    fail("end of text", p_);
    return std::nullopt;
  }
  return r;
}

MarkerPtr Parser::full_marker() {
  MarkerPtr m = marker(0);
  if (m && !at_end()) {
    fail("'and', 'or' or end of text", p_);
    return nullptr;
  }
  return m;
}

// marker = marker_atom (("and" | "or") marker_atom)*, "and" binding tighter.
MarkerPtr Parser::marker(int depth) {
  std::vector<MarkerPtr> any_of, all_of;
  MarkerPtr atom = marker_atom(depth);
  if (!atom) return nullptr;
  all_of.push_back(std::move(atom));
  for (;;) {
    bool is_and = keyword_at(p_, "and");
    if (!is_and && !keyword_at(p_, "or")) break;
    p_ += is_and ? 3 : 2;
    atom = marker_atom(depth);
    if (!atom) return nullptr;
    if (!is_and) {
      any_of.push_back(combine(MarkerExpr::Kind::And, std::move(all_of)));
      all_of.clear();
    }
    all_of.push_back(std::move(atom));
  }
  any_of.push_back(combine(MarkerExpr::Kind::And, std::move(all_of)));
  return combine(MarkerExpr::Kind::Or, std::move(any_of));
}

MarkerPtr Parser::marker_atom(int depth) {
  skip_ws();
  MarkerPtr m;
  if (peek('(')) {
    size_t open = p_;
    if (depth >= kMaxMarkerNesting) {
      fail_with(fmt::format("marker parentheses nested deeper than {}", kMaxMarkerNesting), open);
      return nullptr;
    }
    ++p_;
    skip_ws();
    m = marker(depth + 1);
    if (!m) return nullptr;
    skip_ws();
    if (!peek(')')) {
      fail(fmt::format("')' closing the marker group opened at column {}, or 'and'/'or'", open + 1), p_);
      return nullptr;
    }
    ++p_;
  } else {
    m = marker_item();
    if (!m) return nullptr;
  }
  skip_ws();
  return m;
}

MarkerPtr Parser::marker_item() {
  skip_ws();
  const size_t at = p_;
  auto lhs = marker_operand();
  if (!lhs) return nullptr;
  skip_ws();
  auto op = marker_op();
  if (!op) return nullptr;
  skip_ws();
  auto rhs = marker_operand();
  if (!rhs) return nullptr;
  skip_ws();
  // Comparisons packaging parses but cannot evaluate: pip evaluates every marker of a wheel it
  // installs (even with --no-deps) and stops with a traceback on these.
  for (const MarkerOperand* side : {&*lhs, &*rhs}) {
    if (side->is_variable && (side->text == "extras" || side->text == "dependency_groups")) {
      fail_with(fmt::format("the marker variable {} is defined only for lock files; pip cannot evaluate it in a "
                            "wheel's requirements",
                            side->text),
                at);
      return nullptr;
    }
  }
  if (!lhs->is_variable && !rhs->is_variable) {
    fail_with("a marker comparing two quoted strings: pip cannot evaluate it (it looks the right one up as a variable)",
              at);
    return nullptr;
  }
  // "~=" and "===" are defined only as version specifiers (packaging 26.3's _eval_op): on a
  // variable packaging compares as a version (its MARKERS_REQUIRING_VERSION; the variable on the
  // left, else the one on the right), with op + the right side a valid specifier. That right
  // side is the literal (packaging's specifier pattern allows whitespace around it), or, with a
  // variable on the left, the right variable's *name*; with a
  // literal on the left, the environment's value of the variable on the right (a version for
  // python_version, python_full_version, implementation_version; not always for
  // platform_release, which only "===" takes). Anything else pip stops on (UndefinedComparison).
  if (*op == "~=" || *op == "===") {
    auto version_key = [](std::string_view v) {
      return v == "python_version" || v == "python_full_version" || v == "implementation_version" ||
             v == "platform_release";
    };
    const MarkerOperand& variable = lhs->is_variable ? *lhs : *rhs;
    bool defined = version_key(variable.text) &&
                   (lhs->is_variable ? normalise_specifier(strip_unicode_space(*op + rhs->text)).has_value()
                                     : *op == "===" || variable.text != "platform_release");
    if (!defined) {
      fail_with(fmt::format("'{}' on {}{}: pip cannot evaluate it (packaging defines '{}' only between a version "
                            "variable and a valid specifier)",
                            *op, variable.text,
                            version_key(variable.text) ? " with no valid specifier" : ", which is no version", *op),
                at);
      return nullptr;
    }
  }
  auto node = std::make_shared<MarkerExpr>();
  node->kind = MarkerExpr::Kind::Compare;
  node->lhs = std::move(*lhs);
  node->op = std::move(*op);
  node->rhs = std::move(*rhs);
  return node;
}

std::optional<MarkerOperand> Parser::marker_operand() {
  // The variables packaging knows, each with the spelling it prints.
  static constexpr std::pair<std::string_view, std::string_view> kVariables[] = {
      {"python_version", "python_version"},
      {"python_full_version", "python_full_version"},
      {"os_name", "os_name"},
      {"os.name", "os_name"},
      {"sys_platform", "sys_platform"},
      {"sys.platform", "sys_platform"},
      {"platform_release", "platform_release"},
      {"platform_system", "platform_system"},
      {"platform_version", "platform_version"},
      {"platform.version", "platform_version"},
      {"platform_machine", "platform_machine"},
      {"platform.machine", "platform_machine"},
      {"platform_python_implementation", "platform_python_implementation"},
      {"platform.python_implementation", "platform_python_implementation"},
      {"python_implementation", "platform_python_implementation"},
      {"implementation_name", "implementation_name"},
      {"implementation_version", "implementation_version"},
      {"extras", "extras"},
      {"extra", "extra"},
      {"dependency_groups", "dependency_groups"},
  };
  for (auto [spelling, name] : kVariables) {
    if (keyword_at(p_, spelling)) {
      p_ += spelling.size();
      return MarkerOperand{true, std::string(name)};
    }
  }
  if (peek('\'') || peek('"')) {
    size_t close = s_.find(s_[p_], p_ + 1);
    if (close != std::string_view::npos) {
      std::string why;
      auto value = decode_python_string(s_.substr(p_ + 1, close - p_ - 1), why);
      if (!value) {
        fail_with(fmt::format("invalid quoted string: {}", why), p_);
        return std::nullopt;
      }
      p_ = close + 1;
      return MarkerOperand{false, std::move(*value)};
    }
  }
  fail("a marker variable or a quoted string", p_);
  return std::nullopt;
}

std::optional<std::string> Parser::marker_op() {
  if (keyword_at(p_, "in")) {
    p_ += 2;
    return "in";
  }
  if (keyword_at(p_, "not")) {
    p_ += 3;
    if (!peek(' ') && !peek('\t')) {
      fail("whitespace after 'not'", p_);
      return std::nullopt;
    }
    skip_ws();
    if (!keyword_at(p_, "in")) {
      fail("'in' after 'not'", p_);
      return std::nullopt;
    }
    p_ += 2;
    return "not in";
  }
  for (std::string_view op : {"===", "==", "~=", "!=", "<=", ">=", "<", ">"}) {
    if (s_.substr(p_).starts_with(op)) {
      p_ += op.size();
      return std::string(op);
    }
  }
  fail("a marker operator (<, <=, !=, ==, >=, >, ~=, ===, in, not in)", p_);
  return std::nullopt;
}

// The checks on the whole text before any parsing.
bool check_bounds(std::string_view text, std::string& error) {
  if (text.size() > kMaxRequirementBytes) {
    error = fmt::format("the text is {} bytes long, longer than the {} allowed", text.size(), kMaxRequirementBytes);
    return false;
  }
  if (size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    error = fmt::format("invalid UTF-8 at byte {}", bad + 1);
    return false;
  }
  return true;
}

}  // namespace

std::string Requirement::to_string() const {
  std::string out = name;
  if (!extras.empty()) {
    out += '[';
    for (size_t i = 0; i < extras.size(); ++i) out += (i ? "," : "") + extras[i];
    out += ']';
  }
  out += specifier;
  if (!url.empty()) {
    out += " @ " + url;
    if (marker) out += " ";  // without it the ";" would be read as part of the URL
  }
  if (marker) out += "; " + marker_to_string(*marker);
  return out;
}

std::optional<Requirement> parse_requirement(std::string_view text, std::string& error) {
  if (!check_bounds(text, error)) return std::nullopt;
  Parser parser(text);
  auto r = parser.requirement();
  if (!r) error = parser.error();
  return r;
}

MarkerPtr parse_marker(std::string_view text, std::string& error) {
  if (!check_bounds(text, error)) return nullptr;
  Parser parser(text);
  MarkerPtr m = parser.full_marker();
  if (!m) error = parser.error();
  return m;
}

std::string marker_to_string(const MarkerExpr& marker) {
  std::string out;
  print_marker(marker, out, false);
  return out;
}

MarkerPtr marker_compare(std::string_view variable, std::string_view op, std::string_view value) {
  auto node = std::make_shared<MarkerExpr>();
  node->kind = MarkerExpr::Kind::Compare;
  node->lhs = {true, std::string(variable)};
  node->op = op;
  node->rhs = {false, std::string(value)};
  return node;
}

MarkerPtr marker_and(MarkerPtr a, MarkerPtr b) { return combine(MarkerExpr::Kind::And, {std::move(a), std::move(b)}); }

MarkerPtr marker_or(MarkerPtr a, MarkerPtr b) { return combine(MarkerExpr::Kind::Or, {std::move(a), std::move(b)}); }

Requirement require_for_extra(Requirement r, std::string_view extra) {
  r.marker = marker_and(std::move(r.marker), marker_compare("extra", "==", extra));
  return r;
}

}  // namespace wm
