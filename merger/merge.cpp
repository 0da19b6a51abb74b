#include "merger/merge.hpp"

#include "merger/loader.hpp"
#include "merger/member_stream.hpp"
#include "merger/parallel.hpp"
#include "merger/verify.hpp"
#include "merger/write.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>

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
  for (const WheelInput& in : inputs) {
    std::string label = detect_label(in);
    if (label.empty()) {
      problems.push_back({ProblemKind::usage, in.path, {}, "no variant label",
                          "PATH=cuNN, a .cuNN suffix before .whl, or a +cuNN local version", "none"});
    } else if (!label_major(label)) {
      problems.push_back({ProblemKind::usage, in.path, {}, "invalid variant label", "cu followed by the CUDA major", label});
    } else if (auto [it, fresh] = labels.emplace(label, in.path); !fresh) {
      problems.push_back({ProblemKind::usage, in.path, {}, "two inputs with the same variant label",
                          "one input per label", fmt::format("{} also for {}", label, it->second)});
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

std::optional<nlohmann::json> inspect_wheel(const std::string& path, Problems& problems) {
  auto wheel = read_wheel(WheelInput{path, {}}, problems);
  if (!wheel) return std::nullopt;
  nlohmann::json out;
  out["file"] = path;
  out["valid"] = true;
  out["name"] = wheel->metadata.one("Name").value_or(wheel->name.name);
  out["version"] = wheel->name.version;
  out["tags"] = wheel->name.expanded_tags();
  out["root_is_purelib"] = wheel->wheel_fields.one("Root-Is-Purelib").value_or("");
  out["generator"] = wheel->wheel_fields.one("Generator").value_or("");
  out["warnings"] = wheel->warnings;

  // Loaders and their manifests: which stored files belong to which variant.
  std::map<std::string, std::string> variant_of;  // stored path -> label
  nlohmann::json loaders = nlohmann::json::array();
  std::vector<std::string> variants;
  // The manifests are checked as `verify` checks them before anything is read from them.
  const size_t before = problems.size();
  std::vector<LoaderFiles> checked = checked_loaders(*wheel, problems);
  if (problems.size() != before) return std::nullopt;
  for (const LoaderFiles& l : checked) {
    auto manifest = nlohmann::json::parse(*manifest_of_loader(l.loader_source));
    const WheelFile& f = *wheel->find(l.loader_path);
    const std::string package_dir = f.path.substr(0, f.path.size() - kLoaderModule.size() - 1);
    for (auto& [label, files] : manifest["files"].items()) {
      for (auto& [original, stored] : files.items())
        variant_of[manifest_archive_path(package_dir, stored.get<std::string>())] = label;
      for (auto& lib : manifest["preload"][label]) variant_of[manifest_archive_path(package_dir, lib.get<std::string>())] = label;
    }
    variants = manifest["variants"].get<std::vector<std::string>>();
    loaders.push_back({{"package", manifest["package"]},
                       {"loader", f.path},
                       {"variants", manifest["variants"]},
                       {"driver_fallback", manifest["driver_fallback"].get<int>() != 0},
                       {"modules", manifest["modules"]},
                       {"preload", manifest["preload"]},
                       {"build_info", manifest.value("build_info", nlohmann::json::object())}});
  }
  out["merged"] = !loaders.empty();
  out["variants"] = variants;
  out["loaders"] = loaders;
  nlohmann::json files = nlohmann::json::array();
  uint64_t shared_bytes = 0;
  std::map<std::string, uint64_t> variant_bytes;
  for (const WheelFile& f : wheel->files) {
    auto it = variant_of.find(f.path);
    nlohmann::json entry = {{"path", f.path}, {"size", f.size},
                            {"compressed_size", wheel->zip.entries[f.entry].compressed_size}};
    if (it != variant_of.end()) {
      entry["variant"] = it->second;
      variant_bytes[it->second] += f.size;
    } else {
      entry["variant"] = nullptr;
      shared_bytes += f.size;
    }
    files.push_back(entry);
  }
  out["files"] = files;
  out["shared_bytes"] = shared_bytes;
  out["variant_bytes"] = variant_bytes;
  return out;
}

}  // namespace wm
