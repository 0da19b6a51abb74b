#include "merger/format/label.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace wm {

namespace {

// A decimal number of one to `max_digits` digits without a leading zero ("0" itself allowed
// only when `zero` is); nullopt otherwise.
std::optional<int> number(std::string_view digits, size_t max_digits, bool zero = false) {
  if (digits.empty() || digits.size() > max_digits) return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  if (digits[0] == '0' && !(zero && digits.size() == 1)) return std::nullopt;
  int value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}

// "cu" and a CUDA major of one to three digits, no leading zero: the spelling of local versions
// ("+cu12") and of CuPy's and torch's indexes.
std::optional<int> cuda_part(std::string_view text) {
  if (!text.starts_with("cu")) return std::nullopt;
  return number(text.substr(2), 3);
}

}  // namespace

std::string_view selector_name(Selector selector) {
  switch (selector) {
    case Selector::cuda:
      return "cuda";
    case Selector::torch:
      return "torch";
    case Selector::cpu:
      return "cpu";
  }
  return "cuda";
}

std::optional<Selector> parse_selector(std::string_view name) {
  for (Selector s : {Selector::cuda, Selector::torch, Selector::cpu})
    if (selector_name(s) == name) return s;
  return std::nullopt;
}

std::optional<VariantLabel> VariantLabel::parse(std::string_view text, std::string& why) {
  if (text.starts_with("cu")) {
    if (auto major = cuda_part(text)) return cuda(*major);
    why = "cu followed by the CUDA major";
    return std::nullopt;
  }
  if (text.starts_with("torch")) {
    // "torch" + the torch major (one digit) + its minor (one or two digits), "plus" for a floor,
    // then "_cu" and the CUDA major or "_cpu": "torch210_cu12" is torch 2.10 built with CUDA 12,
    // "torch210plus_cu13" torch 2.10 or later with CUDA 13, "torch210_cpu" a CPU-only torch 2.10.
    size_t underscore = text.find('_');
    std::string_view version =
        text.substr(5, underscore == std::string_view::npos ? std::string_view::npos : underscore - 5);
    const bool floor = version.ends_with("plus");
    if (floor) version.remove_suffix(4);
    auto major = version.empty() ? std::nullopt : number(version.substr(0, 1), 1);
    auto minor = version.size() < 2 ? std::nullopt : number(version.substr(1), 2, true);
    std::string_view build = underscore == std::string_view::npos ? std::string_view() : text.substr(underscore + 1);
    auto cuda_major = build == "cpu" ? std::optional(0) : cuda_part(build);
    if (major && minor && cuda_major) return torch(*major, *minor, *cuda_major, floor);
    why =
        "torch, the torch major and minor, plus for a floor, then _cu and the CUDA major or _cpu (torch210_cu12: torch "
        "2.10, CUDA 12; torch210plus_cu13: torch 2.10 or later, CUDA 13; torch210_cpu: a CPU-only torch 2.10)";
    return std::nullopt;
  }
  if (text.starts_with("x86_64_v")) {
    auto level = number(text.substr(8), 1);
    if (level && *level >= 1 && *level <= kMaxCpuLevel) return cpu(*level);
    why = fmt::format("x86_64_v and a psABI level from 1 to {}", kMaxCpuLevel);
    return std::nullopt;
  }
  why = "cuNN, torchMmm_cuNN, torchMmmplus_cuNN, torchMmm_cpu or x86_64_vN";
  return std::nullopt;
}

std::optional<VariantLabel> VariantLabel::from_local_version(std::string_view local) {
  std::string text(local);
  std::replace(text.begin(), text.end(), '.', '_');
  return parse(text);
}

VariantLabel VariantLabel::cuda(int major) {
  return VariantLabel(Selector::cuda, {0, 0, major}, fmt::format("cu{}", major));
}

VariantLabel VariantLabel::torch(int major, int minor, int cuda_major, bool floor) {
  return VariantLabel(Selector::torch, {major, minor, cuda_major},
                      fmt::format("torch{}{}{}_{}", major, minor, floor ? "plus" : "",
                                  cuda_major == 0 ? std::string("cpu") : fmt::format("cu{}", cuda_major)),
                      floor);
}

VariantLabel VariantLabel::cpu(int level) {
  return VariantLabel(Selector::cpu, {level, 0, 0}, fmt::format("x86_64_v{}", level));
}

std::strong_ordering VariantLabel::operator<=>(const VariantLabel& other) const {
  if (auto c = selector_ <=> other.selector_; c != 0) return c;
  if (auto c = key_ <=> other.key_; c != 0) return c;
  if (auto c = floor_ <=> other.floor_; c != 0) return c;
  return text_ <=> other.text_;
}

std::string torch_description(const VariantLabel& label) {
  const auto [major, minor] = label.torch_version();
  const std::string version = label.torch_floor() ? fmt::format("{}.{} or a later {}.x", major, minor, major)
                                                  : fmt::format("{}.{}", major, minor);
  if (label.cuda_major() == 0) return "a CPU-only torch " + version;
  return fmt::format("torch {} built with CUDA {}", version, label.cuda_major());
}

std::vector<std::string> label_strings(const std::vector<VariantLabel>& labels) {
  std::vector<std::string> out;
  out.reserve(labels.size());
  for (const VariantLabel& label : labels) out.push_back(label.str());
  return out;
}

std::vector<LabelSetProblem> label_set_problems(const std::vector<VariantLabel>& labels, std::string_view context) {
  std::vector<LabelSetProblem> out;
  if (labels.empty()) return out;
  auto add = [&](std::string_view what, std::string expected, std::string found) {
    out.push_back({fmt::format("{}{}", what, context), std::move(expected), std::move(found)});
  };
  std::set<std::string> seen;
  for (const VariantLabel& label : labels) {
    if (!seen.insert(label.str()).second) {
      add("a variant label given twice", "each label once", label.str());
      break;
    }
  }
  const VariantLabel& first = labels.front();
  for (const VariantLabel& label : labels)
    if (label.selector() != first.selector()) {
      // One loader chooses by one thing: CUDA builds and CPU-level builds cannot be mixed.
      add("variant labels of different selectors",
          fmt::format("{} labels only, as {} is", selector_name(first.selector()), first.str()),
          fmt::format("{} (selector {})", label.str(), selector_name(label.selector())));
      return out;  // the torch rules below are for torch labels alone
    }
  if (first.selector() != Selector::torch) return out;
  const auto floors =
      std::count_if(labels.begin(), labels.end(), [](const VariantLabel& l) { return l.torch_floor(); });
  const std::string all = fmt::format("{}", fmt::join(label_strings(labels), ", "));
  if (floors != 0 && static_cast<size_t>(floors) != labels.size())
    // An exact build beside a floor build would leave the minors between them to the floor
    // build and the exact one's minor to both: one rule per wheel keeps the choice plain.
    add("torch labels with a floor and without one",
        "every build labelled torchMmmplus_... (torch M.mm or later) or every build torchMmm_... (that torch minor "
        "alone)",
        all);
  else if (floors != 0 && std::any_of(labels.begin(), labels.end(), [&](const VariantLabel& l) {
             return l.torch_version().first != first.torch_version().first;
           }))
    add("torch floors of different majors", "floors of one torch major (a floor holds within its major)", all);
  return out;
}

std::vector<int> default_cuda_majors() { return {12, 13}; }

}  // namespace wm
