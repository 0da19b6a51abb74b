// Variant labels: the name of one build in a merged wheel ("cu12"), the selector that picks
// among builds at import time, and the order builds are kept in. Every place that reads,
// writes or orders a label goes through this type; nothing else slices label strings.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

// What the loader looks at to choose a build. Every build of one merged wheel has the same.
enum class Selector {
  cuda,  // the installed cuda-bindings major ("cu12", "cu13"); the default
};

std::string_view selector_name(Selector selector);

class VariantLabel {
 public:
  // "cu12" -> {cuda, 12}; nullopt with `why` for anything no selector accepts.
  static std::optional<VariantLabel> parse(std::string_view text, std::string& why);
  static std::optional<VariantLabel> parse(std::string_view text) {
    std::string why;
    return parse(text, why);
  }
  static VariantLabel cuda(int major);

  Selector selector() const { return selector_; }
  const std::string& str() const { return text_; }
  // The CUDA major a `cuda` label names.
  int cuda_major() const { return key_; }

  // Within a selector, by what the label names (cu9 before cu12), not by its spelling.
  std::strong_ordering operator<=>(const VariantLabel& other) const;
  bool operator==(const VariantLabel& other) const { return text_ == other.text_; }

 private:
  VariantLabel(Selector selector, int key, std::string text) : selector_(selector), key_(key), text_(std::move(text)) {}
  Selector selector_;
  int key_;
  std::string text_;
};

// The CUDA majors built when neither the command line nor the configuration names any.
std::vector<int> default_cuda_majors();

// How an input may carry its label, for messages.
inline constexpr std::string_view kLabelForms = "PATH=cuNN, a .cuNN suffix before .whl, or a +cuNN local version";

}  // namespace wm
