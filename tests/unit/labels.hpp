// Variant labels in tests, by their text: "cu12"_label. A text that is no label fails the test.
#pragma once

#include "merger/format/label.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace wm::test_labels {

inline VariantLabel operator""_label(const char* text, std::size_t size) {
  std::string why;
  auto label = VariantLabel::parse(std::string_view(text, size), why);
  REQUIRE_MESSAGE(label, why);
  return *label;
}

}  // namespace wm::test_labels
