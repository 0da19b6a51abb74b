#include "merger/merge.hpp"

#include "merger/base/memory.hpp"
#include "merger/base/parallel.hpp"
#include "merger/format/label.hpp"
#include "merger/linkage.hpp"
#include "merger/loader.hpp"
#include "merger/runtime_wheels.hpp"
#include "merger/verify.hpp"
#include "merger/write.hpp"
#include "merger/zip/member_stream.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

namespace wm {

namespace {

// What an input without a label has instead: a name whose CUDA suffix would give one with --name.
std::string suffix_hint(const WheelInput& in) {
  std::string file = std::filesystem::path(in.path).filename().string();
  std::string name = file.substr(0, file.find('-'));
  auto suffix = name_suffix_label(name);
  return suffix ? fmt::format("none (the name {} gives {} with --name NAME)", name, suffix->label.str()) : "none";
}

// Every label an input names (its label_sources), where they disagree ("pkg-1.0+cu12-...cu13.whl"):
// which one holds the build cannot be guessed. (With --name, the plan checks the label's CUDA
// major against the name's suffix, cupy_cuda12x.)
std::optional<Problem> disagreeing_labels(const WheelInput& input, const std::vector<LabelSource>& sources) {
  std::vector<std::string> named;
  for (const LabelSource& s : sources)
    if (s.text != sources.front().text) named.push_back(fmt::format("{} ({})", s.text, s.form));
  if (named.empty()) return std::nullopt;
  named.insert(named.begin(), fmt::format("{} ({})", sources.front().text, sources.front().form));
  return Problem{ProblemKind::usage,
                 input.path,
                 {},
                 "the input names different variant labels",
                 "one label, wherever the input names it",
                 fmt::format("{}", fmt::join(named, " and "))};
}

// The label of an input whose label_sources() are `sources`: the first, else with --name the
// suffix of the distribution's name; without --name, names never give labels.
std::optional<LabelSource> chosen_label(const WheelInput& input, std::vector<LabelSource> sources,
                                        const MergeOptions& options) {
  if (!sources.empty()) return std::move(sources.front());
  if (options.name.empty()) return std::nullopt;
  std::string file = std::filesystem::path(input.path).filename().string();
  auto suffix = name_suffix_label(file.substr(0, file.find('-')));
  if (!suffix) return std::nullopt;
  return LabelSource{"name suffix", suffix->label.str(), suffix->label, {}};
}

// The label of every input, each read once; nullopt with problems where an input names none,
// names an invalid one or one another input has, or where the labels are of different selectors.
std::optional<std::vector<VariantLabel>> input_labels(const std::vector<WheelInput>& inputs,
                                                      const MergeOptions& options, Problems& problems) {
  const size_t before = problems.size();
  std::vector<std::vector<LabelSource>> sources;
  for (const WheelInput& in : inputs) {
    sources.push_back(label_sources(in));
    if (auto disagreement = disagreeing_labels(in, sources.back())) problems.push_back(std::move(*disagreement));
  }
  if (problems.size() != before) return std::nullopt;
  if (!options.name.empty() && !is_project_name(options.name)) {
    problems.push_back({ProblemKind::usage,
                        {},
                        {},
                        "invalid --name",
                        "a project name: letters and digits, with -, _ or . between them",
                        "\"" + options.name + "\""});
    return std::nullopt;
  }
  std::vector<VariantLabel> labels;
  std::map<VariantLabel, std::string> seen;  // label -> input
  for (size_t i = 0; i < inputs.size(); ++i) {
    const WheelInput& in = inputs[i];
    std::optional<LabelSource> found = chosen_label(in, std::move(sources[i]), options);
    if (!found) {
      problems.push_back(
          {ProblemKind::usage, in.path, {}, "no variant label", std::string(kLabelForms), suffix_hint(in)});
    } else if (!found->label) {
      problems.push_back({ProblemKind::usage, in.path, {}, "invalid variant label", found->why, found->text});
    } else if (auto [it, fresh] = seen.emplace(*found->label, in.path); !fresh) {
      problems.push_back({ProblemKind::usage,
                          in.path,
                          {},
                          "two inputs with the same variant label",
                          "one input per label",
                          fmt::format("{}, the label of {} as well", found->text, it->second)});
    } else if (labels.empty()) {
      labels.push_back(*found->label);
    } else if (found->label->selector() != labels.front().selector()) {
      // One loader chooses by one thing: CUDA builds and CPU-level builds cannot be mixed.
      const VariantLabel& first = labels.front();
      problems.push_back(
          {ProblemKind::usage,
           in.path,
           {},
           "variant labels of different selectors",
           fmt::format("a {} label, as {} has ({})", selector_name(first.selector()), seen.at(first), first.str()),
           fmt::format("{} (selector {})", found->text, selector_name(found->label->selector()))});
    } else {
      labels.push_back(*found->label);
    }
  }
  if (problems.size() != before) return std::nullopt;
  return labels;
}

}  // namespace

std::optional<LabelSource> input_label(const WheelInput& input, const MergeOptions& options) {
  return chosen_label(input, label_sources(input), options);
}

std::optional<std::vector<Wheel>> read_inputs(const std::vector<WheelInput>& inputs, const MergeOptions& options,
                                              Problems& problems) {
  const size_t before = problems.size();
  if (inputs.empty()) {
    problems.push_back({ProblemKind::usage,
                        {},
                        {},
                        "no input wheels",
                        "at least one wheel (a merge of one build gets a loader "
                        "that says which build it has)",
                        "none"});
    return std::nullopt;
  }
  auto labels = input_labels(inputs, options, problems);
  if (!labels) return std::nullopt;

  // Every input is read, so every problem is reported: opened one after another (RECORD's text
  // and rows, the bulk of opening, are gone before the next input opens), then the members of
  // all of them streamed together, so no core waits for one input's largest member. Problems
  // are kept in input order.
  std::vector<Wheel> wheels;
  std::vector<OpenedWheel> opened;
  std::vector<size_t> opened_input;  // the input each opened wheel is
  std::vector<Problems> found(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (auto o = open_wheel(inputs[i].path, (*labels)[i], found[i])) {
      if (!o->wheel.name.variant.empty()) {  // one build already chosen by an installer's rules
        found[i].push_back({ProblemKind::invalid_input,
                            o->wheel.display,
                            {},
                            "a variant wheel (PEP 825) as input",
                            "each build as it was built",
                            "the variant label " + o->wheel.name.variant});
        continue;
      }
      opened.push_back(std::move(*o));
      opened_input.push_back(i);
    }
    release_free_memory();  // what opening freed (its checks, RECORD's text), before the next opens
  }
  std::vector<Problems> streamed(opened.size());
  std::vector<std::optional<Wheel>> read(inputs.size());
  {
    auto streamed_wheels = stream_wheels(std::move(opened), streamed);
    for (size_t k = 0; k < streamed_wheels.size(); ++k) {
      read[opened_input[k]] = std::move(streamed_wheels[k]);
      Problems& to = found[opened_input[k]];
      to.insert(to.end(), streamed[k].begin(), streamed[k].end());
      // Each build is what its label and tags say: its machine, the CUDA major it links; and
      // the CUDA runtime it links is brought by its requirements (a warning where not).
      if (auto& w = read[opened_input[k]]; w && w->label) {
        check_native_files(*w, {*w->label}, {}, to);
        if (auto warning = libstdcxx_warning(*w)) w->warnings.push_back(std::move(*warning));
        if (options.runtime_requirements)
          require_runtime_wheels(*w, *w->label);
        else
          for (std::string& warning : runtime_warnings(w->display, *w->label, runtime_needs(*w, *w->label)))
            w->warnings.push_back(std::move(warning));
      }
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    problems.insert(problems.end(), found[i].begin(), found[i].end());
    if (read[i]) wheels.push_back(std::move(*read[i]));
  }
  if (problems.size() != before) return std::nullopt;
  release_free_memory();  // what reading freed on the workers' heaps, before the plan grows on this one
  return wheels;
}

std::optional<MergeResult> merge_wheels(const std::vector<WheelInput>& inputs, const MergeOptions& options,
                                        const std::string& out_dir, DosTime time, Problems& problems) {
  MergeResult result;
  {
    auto read = read_inputs(inputs, options, problems);
    if (!read) return std::nullopt;
    result.inputs = std::move(*read);
  }
  // The writer copies from the archives alone: each input's file list goes as soon as the
  // planner has read the last of them, before its last passes (the name checks, RECORD).
  auto release_files = [&] {
    for (Wheel& w : result.inputs) w.release_files();
    release_free_memory();
  };
  auto plan = plan_merge(result.inputs, options, problems, release_files);
  if (!plan) return std::nullopt;
  result.plan = std::move(*plan);
  release_free_memory();  // what the planner's last passes freed, before the writer grows
  // The output is read back against the plan alone, then libzip checks it alone: the inputs'
  // entries go once every member is written, the plan's members once it is read back.
  WriteHooks hooks;
  hooks.copied = [&] {
    for (Wheel& w : result.inputs) w.zip.release_entries();
    release_free_memory();
  };
  hooks.read_back = [&] {
    std::vector<PlannedMember>().swap(result.plan.members);
    result.plan.text = std::make_shared<PlanText>();  // the members' paths and contents
  };
  auto output = write_wheel(result.plan, result.inputs, out_dir, time, problems, hooks);
  if (!output) return std::nullopt;
  result.output = *output;
  return result;
}

}  // namespace wm
