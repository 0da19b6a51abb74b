// UTF-8 checks, case folding and normalisation for member names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wm {

// The pieces of `text` between `separator`s, empty ones included ("a..b" on '.' is a, "", b).
std::vector<std::string> split(std::string_view text, char separator);

// [A-Za-z_][A-Za-z0-9_]*: a Python identifier of ASCII, a POSIX environment variable name.
bool is_ascii_identifier(std::string_view text);

// The offset of the first byte that is not part of well-formed UTF-8 (no overlong forms, no
// surrogates, nothing above U+10FFFF), npos when every byte is.
size_t invalid_utf8_at(std::string_view text);
// Well-formed UTF-8: invalid_utf8_at finds nothing.
bool is_valid_utf8(std::string_view text);
// Appends code point `cp` (at most U+10FFFF) to `out` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// The key under which names are one file on case-insensitive or normalising file systems
// (Windows, macOS): the NFC form of the full Unicode case folding of the NFD form ("Straße" and
// "STRASSE" match; so do any two canonically equivalent spellings).
// Invalid UTF-8 is returned unchanged.
std::string fold_case(const std::string& name);
// Whether UTF-8 `text` holds characters that move or hide text on a terminal: C1 controls
// (NEL among them), bidirectional marks, overrides and isolates, line and paragraph separators.
bool has_hidden_controls(std::string_view text);
// The NFC form of a UTF-8 name, to tell normalisation twins from case twins.
std::string nfc(const std::string& name);
// Every non-ASCII character as \u{XXXX}, so that names differing only in normalisation look
// different in a message.
std::string code_points(std::string_view text);

}  // namespace wm
