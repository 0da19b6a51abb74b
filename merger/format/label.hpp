// Variant labels: the name of one build in a merged wheel ("cu12", "torch210_cu12",
// "x86_64_v3"), the selector that picks among builds at import time, and the order builds are
// kept in. Every place that reads, writes or orders a label goes through this type; nothing else
// slices label strings. The forms are documented in docs/loader.md ("Selectors and labels").
#pragma once

#include <array>
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wm {

// What the loader looks at to choose a build. Every build of one merged wheel has the same.
enum class Selector {
  cuda,  // "cu12": the CUDA major of the installed cuda-bindings (or runtime wheels, driver)
  // "torch210_cu12": the installed torch's major.minor and its CUDA major; "torch210plus_cu12":
  // torch 2.10 or later (a build against torch's stable ABI); "torch210_cpu": a CPU-only torch.
  torch,
  cpu,  // "x86_64_v3": the x86-64 psABI level of the running CPU; the highest supported wins
};

std::string_view selector_name(Selector selector);
std::optional<Selector> parse_selector(std::string_view name);

class VariantLabel {
 public:
  // "cu12" -> {cuda, 12}; "torch210_cu12" -> {torch, 2.10, CUDA 12}; "torch210plus_cu13" ->
  // {torch, 2.10 or later, CUDA 13}; "torch210_cpu" -> {torch, 2.10, CPU-only}; "x86_64_v3" ->
  // {cpu, 3}; nullopt with `why` for anything no selector accepts.
  static std::optional<VariantLabel> parse(std::string_view text, std::string& why);
  static std::optional<VariantLabel> parse(std::string_view text) {
    std::string why;
    return parse(text, why);
  }
  // A label as a local version carries it after normalization, which turns "_" into ".":
  // "torch210.cu12" -> "torch210_cu12", "x86.64.v3" -> "x86_64_v3", "cu12" -> "cu12".
  static std::optional<VariantLabel> from_local_version(std::string_view local);
  static VariantLabel cuda(int major);
  // cuda_major 0: a CPU-only torch ("torch210_cpu"); floor: torch major.minor or later.
  static VariantLabel torch(int major, int minor, int cuda_major, bool floor = false);
  static VariantLabel cpu(int level);

  Selector selector() const { return selector_; }
  const std::string& str() const { return text_; }
  // The CUDA major a `cuda` or `torch` label names; 0 for a `cpu` label and a CPU-only torch's
  // ("torch210_cpu"): such a build needs no CUDA toolkit.
  int cuda_major() const { return selector_ == Selector::cpu ? 0 : key_[2]; }
  // The torch major and minor a `torch` label names: the one it was built for, or with
  // torch_floor() the lowest it runs with.
  std::pair<int, int> torch_version() const { return {key_[0], key_[1]}; }
  // Whether a `torch` label names a floor ("torch210plus_cu12": torch 2.10 or later).
  bool torch_floor() const { return floor_; }
  // The psABI level (1 to 4) a `cpu` label names.
  int cpu_level() const { return key_[0]; }

  // Within a selector, by what the label names (cu9 before cu12, torch29 before torch210), not
  // by its spelling; selection prefers the last that fits.
  std::strong_ordering operator<=>(const VariantLabel& other) const;
  bool operator==(const VariantLabel& other) const { return text_ == other.text_; }

 private:
  VariantLabel(Selector selector, std::array<int, 3> key, std::string text, bool floor = false)
      : selector_(selector), key_(key), floor_(floor), text_(std::move(text)) {}
  Selector selector_;
  std::array<int, 3> key_;  // cuda: {0, 0, major}; torch: {major, minor, cuda or 0}; cpu: {level, 0, 0}
  bool floor_;              // torch: major.minor or later
  std::string text_;
};

// Orders labels by their text ("cu12" before "cu9"), as JSON orders an object's keys: for maps
// by label that are iterated in the order of the JSON they mirror (the loader manifest's).
struct LabelTextOrder {
  bool operator()(const VariantLabel& a, const VariantLabel& b) const { return a.str() < b.str(); }
};

// What a `torch` label's build needs, for messages: "torch 2.10 built with CUDA 12", "torch 2.10
// or a later 2.x built with CUDA 13", "a CPU-only torch 2.10".
std::string torch_description(const VariantLabel& label);

// The labels' text, in the same order: for JSON, messages and generated text.
std::vector<std::string> label_strings(const std::vector<VariantLabel>& labels);

// Why a set of builds' labels cannot be one merged wheel, the rules every command holds them
// to (merge, build, ci init): each label once; labels of one kind (one loader chooses by one
// thing); torch labels all floors (torchMmmplus_) or all exact; floors of one torch major (the
// stable ABI holds within a major). One entry a broken rule; `context` ends each `what`
// (" in one merge", " for the workflow").
struct LabelSetProblem {
  std::string what, expected, found;
};
std::vector<LabelSetProblem> label_set_problems(const std::vector<VariantLabel>& labels, std::string_view context);

// The CUDA majors built when neither the command line nor the configuration names any.
std::vector<int> default_cuda_majors();

// The highest x86-64 psABI level wheelmerge knows (x86_64_v4).
inline constexpr int kMaxCpuLevel = 4;

// How an input may carry its label, for messages.
inline constexpr std::string_view kLabelForms =
    "PATH=LABEL, a .LABEL suffix before .whl, or a +LABEL local version; LABEL is cuNN, torchMmm_cuNN "
    "(torch M.mm built with CUDA NN; torchMmmplus_cuNN: M.mm or later; _cpu for a CPU-only torch) or x86_64_vN";

// The longest label text: "torch210plus_cu130".
inline constexpr size_t kMaxLabelLength = 18;

}  // namespace wm
