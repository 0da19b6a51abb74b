// The start of a Python module read as CPython reads it (Python/tokenizer.c; Lib/tokenize.py):
// its source encoding, then tokens up to the first statement that is neither the module
// docstring nor a `from __future__` import, the prologue. The loader's import line goes right
// after it (merger/loader.hpp); verify checks that it is there.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace wm {

// Where a line put after the prologue of `source` goes: the offset just after the newline that
// ends the prologue's last logical line, or of the first statement after it (the end when
// there is none), after leading comments such as an encoding cookie. nullopt with `why` (what
// was found, and on which line) when that cannot be done without risk of changing what the
// module means: the source's encoding is not UTF-8, ASCII or Latin-1 or its bytes are not
// valid in it, the prologue cannot be tokenized (an unclosed string or parenthesis, a stray
// backslash, a NUL byte), the docstring or a future import shares its line with another
// statement after ';', the first statement starts with a string literal but is a longer
// expression, or an import names __future__ relatively or by a non-ASCII name.
std::optional<size_t> prologue_end(std::string_view source, std::string& why);

// `source` with `line` (no line ending of its own) added as one whole line at prologue_end,
// ending in the line ending the file uses there ("\n" when it has none); a UTF-8 BOM stays
// first. Nothing else changes. nullopt with `why` as for prologue_end.
std::optional<std::string> insert_after_prologue(std::string_view source, std::string_view line, std::string& why);

// Whether `line`, whole and followed by a line ending, is the statement at prologue_end of
// `source`: code that runs when the module is imported, never text in a docstring, a string,
// a comment or an indented block.
bool line_after_prologue(std::string_view source, std::string_view line);

}  // namespace wm
