#include "merger/merge.hpp"

#include "merger/label.hpp"
#include "merger/loader.hpp"
#include "merger/member_stream.hpp"
#include "merger/parallel.hpp"
#include "merger/verify.hpp"
#include "merger/write.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <utility>

namespace wm {

std::optional<MergeResult> merge_wheels(const std::vector<WheelInput>& inputs, const MergeOptions& options,
                                        const std::string& out_dir, DosTime time, Problems& problems) {
  const size_t before = problems.size();
  if (inputs.size() < 2) {
    problems.push_back({ProblemKind::usage, {}, {}, "merge needs two or more wheels", "at least 2",
                        std::to_string(inputs.size())});
    return std::nullopt;
  }
  std::map<std::string, std::string> labels;  // label -> input
  std::optional<std::pair<VariantLabel, std::string>> first;  // the first valid label and its input
  for (const WheelInput& in : inputs) {
    std::string label = detect_label(in), why;
    auto parsed = label.empty() ? std::nullopt : VariantLabel::parse(label, why);
    if (label.empty()) {
      problems.push_back({ProblemKind::usage, in.path, {}, "no variant label", std::string(kLabelForms), "none"});
    } else if (!parsed) {
      problems.push_back({ProblemKind::usage, in.path, {}, "invalid variant label", why, label});
    } else if (auto [it, fresh] = labels.emplace(label, in.path); !fresh) {
      problems.push_back({ProblemKind::usage, in.path, {}, "two inputs with the same variant label",
                          "one input per label", fmt::format("{} also for {}", label, it->second)});
    } else if (!first) {
      first.emplace(*parsed, in.path);
    } else if (parsed->selector() != first->first.selector()) {
      // One loader chooses by one thing: CUDA builds and CPU-level builds cannot be mixed.
      problems.push_back({ProblemKind::usage, in.path, {}, "variant labels of different selectors",
                          fmt::format("a {} label, as {} has ({})", selector_name(first->first.selector()), first->second,
                                      first->first.str()),
                          fmt::format("{} (selector {})", label, selector_name(parsed->selector()))});
    }
  }
  if (problems.size() != before) return std::nullopt;

  // Every input is read, side by side, so every problem is reported and no core waits for
  // one input's largest member; problems are kept in input order.
  MergeResult result;
  std::vector<std::optional<Wheel>> read(inputs.size());
  std::vector<Problems> found(inputs.size());
  parallel_for(inputs.size(), [&](size_t i) { read[i] = read_wheel(inputs[i], found[i]); });
  for (size_t i = 0; i < inputs.size(); ++i) {
    problems.insert(problems.end(), found[i].begin(), found[i].end());
    if (read[i]) result.inputs.push_back(std::move(*read[i]));
  }
  if (problems.size() != before) return std::nullopt;
  auto plan = plan_merge(result.inputs, options, problems);
  if (!plan) return std::nullopt;
  result.plan = std::move(*plan);
  auto output = write_wheel(result.plan, result.inputs, out_dir, time, problems);
  if (!output) return std::nullopt;
  result.output = *output;
  return result;
}

}  // namespace wm
