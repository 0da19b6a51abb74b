// The email-header format of WHEEL and METADATA: "Key: value" lines, continuation lines, then
// an optional body after the first blank line.
#pragma once

#include "merger/base/problem.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct Header {
  std::string key;
  std::string value;
  bool operator==(const Header&) const = default;
};

struct Headers {
  std::vector<Header> fields;  // in file order; keys may repeat
  std::string body;

  // Values of every field named `key` (case-insensitive, as email headers are).
  std::vector<std::string> all(std::string_view key) const;
  // The single value of `key`, nullopt when absent.
  std::optional<std::string> one(std::string_view key) const;
  std::string to_string() const;
};

std::optional<Headers> parse_headers(std::string_view text, const std::string& display_name, const std::string& member,
                                     Problems& problems);

bool iequals(std::string_view a, std::string_view b);

}  // namespace wm
