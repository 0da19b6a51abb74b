#include "merger/report.hpp"

#include "merger/format/variant_metadata.hpp"
#include "merger/gpu_code.hpp"
#include "merger/linkage.hpp"
#include "merger/loader.hpp"
#include "merger/runtime_wheels.hpp"
#include "merger/verify.hpp"
#include "merger/wheel.hpp"
#include "merger/zip/member_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace wm {

namespace {
// A variants index as uv and variantlib read it, the file bounded before it is read.
std::optional<VerifyReport> verify_variants_index(const std::string& path, Problems& problems) {
  const std::string display = std::filesystem::path(path).filename().string();
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    problems.push_back({ProblemKind::other, path, {}, "cannot read the variants index", {}, error.message()});
    return std::nullopt;
  }
  if (size > kMaxVariantFile) {
    problems.push_back({ProblemKind::invalid_input,
                        display,
                        {},
                        "variants index larger than wheelmerge reads",
                        fmt::format("at most {} bytes", kMaxVariantFile),
                        fmt::format("{} bytes", size)});
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size())) || in.peek() != EOF) {
    problems.push_back(
        {ProblemKind::other, path, {}, "cannot read the variants index", {}, "a read error or a changing file"});
    return std::nullopt;
  }
  if (std::string why = variant_index_problem(text); !why.empty()) {
    problems.push_back({ProblemKind::invalid_input,
                        display,
                        {},
                        // `why` names the place and says what was expected and found there.
                        "not a variants index installers read alike: " + why,
                        {},
                        {}});
    return std::nullopt;
  }
  VerifyReport report;
  report.file = path;
  report.variants_index = true;
  return report;
}

// A variant wheel's nvidia :: sm_arch values (its variant.json, read and checked against its
// label as the wheel was read): each must be backed by the GPU code of its files, or an
// installer puts it on GPUs it has no code for.
void check_sm_arch_claim(const Wheel& wheel, Problems& problems) {
  if (wheel.name.variant.empty()) return;
  const std::string member = wheel.dist_info + "/variant.json";
  const WheelFile* f = wheel.find(member);
  if (!f) return;
  auto text = read_member(wheel.zip, wheel.zip.entries[f->entry], kMaxVariantFile, wheel.display, problems);
  std::string why;
  const auto doc = text ? parse_variant_document(*text, why) : std::nullopt;
  if (!doc || !doc->variants.count(wheel.name.variant)) return;
  const VariantPropertyMap& properties = doc->variants.at(wheel.name.variant);
  const auto nvidia = properties.find("nvidia");
  if (nvidia == properties.end() || !nvidia->second.count("sm_arch")) return;
  const BuildGpuCode code = build_gpu_code(wheel);
  const bool has_code = !code.files.empty() || !code.unreadable.empty();
  if (auto problem = sm_arch_claim_problem(nvidia->second.at("sm_arch"), build_sm_arch(code), has_code)) {
    problem->file = wheel.display;
    problem->member = member;
    problems.push_back(std::move(*problem));
  }
}

// Which build each of a merged wheel's variant files belongs to, by its loaders' manifests.
std::map<std::string, VariantLabel, std::less<>> builds_of_members(const Wheel& wheel,
                                                                   const std::vector<FoundLoader>& loaders) {
  std::vector<std::string> members;
  for (const WheelFile& f : wheel.files) members.emplace_back(f.path);
  const ManifestResolver resolver(members);
  std::map<std::string, VariantLabel, std::less<>> build_of;
  for (const FoundLoader& l : loaders) {
    auto mark = [&](const std::string& relative, const VariantLabel& label) {
      if (auto member = resolver.member(ManifestResolver::installed(l.loader_path, relative)))
        build_of.insert_or_assign(std::string(*member), label);
    };
    for (const auto& [label, build] : l.manifest.builds) {
      for (const auto& [original, stored] : build.files) mark(stored, label);
      for (const std::string& lib : build.preload) mark(lib, label);
    }
  }
  return build_of;
}

// The builds of a wheel: a merged wheel's, by its manifests; a single build's, by the label its
// name carries (a ".cu13" suffix, a "+cu13" local version, a distribution name ending in one:
// cupy-cuda12x); none for a wheel of no label.
std::vector<VariantLabel> builds_of(const Wheel& wheel, const std::vector<FoundLoader>& loaders) {
  std::set<VariantLabel> distinct;
  for (const FoundLoader& l : loaders) distinct.insert(l.manifest.variants.begin(), l.manifest.variants.end());
  std::vector<VariantLabel> builds(distinct.begin(), distinct.end());
  if (loaders.empty()) {
    if (wheel.label)
      builds.push_back(*wheel.label);
    else if (auto suffix = name_suffix_label(wheel.name.name))
      builds.push_back(suffix->label);
  }
  return builds;
}
}  // namespace

std::optional<VerifyReport> verify_wheel(const std::string& path, Problems& problems) {
  if (path.ends_with("-variants.json")) return verify_variants_index(path, problems);
  const size_t before = problems.size();
  auto wheel = read_wheel(WheelInput{path, {}}, problems);
  if (!wheel) return std::nullopt;
  std::vector<FoundLoader> loaders = find_loaders(*wheel, problems);
  const std::vector<VariantLabel> builds = builds_of(*wheel, loaders);
  // Every native file against the wheel's platform tags and the CUDA major of its builds.
  if (problems.size() == before) check_native_files(*wheel, builds, builds_of_members(*wheel, loaders), problems);
  if (problems.size() == before) check_sm_arch_claim(*wheel, problems);
  if (problems.size() != before) return std::nullopt;
  VerifyReport report{path, wheel->files.size(), {}, wheel->warnings};
  if (auto warning = libstdcxx_warning(*wheel)) report.warnings.push_back(std::move(*warning));
  // A single build's CUDA runtime against its requirements (a merged wheel's builds were
  // checked as they were merged).
  if (loaders.empty())
    for (const VariantLabel& label : builds)
      for (std::string& warning : runtime_warnings(wheel->display, label, runtime_needs(*wheel, label)))
        report.warnings.push_back(std::move(warning));
  for (const FoundLoader& l : loaders) report.loaders.push_back(l.loader_path);
  return report;
}

namespace {
// Fills the files' GPU code and each build's sm_arch values.
void add_gpu_code(const Wheel& wheel, InspectReport& r) {
  BuildGpuCode code = build_gpu_code(wheel);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < r.files.size(); ++i) position[r.files[i].path] = i;
  for (const auto& [path, found] : code.files) r.files[position.at(path)].gpu_code = spelled(found);
  for (const auto& [path, why] : code.unreadable) r.files[position.at(path)].gpu_code_unreadable = why;
  std::vector<std::string> builds = r.variants;
  if (builds.empty()) builds.push_back(std::string());
  for (const std::string& label : builds) {
    // This build's files: its own and the shared ones.
    auto ours = [&](const std::string& path) {
      const auto& variant = r.files[position.at(path)].variant;
      return !variant || *variant == label;
    };
    BuildGpuCode build;
    for (const auto& f : code.files)
      if (ours(f.first)) build.files.push_back(f);
    for (const auto& u : code.unreadable)
      if (ours(u.first)) build.unreadable.push_back(u);
    SmArch arch = build_sm_arch(build);
    r.sm_arch[label] = arch.values;
    for (const std::string& note : arch.notes) r.sm_arch_notes.push_back(label.empty() ? note : label + ": " + note);
  }
}
}  // namespace

std::optional<InspectReport> inspect_wheel(const std::string& path, Problems& problems, bool gpu_code) {
  const size_t before = problems.size();
  auto wheel = read_wheel(WheelInput{path, {}}, problems);
  if (!wheel) return std::nullopt;
  // The manifests are checked as `verify` checks them before anything is read from them.
  std::vector<FoundLoader> loaders = find_loaders(*wheel, problems);
  if (problems.size() != before) return std::nullopt;
  InspectReport r;
  r.file = path;
  r.name = wheel->metadata.one("Name").value_or(wheel->name.name);
  r.version = wheel->name.version;
  r.tags = wheel->name.expanded_tags();
  r.root_is_purelib = wheel->wheel_fields.one("Root-Is-Purelib").value_or("");
  r.generator = wheel->wheel_fields.one("Generator").value_or("");
  r.warnings = wheel->warnings;
  if (auto warning = libstdcxx_warning(*wheel)) r.warnings.push_back(std::move(*warning));
  if (!wheel->name.variant.empty()) {  // its variant.json was checked as the wheel was read
    r.variant_label = wheel->name.variant;
    if (const WheelFile* f = wheel->find(wheel->dist_info + "/variant.json"))
      if (auto text = read_member(wheel->zip, wheel->zip.entries[f->entry], kMaxVariantFile, wheel->display, problems))
        r.variant_properties = variant_property_strings(*text, r.variant_label);
  }
  // Which stored files belong to which build.
  const auto variant_of = builds_of_members(*wheel, loaders);
  const std::vector<VariantLabel> builds = builds_of(*wheel, loaders);
  for (FoundLoader& l : loaders) {
    r.variants = label_strings(l.manifest.variants);
    r.loaders.push_back({std::move(l.loader_path), std::move(l.manifest)});
  }
  for (const WheelFile& f : wheel->files) {
    InspectReport::File file{std::string(f.path), f.size, wheel->zip.entries[f.entry].compressed_size,
                             std::nullopt,        {},     {},
                             std::nullopt,        {}};
    if (auto pe = wheel->native_machines.find(f.path); pe != wheel->native_machines.end() && !pe->second.macho) {
      if (pe->second.imports_unreadable.empty())
        file.imports = pe->second.imports;
      else
        file.imports_unreadable = pe->second.imports_unreadable;
    }
    if (auto it = variant_of.find(file.path); it != variant_of.end()) {
      file.variant = it->second.str();
      r.variant_bytes[it->second.str()] += f.size;
    } else {
      r.shared_bytes += f.size;
    }
    r.files.push_back(std::move(file));
  }
  if (gpu_code) add_gpu_code(*wheel, r);
  for (const VariantLabel& label : builds)
    for (RuntimeNeed& n : runtime_needs(*wheel, label, &variant_of))
      r.runtime[label.str()].push_back({std::move(n.library), std::move(n.member), std::string(n.wheel.distribution),
                                        std::string(n.wheel.toolkit_extra), std::move(n.provided_by)});
  if (problems.size() != before) return std::nullopt;
  return r;
}

}  // namespace wm
