// UTF-8 checks and case folding for member names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wm {

// The pieces of `text` between `separator`s, empty ones included ("a..b" on '.' is a, "", b).
std::vector<std::string> split(std::string_view text, char separator);

// Well-formed UTF-8: no overlong forms, surrogates or values past U+10FFFF.
bool is_valid_utf8(std::string_view text);

// Unicode lower-casing, used to find names that collide on case-insensitive file systems.
std::string fold_case(const std::string& name);

}  // namespace wm
