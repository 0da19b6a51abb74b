#include "merger/label.hpp"

#include <fmt/format.h>

namespace wm {

std::string_view selector_name(Selector selector) {
  switch (selector) {
    case Selector::cuda: return "cuda";
  }
  return "cuda";
}

std::optional<VariantLabel> VariantLabel::parse(std::string_view text, std::string& why) {
  // "cu" and a CUDA major of one to three digits, no leading zero: the spelling of local
  // versions ("+cu12") and of CuPy's and torch's indexes.
  auto digits = text.size() > 2 ? text.substr(2) : std::string_view();
  bool cuda = text.starts_with("cu") && !digits.empty() && digits.size() <= 3 && digits[0] != '0' &&
              digits.find_first_not_of("0123456789") == std::string_view::npos;
  if (!cuda) {
    why = "cu followed by the CUDA major";
    return std::nullopt;
  }
  return VariantLabel(Selector::cuda, std::stoi(std::string(digits)), std::string(text));
}

VariantLabel VariantLabel::cuda(int major) { return VariantLabel(Selector::cuda, major, fmt::format("cu{}", major)); }

std::strong_ordering VariantLabel::operator<=>(const VariantLabel& other) const {
  if (auto c = selector_ <=> other.selector_; c != 0) return c;
  if (auto c = key_ <=> other.key_; c != 0) return c;
  return text_ <=> other.text_;
}

std::vector<int> default_cuda_majors() { return {12, 13}; }

}  // namespace wm
