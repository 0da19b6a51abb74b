#include "merger/variants.hpp"

#include "merger/gpu_code.hpp"
#include "merger/plan.hpp"
#include "merger/write.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace wm {

namespace {

// "pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl" -> "pkg-1.0-cp312-cp312-manylinux_2_28_x86_64-cu12.whl"
std::string variant_filename(const std::string& filename, const VariantLabel& label) {
  return filename.substr(0, filename.size() - 4) + "-" + label.str() + ".whl";
}

// "{name}-{version}" of a plan: its dist-info directory less ".dist-info".
std::string release_of(const MergePlan& plan) {
  return plan.dist_info.substr(0, plan.dist_info.size() - std::string_view(".dist-info").size());
}

// Writes `text` to `dir/name` through a temporary file renamed into place.
bool write_text_file(const std::string& dir, const std::string& name, const std::string& text, std::string& error) {
  namespace fs = std::filesystem;
  const std::string target = (fs::path(dir) / name).string();
  const std::string temp = (fs::path(dir) / fmt::format(".{}.{}.tmp", name, ::getpid())).string();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      error = std::strerror(errno);
      std::remove(temp.c_str());
      return false;
    }
  }
  if (std::rename(temp.c_str(), target.c_str()) != 0) {
    error = std::strerror(errno);
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

// A build's nvidia :: sm_arch values from its files' GPU code (build_sm_arch); what they cannot
// say goes to `notes`, each naming the build.
std::vector<std::string> build_sm_arch(const Wheel& w, std::vector<std::string>& notes) {
  SmArch arch = build_sm_arch(build_gpu_code(w));
  for (const std::string& note : arch.notes)
    notes.push_back(fmt::format("{}: sm_arch: {}", w.build_label().str(), note));
  return arch.values;
}

}  // namespace

std::optional<VariantProperties> variant_properties(const VariantLabel& label, std::string& why,
                                                    const std::vector<std::string>& sm_arch) {
  VariantProperties v;
  v.label = label.str();
  // The label's own property (label_property): for CUDA N the lower bound N, since a build for
  // CUDA N runs on a driver of CUDA N or later and the provider prefers the highest bound a
  // driver meets; for a CPU level its level alone, since the x86-64 provider matches a CPU of
  // level N with each of v1 .. vN, highest first (v1 .. v3 for a v3 build would match a v2 CPU).
  if (auto property = label_property(v.label)) {
    v.properties[property->name_space][property->feature] = {property->value};
    if (label.selector() == Selector::cuda && !sm_arch.empty()) v.properties["nvidia"]["sm_arch"] = sm_arch;
    return v;
  }
  why = fmt::format(
      "{} (torch builds have no variant provider installers serve: uv serves the nvidia and "
      "x86_64 namespaces, not PyTorch's; merge them instead)",
      label.str());
  return std::nullopt;
}

namespace {

// Each build's variant properties, in the order of `wheels`; a problem for each build whose
// label has none.
std::vector<VariantProperties> build_properties(const std::vector<Wheel>& wheels, const VariantsOptions& options,
                                                std::vector<std::string>& notes, Problems& problems) {
  std::vector<VariantProperties> variants;
  for (const Wheel& w : wheels) {
    std::vector<std::string> sm_arch;
    // GPU code says nothing about a CPU build's properties: not read there.
    if (options.sm_arch && w.build_label().selector() == Selector::cuda) sm_arch = build_sm_arch(w, notes);
    std::string why;
    if (auto v = variant_properties(w.build_label(), why, sm_arch))
      variants.push_back(std::move(*v));
    else
      problems.push_back({ProblemKind::usage,
                          w.path,
                          {},
                          "no variant properties for this build's label",
                          "a CUDA label (cuNN) or an x86-64 level (x86_64_vN)",
                          why});
  }
  return variants;
}

// The variant wheels' plans, plans[i] of wheels[i]: each build alone, as a merge of one build
// with its variant.json, under the release's name and version.
std::vector<MergePlan> plan_variant_wheels(const std::vector<Wheel>& wheels,
                                           const std::vector<VariantProperties>& variants, const MergeOptions& options,
                                           Problems& problems) {
  std::vector<MergePlan> plans;
  for (size_t i = 0; i < wheels.size(); ++i) {
    MergeOptions one = options;
    one.single_build_loader = false;  // the installer chose the build
    std::string document = variants_document({variants[i]});
    if (std::string why = variant_document_problem(document, variants[i].label); !why.empty())  // as verify reads it
      throw std::logic_error("the variant.json written for " + variants[i].label + " is invalid: " + why);
    one.dist_info_files["variant.json"] = std::move(document);
    auto plan = plan_merge(std::span<const Wheel>(&wheels[i], 1), one, problems);
    if (!plan) continue;
    plan->filename = variant_filename(plan->filename, wheels[i].build_label());
    if (!plans.empty() && plan->dist_info != plans.front().dist_info)
      problems.push_back({ProblemKind::invalid_input,
                          wheels[i].display,
                          {},
                          "a different release than the other builds",
                          "the name and version of " + release_of(plans.front()),
                          release_of(*plan)});
    plans.push_back(std::move(*plan));
  }
  return plans;
}

// Removes what `result` says was written.
void remove_written(const VariantsResult& result) {
  for (const std::string& path : result.wheels) std::remove(path.c_str());
  if (result.merged) std::remove(result.merged->c_str());
}

// Writes the variant wheels, plans[i] of wheels[i] with the properties variants[i], and the
// merged wheel where planned, into `result`; false, with none of them left, where one fails.
bool write_planned(const std::vector<MergePlan>& plans, std::optional<MergePlan>& merged,
                   const std::vector<Wheel>& wheels, const std::vector<VariantProperties>& variants,
                   const std::string& out_dir, DosTime time, VariantsResult& result, Problems& problems) {
  for (size_t i = 0; i < plans.size(); ++i) {
    auto written = write_wheel(plans[i], std::span<const Wheel>(&wheels[i], 1), out_dir, time, problems);
    if (!written) {
      remove_written(result);
      return false;
    }
    result.wheels.push_back(*written);
    result.labels.push_back(wheels[i].build_label());
    const auto nvidia = variants[i].properties.find("nvidia");
    const bool has_sm_arch = nvidia != variants[i].properties.end() && nvidia->second.count("sm_arch");
    result.sm_arch.push_back(has_sm_arch ? nvidia->second.at("sm_arch") : std::vector<std::string>());
    result.warnings.insert(result.warnings.end(), plans[i].warnings.begin(), plans[i].warnings.end());
  }
  if (!merged) return true;
  auto written = write_wheel(*merged, wheels, out_dir, time, problems);
  if (!written) {
    remove_written(result);
    return false;
  }
  result.merged = *written;
  result.warnings.insert(result.warnings.end(), merged->warnings.begin(), merged->warnings.end());
  std::vector<PlannedMember>().swap(merged->members);
  result.merged_plan = std::move(merged);
  return true;
}

// `warnings` with each said once, in the order first said: an input's own warnings come back
// in each plan that reads it (its variant wheel's and the merged wheel's).
std::vector<std::string> said_once(std::vector<std::string> warnings) {
  std::set<std::string> said;
  std::vector<std::string> once;
  for (std::string& w : warnings)
    if (said.insert(w).second) once.push_back(std::move(w));
  return once;
}

}  // namespace

std::optional<VariantsResult> write_variants(const std::vector<WheelInput>& inputs, const VariantsOptions& options,
                                             const std::string& out_dir, DosTime time, Problems& problems) {
  const size_t before = problems.size();
  auto read = read_inputs(inputs, options.merge, problems);  // every input with a label
  if (!read) return std::nullopt;
  std::vector<Wheel>& wheels = *read;
  std::sort(wheels.begin(), wheels.end(),
            [](const Wheel& a, const Wheel& b) { return a.build_label() < b.build_label(); });

  // Every output planned before any is written.
  std::vector<std::string> notes;
  const std::vector<VariantProperties> variants = build_properties(wheels, options, notes, problems);
  if (problems.size() != before) return std::nullopt;
  std::vector<MergePlan> plans = plan_variant_wheels(wheels, variants, options.merge, problems);
  std::optional<MergePlan> merged;
  if (options.with_merged) merged = plan_merge(wheels, options.merge, problems);
  if (problems.size() != before) return std::nullopt;

  VariantsResult result;
  result.warnings = std::move(notes);
  if (!write_planned(plans, merged, wheels, variants, out_dir, time, result, problems)) return std::nullopt;
  result.warnings = said_once(std::move(result.warnings));
  // {name}-{version}-variants.json: the name and version as in the wheels' file names.
  const std::string index = release_of(plans.front()) + "-variants.json";
  std::string error;
  if (!write_text_file(out_dir, index, variants_document(variants), error)) {
    remove_written(result);
    problems.push_back({ProblemKind::other,
                        (std::filesystem::path(out_dir) / index).string(),
                        {},
                        "cannot write the variants index",
                        {},
                        error});
    return std::nullopt;
  }
  result.index = (std::filesystem::path(out_dir) / index).string();
  return result;
}

}  // namespace wm
