#include "merger/format/python_source.hpp"

#include "merger/base/text.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>

namespace wm {

namespace {

// Placing a line after the prologue means reading the start of the module the way CPython does
// (Python/tokenizer.c; Lib/tokenize.py documents the same rules): the source encoding first,
// then tokens up to the first statement that is neither the docstring nor a `from __future__`
// import. Only that prologue is tokenized; everything after the insertion point is copied as it
// is, and the insertion point always lies just after a newline that ends a logical line at the
// module's top level, so the line put there cannot join or split any other token.

constexpr std::string_view kBom = "\xEF\xBB\xBF";
// CPython's limit on nested brackets (MAXLEVEL); deeper nesting is a SyntaxError there.
constexpr int kMaxDepth = 200;

// The length of the newline at `at` (\r\n, \r or \n), 0 when there is none.
size_t newline_at(std::string_view s, size_t at) {
  if (at >= s.size()) return 0;
  if (s[at] == '\n') return 1;
  if (s[at] == '\r') return at + 1 < s.size() && s[at + 1] == '\n' ? 2 : 1;
  return 0;
}

// The 1-based line of byte `at`, lines ending at \r\n, \r or \n as in CPython.
size_t line_of(std::string_view s, size_t at) {
  size_t line = 1;
  for (size_t i = 0; i < at && i < s.size(); ++i) {
    size_t nl = newline_at(s, i);
    if (nl == 0) continue;
    ++line;
    i += nl - 1;
  }
  return line;
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool ascii_alnum(char c) { return (c >= '0' && c <= '9') || (ascii_lower(c) >= 'a' && ascii_lower(c) <= 'z'); }

// The encoding name of a PEP 263 cookie in `line` (a line without its newline), empty when the
// line holds none: CPython's get_coding_spec, i.e. `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`.
std::string_view cookie_in(std::string_view line) {
  size_t i = line.find_first_not_of(" \t\f");
  if (i == std::string_view::npos || line[i] != '#') return {};
  for (size_t at = line.find("coding", i); at != std::string_view::npos; at = line.find("coding", at + 1)) {
    size_t p = at + 6;
    if (p >= line.size() || (line[p] != ':' && line[p] != '=')) continue;
    ++p;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    size_t begin = p;
    while (p < line.size() && (ascii_alnum(line[p]) || line[p] == '-' || line[p] == '_' || line[p] == '.')) ++p;
    if (p > begin) return line.substr(begin, p - begin);
  }
  return {};
}

// A line holding nothing but whitespace and perhaps a comment (CPython then looks for a
// cookie on the next line too).
bool blank_or_comment(std::string_view line) {
  size_t i = line.find_first_not_of(" \t\f");
  return i == std::string_view::npos || line[i] == '#';
}

enum class Encoding { utf8, ascii, latin1, other };

// What CPython decodes a file declaring `name` with. The tokenizer's get_normal_name maps
// the utf-8 and latin-1 spellings itself (only those count beside a BOM); the other names go
// through the codec registry, whose aliases are matched here for the ASCII-compatible codecs
// whose valid bytes are easy to state. Any other codec is `other`.
Encoding encoding_named(std::string_view name, bool& tokenizer_utf8) {
  std::string normal;  // get_normal_name: the first 12 characters, lower case, '_' as '-'
  for (size_t i = 0; i < name.size() && i < 12; ++i) normal += name[i] == '_' ? '-' : ascii_lower(name[i]);
  tokenizer_utf8 = normal == "utf-8" || normal.starts_with("utf-8-");
  if (tokenizer_utf8) return Encoding::utf8;
  if (normal == "latin-1" || normal == "iso-8859-1" || normal == "iso-latin-1" || normal.starts_with("latin-1-") ||
      normal.starts_with("iso-8859-1-") || normal.starts_with("iso-latin-1-"))
    return Encoding::latin1;
  std::string key;  // encodings.normalize_encoding: runs of other characters become one '_'
  bool gap = false;
  for (char c : name) {
    if (ascii_alnum(c) || c == '.') {
      if (gap && !key.empty()) key += '_';
      key += ascii_lower(c);
      gap = false;
    } else {
      gap = true;
    }
  }
  for (std::string_view alias : {"utf_8", "utf8", "u8", "utf", "cp65001"})
    if (key == alias) return Encoding::utf8;
  for (std::string_view alias : {"ascii", "us_ascii", "us", "646"})
    if (key == alias) return Encoding::ascii;
  for (std::string_view alias : {"latin_1", "latin1", "l1", "iso8859_1", "iso_8859_1", "cp819"})
    if (key == alias) return Encoding::latin1;
  return Encoding::other;
}

// Checks that CPython would read `text` (the file after any BOM) as ASCII-compatible text:
// the encoding its cookie declares (UTF-8 when none) is one of utf-8, ascii and latin-1, and
// every byte is valid in it. Refusals say why in `why`.
bool readable_encoding(std::string_view text, bool bom, std::string& why) {
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    why = "line " + std::to_string(line_of(text, nul)) + " holds a NUL byte, which Python source cannot";
    return false;
  }
  Encoding encoding = Encoding::utf8;
  size_t line_start = 0;
  for (int line = 1; line <= 2 && line_start <= text.size(); ++line) {
    size_t end = line_start;
    while (end < text.size() && newline_at(text, end) == 0) ++end;
    std::string_view content = text.substr(line_start, end - line_start);
    std::string_view name = cookie_in(content);
    if (!name.empty()) {
      bool tokenizer_utf8 = false;
      encoding = encoding_named(name, tokenizer_utf8);
      std::string cookie =
          "line " + std::to_string(line) + " declares the source encoding '" + std::string(name.substr(0, 40)) + "'";
      if (bom && !tokenizer_utf8) {
        why = cookie + ", which Python rejects after a UTF-8 byte order mark";
        return false;
      }
      if (encoding == Encoding::other) {
        why = cookie + "; only UTF-8, ASCII and Latin-1 sources can take the loader import";
        return false;
      }
      break;
    }
    if (!blank_or_comment(content) || end == text.size()) break;
    line_start = end + newline_at(text, end);
  }
  size_t bad = std::string_view::npos;
  if (encoding == Encoding::utf8) bad = invalid_utf8_at(text);
  if (encoding == Encoding::ascii) {
    for (size_t i = 0; i < text.size() && bad == std::string_view::npos; ++i)
      if (static_cast<unsigned char>(text[i]) >= 0x80) bad = i;
  }
  if (bad != std::string_view::npos) {
    why = "line " + std::to_string(line_of(text, bad)) + " holds bytes that are not valid " +
          (encoding == Encoding::ascii ? "ASCII" : "UTF-8") + ", the source's encoding";
    return false;
  }
  return true;
}

enum class Tok { name, string, lparen, rparen, semicolon, other, newline, end };
enum class StringKind { str, bytes, formatted };  // formatted: f- and t-strings

struct Token {
  Tok kind = Tok::end;
  size_t begin = 0, end = 0;  // the token's bytes; for `newline` its line ending (empty at the end of the file)
  size_t line = 0;
  StringKind string = StringKind::str;
  std::string_view text;
};

Token token(Tok kind, size_t begin, size_t end, size_t line) {
  Token t;
  t.kind = kind;
  t.begin = begin;
  t.end = end;
  t.line = line;
  return t;
}

// Tokens of a module's top level, as CPython's tokenizer makes them, for as far as the
// prologue goes: names, string literals (whose prefix tells their kind), parentheses, `;`,
// NEWLINE at the end of each logical line, and `other` for any other character. Blank lines,
// comments, backslash continuations and line endings inside parentheses are stepped over.
// An f- or t-string ends the reading: it is returned with its prefix alone (since Python 3.12
// its replacement fields may hold any string), and the caller reads no further.
class PrologueLexer {
 public:
  PrologueLexer(std::string_view s, size_t start) : s_(s), pos_(start), line_start_(start) {}

  // Where the logical line now being read began: just after the last line ending outside any
  // logical line (or the start of the module).
  size_t line_start() const { return line_start_; }
  int depth() const { return depth_; }

  // One dispatch over the next character, as CPython's tokenizer has it. What lies between tokens
  // (blanks, comments, line endings, backslash continuations) is stepped over here; each kind of
  // token is read by a step of its own.
  bool next(Token& t, std::string& why) {
    for (;;) {
      if (pos_ >= s_.size()) return end_of_file(t, why);
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\f') {
        ++pos_;
        continue;
      }
      if (c == '#') {
        while (pos_ < s_.size() && newline_at(s_, pos_) == 0) ++pos_;
        continue;
      }
      if (size_t nl = newline_at(s_, pos_)) {
        if (line_ending(t, nl)) return true;
        continue;
      }
      if (c == '\\') {
        if (!continuation(why)) return false;
        continue;
      }
      in_line_ = true;
      t = token(Tok::other, pos_, pos_ + 1, line_);
      if (c == '"' || c == '\'') return string(t, StringKind::str, why);
      if (c == '_' || ascii_alnum(c) || static_cast<unsigned char>(c) >= 0x80) return name_or_number(t, why);
      return punctuation(t, why);
    }
  }

  bool refuse(std::string& why, std::string_view what) const {
    why = "line " + std::to_string(line_) + ": " + std::string(what);
    return false;
  }

 private:
  // At the end of the file: the NEWLINE of a logical line still open, else `end`.
  bool end_of_file(Token& t, std::string& why) {
    if (depth_ > 0) return refuse(why, "a '(' is never closed before the end of the file");
    t = token(in_line_ ? Tok::newline : Tok::end, s_.size(), s_.size(), line_);
    in_line_ = false;
    return true;
  }

  // Steps over the line ending of `nl` bytes at pos_: true where it ends a logical line, a NEWLINE in `t`.
  bool line_ending(Token& t, size_t nl) {
    t = token(Tok::newline, pos_, pos_ + nl, line_);
    pos_ += nl;
    ++line_;
    if (depth_ > 0) return false;  // inside parentheses a line ending is no NEWLINE
    if (!in_line_) {               // a blank or comment line
      line_start_ = pos_;
      return false;
    }
    in_line_ = false;
    return true;
  }

  // Steps over the backslash at pos_ and the line ending it joins to the next line.
  bool continuation(std::string& why) {
    size_t nl = newline_at(s_, pos_ + 1);
    if (nl == 0) return refuse(why, "a backslash outside a string does not end the line");
    pos_ += 1 + nl;
    ++line_;
    if (pos_ >= s_.size()) return refuse(why, "a backslash continues the last line past the end of the file");
    return true;
  }

  // A name, a number, or a string with a prefix, starting at pos_; `t` is the one-character token there.
  bool name_or_number(Token& t, std::string& why) {
    if (s_[pos_] >= '0' && s_[pos_] <= '9') {  // a number: only ever the start of an ordinary statement
      ++pos_;
      t.text = s_.substr(t.begin, 1);
      return true;
    }
    size_t end = pos_;
    while (end < s_.size() && (s_[end] == '_' || ascii_alnum(s_[end]) || static_cast<unsigned char>(s_[end]) >= 0x80))
      ++end;
    std::string_view word = s_.substr(pos_, end - pos_);
    if (end < s_.size() && (s_[end] == '"' || s_[end] == '\'')) {
      if (auto kind = prefix_kind(word)) {
        pos_ = end;
        if (*kind == StringKind::formatted) {
          t.kind = Tok::string;
          t.string = *kind;
          t.end = end;
          t.text = word;
          return true;
        }
        return string(t, *kind, why);
      }
    }
    pos_ = end;
    t.kind = Tok::name;
    t.end = end;
    t.text = word;
    return true;
  }

  // The one-character token at pos_: '(', ')', ';' or `other`; `t` is that token, as `other`.
  bool punctuation(Token& t, std::string& why) {
    const char c = s_[pos_];
    ++pos_;
    t.text = s_.substr(t.begin, 1);
    if (c == '(') {
      t.kind = Tok::lparen;
      if (++depth_ > kMaxDepth) return refuse(why, "parentheses are nested deeper than Python allows");
    } else if (c == ')') {
      t.kind = Tok::rparen;
      if (depth_ == 0) return refuse(why, "a ')' closes no '('");
      --depth_;
    } else if (c == ';') {
      t.kind = Tok::semicolon;
    }
    return true;
  }

  // The kind of string a prefix makes (any case: r, u, b, br, rb, f, fr, rf, t, tr, rt), none
  // when `word` is no string prefix.
  static std::optional<StringKind> prefix_kind(std::string_view word) {
    if (word.size() > 2) return std::nullopt;
    std::string p;
    for (char c : word) p += ascii_lower(c);
    if (p.empty() || p == "r" || p == "u") return StringKind::str;
    if (p == "b" || p == "br" || p == "rb") return StringKind::bytes;
    if (p == "f" || p == "fr" || p == "rf" || p == "t" || p == "tr" || p == "rt") return StringKind::formatted;
    return std::nullopt;
  }

  // Steps over the string literal whose quote is at pos_. A backslash takes the next
  // character (or line ending) with it, in raw strings too, as in CPython's tokenizer.
  bool string(Token& t, StringKind kind, std::string& why) {
    const char q = s_[pos_];
    const bool triple = pos_ + 2 < s_.size() && s_[pos_ + 1] == q && s_[pos_ + 2] == q;
    const size_t first_line = line_;
    pos_ += triple ? 3 : 1;
    for (;;) {
      if (pos_ >= s_.size()) {
        line_ = first_line;
        return refuse(why, "a string literal is never closed");
      }
      char c = s_[pos_];
      if (c == '\\') {
        ++pos_;
        if (size_t nl = newline_at(s_, pos_)) {
          pos_ += nl;
          ++line_;
        } else if (pos_ < s_.size()) {
          ++pos_;
        }
        continue;
      }
      if (size_t nl = newline_at(s_, pos_)) {
        if (!triple) return refuse(why, "a string literal is not closed on its line");
        pos_ += nl;
        ++line_;
        continue;
      }
      ++pos_;
      if (c != q) continue;
      if (!triple) break;
      if (pos_ + 1 < s_.size() && s_[pos_] == q && s_[pos_ + 1] == q) {
        pos_ += 2;
        break;
      }
    }
    t.kind = Tok::string;
    t.string = kind;
    t.end = pos_;
    t.text = s_.substr(t.begin, t.end - t.begin);
    return true;
  }

  std::string_view s_;
  size_t pos_;
  size_t line_start_;
  size_t line_ = 1;
  int depth_ = 0;
  bool in_line_ = false;  // a token of the current logical line has been read
};

enum class Statement { docstring, future, other, refused };

std::string line_no(const Token& t) { return "line " + std::to_string(t.line); }

// The start of a token as a message shows it: printable ASCII, anything else as '?'.
std::string shown(const Token& t) {
  std::string out;
  for (char c : t.text.substr(0, 20)) out += c >= ' ' && c <= '~' ? c : '?';
  return out;
}

// Reads a statement that starts with a string literal or '(' and may be the docstring: one or
// more str literals (implicitly concatenated), perhaps in parentheses, and nothing else. On
// `docstring`, `t` is the `;` or NEWLINE after it. A statement that starts like a docstring but
// goes on into a longer expression is refused: whether Python's compiler takes such a
// statement (folded to a constant) as the docstring is not something to guess.
Statement read_docstring(PrologueLexer& lx, Token& t, std::string& why) {
  const Token first = t;
  int opens = 0;
  while (t.kind == Tok::lparen) {
    ++opens;
    if (!lx.next(t, why)) return Statement::refused;
  }
  if (t.kind != Tok::string || t.string != StringKind::str) return Statement::other;
  while (t.kind == Tok::string && t.string == StringKind::str)
    if (!lx.next(t, why)) return Statement::refused;
  if (t.kind == Tok::string) return Statement::other;  // with bytes or an f-string: no docstring
  for (int closes = 0; closes < opens && t.kind == Tok::rparen; ++closes)
    if (!lx.next(t, why)) return Statement::refused;
  if (lx.depth() == 0 && (t.kind == Tok::newline || t.kind == Tok::semicolon)) return Statement::docstring;
  why = line_no(first) +
        ": the module's first statement starts with a string literal but goes on into an "
        "expression ('" +
        shown(t) + "' on line " + std::to_string(t.line) +
        "); it is not known whether Python takes it as the docstring";
  return Statement::refused;
}

// Reads a statement that starts with the name `from`. On `future` (`from __future__ import
// ...`), `t` is the `;` or NEWLINE after it.
Statement read_future(PrologueLexer& lx, Token& t, std::string& why) {
  const Token from = t;
  if (!lx.next(t, why)) return Statement::refused;
  if (t.kind == Tok::other && t.text == ".") {
    while (t.kind == Tok::other && t.text == ".")
      if (!lx.next(t, why)) return Statement::refused;
    if (t.kind == Tok::name && t.text == "__future__") {
      why = line_no(from) + ": a relative import of __future__, which some Python versions take as a future statement";
      return Statement::refused;
    }
    return Statement::other;
  }
  if (t.kind != Tok::name) return Statement::other;
  for (char c : t.text) {
    if (static_cast<unsigned char>(c) >= 0x80) {  // Python normalises names (NFKC): it may still mean __future__
      why = line_no(from) + ": an import from a module whose name is not ASCII";
      return Statement::refused;
    }
  }
  if (t.text != "__future__") return Statement::other;
  if (!lx.next(t, why)) return Statement::refused;
  if (t.kind != Tok::name || t.text != "import") return Statement::other;  // e.g. `from __future__.x import y`
  for (;;) {
    if (!lx.next(t, why)) return Statement::refused;
    if (t.kind == Tok::newline || (t.kind == Tok::semicolon && lx.depth() == 0)) return Statement::future;
    bool fits = t.kind == Tok::name || t.kind == Tok::lparen || t.kind == Tok::rparen ||
                (t.kind == Tok::other && t.text == ",");
    if (!fits) {
      why = line_no(t) + ": '" + shown(t) + "' in a from __future__ import";
      return Statement::refused;
    }
  }
}

// The line ending to give the inserted line at `at`: that of the line before it, else the
// first one after it, else "\n".
std::string_view newline_style(std::string_view s, size_t at) {
  for (size_t i = at; i > 0; --i) {
    char c = s[i - 1];
    if (c == '\n') return i >= 2 && s[i - 2] == '\r' ? "\r\n" : "\n";
    if (c == '\r') return "\r";
  }
  for (size_t i = at; i < s.size(); ++i)
    if (size_t nl = newline_at(s, i)) return s.substr(i, nl);
  return "\n";
}

}  // namespace

std::optional<size_t> prologue_end(std::string_view source, std::string& why) {
  const bool bom = source.starts_with(kBom);
  const size_t start = bom ? kBom.size() : 0;
  if (!readable_encoding(source.substr(start), bom, why)) return std::nullopt;

  PrologueLexer lx(source, start);
  Token t;
  if (!lx.next(t, why)) return std::nullopt;
  bool first_statement = true;
  std::optional<Token> prologue_end;  // the NEWLINE ending the last prologue line
  size_t insert_at = 0;
  for (;;) {
    if (t.kind == Tok::end) {  // nothing but the prologue, comments and blank lines
      insert_at = prologue_end ? prologue_end->end : source.size();
      break;
    }
    const size_t line_start = lx.line_start();
    const Token line_first = t;
    bool prologue_line = false;  // a statement of this logical line belongs to the prologue
    bool other = false;
    for (;;) {  // the statements of one logical line, joined by ';'
      Statement kind = Statement::other;
      if (first_statement && (t.kind == Tok::string || t.kind == Tok::lparen)) {
        kind = read_docstring(lx, t, why);
      } else if (t.kind == Tok::name && t.text == "from") {
        kind = read_future(lx, t, why);
      }
      if (kind == Statement::refused) return std::nullopt;
      if (kind == Statement::other) {
        if (prologue_line) {
          why = line_no(line_first) +
                ": the docstring or a from __future__ import shares its line with "
                "another statement after ';', so no line can go between them";
          return std::nullopt;
        }
        other = true;
        break;
      }
      first_statement = false;
      prologue_line = true;
      if (t.kind == Tok::semicolon) {
        if (!lx.next(t, why)) return std::nullopt;
        if (t.kind != Tok::newline) continue;
      }
      prologue_end = t;  // the NEWLINE
      break;
    }
    if (other) {
      insert_at = prologue_end ? prologue_end->end : line_start;
      break;
    }
    if (!lx.next(t, why)) return std::nullopt;
  }
  return insert_at;
}

std::optional<std::string> insert_after_prologue(std::string_view source, std::string_view line, std::string& why) {
  const std::optional<size_t> at = prologue_end(source, why);
  if (!at) return std::nullopt;
  const size_t insert_at = *at;
  const size_t start = source.starts_with(kBom) ? kBom.size() : 0;
  const std::string_view newline = newline_style(source, insert_at);
  // After a last line without a line ending, the import needs one before it.
  const bool needs_break = insert_at == source.size() && insert_at > start && newline_at(source, insert_at - 1) == 0;
  std::string out;
  out.reserve(source.size() + line.size() + 2);
  out += source.substr(0, insert_at);
  if (needs_break) out += newline;
  out += line;
  out += newline;
  out += source.substr(insert_at);
  return out;
}

bool line_after_prologue(std::string_view source, std::string_view line) {
  std::string why;
  const std::optional<size_t> at = prologue_end(source, why);
  if (!at) return false;
  const size_t end = *at + line.size();
  return source.substr(*at).starts_with(line) && end < source.size() && newline_at(source, end) != 0;
}

}  // namespace wm
