#include "cli/render.hpp"

#include "merger/base/problem.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdio>

namespace wm::cli {

namespace {
int first_stdout_error = 0;
}

void to_stdout(std::string_view text) {
  if (first_stdout_error != 0) return;  // what follows a lost write would mislead
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) first_stdout_error = errno ? errno : EIO;
}

int stdout_error() {
  if (first_stdout_error == 0 && (std::fflush(stdout) != 0 || std::ferror(stdout)))
    first_stdout_error = errno ? errno : EIO;
  return first_stdout_error;
}

nlohmann::json to_json(const VerifyReport& r) {
  return {{"file", r.file},
          {"valid", true},
          {"files", r.files},
          {"merged", r.merged()},
          {"warnings", r.warnings},
          {"loaders", r.loaders},
          {"variants_index", r.variants_index}};
}

nlohmann::json to_json(const InspectReport& r) {
  nlohmann::json loaders = nlohmann::json::array();
  for (const InspectReport::Loader& l : r.loaders) {
    nlohmann::json modules = nlohmann::json::object(), preload = nlohmann::json::object(),
                   build_info = nlohmann::json::object(), gpu_code = nlohmann::json::object();
    for (const auto& [label, build] : l.manifest.builds) {
      modules[label.str()] = build.modules;
      preload[label.str()] = build.preload;
      build_info[label.str()] = build.build_info;
      gpu_code[label.str()] = build.gpu_code.empty() ? nlohmann::json::object() : nlohmann::json(build.gpu_code);
    }
    loaders.push_back({{"package", l.manifest.package},
                       {"loader", l.path},
                       {"selector", selector_name(l.manifest.selector)},
                       {"variants", label_strings(l.manifest.variants)},
                       {"driver_fallback", l.manifest.driver_fallback},
                       {"sources", l.manifest.sources()},
                       {"wheelmerge", l.manifest.wheelmerge},
                       {"modules", modules},
                       {"preload", preload},
                       {"build_info", build_info},
                       {"gpu_code", gpu_code}});
  }
  nlohmann::json files = nlohmann::json::array();
  for (const InspectReport::File& f : r.files) {
    files.push_back({{"path", f.path},
                     {"size", f.size},
                     {"compressed_size", f.compressed_size},
                     {"variant", f.variant ? nlohmann::json(*f.variant) : nlohmann::json(nullptr)}});
    if (!f.gpu_code.empty()) files.back()["gpu_code"] = f.gpu_code;
    if (!f.gpu_code_unreadable.empty()) files.back()["gpu_code_unreadable"] = f.gpu_code_unreadable;
    if (f.imports) files.back()["imports"] = *f.imports;
    if (!f.imports_unreadable.empty()) files.back()["imports_unreadable"] = f.imports_unreadable;
  }
  nlohmann::json runtime = nlohmann::json::object();
  for (const auto& [label, needs] : r.runtime)
    for (const InspectReport::Runtime& n : needs)
      runtime[label].push_back(
          {{"library", n.library},
           {"member", n.member},
           {"distribution", n.distribution},
           {"toolkit_extra", n.toolkit_extra},
           {"provided_by", n.provided_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.provided_by)}});
  return {{"file", r.file},
          {"valid", true},
          {"name", r.name},
          {"version", r.version},
          {"tags", r.tags},
          {"root_is_purelib", r.root_is_purelib},
          {"generator", r.generator},
          {"warnings", r.warnings},
          {"merged", r.merged()},
          {"variants", r.variants},
          {"variant", r.variant_label.empty()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json{{"label", r.variant_label}, {"properties", r.variant_properties}}},
          {"loaders", loaders},
          {"files", files},
          {"shared_bytes", r.shared_bytes},
          {"variant_bytes", r.variant_bytes},
          {"sm_arch", r.sm_arch},
          {"sm_arch_notes", r.sm_arch_notes},
          {"runtime", runtime}};
}

void print_text(const InspectReport& r) {
  // Every value comes from the wheel: printed escaped.
  print_out("{} {}: valid wheel\n", printable(r.name), printable(r.version));
  print_out("tags: {}\n", fmt::join(r.tags, ", "));
  if (!r.variant_label.empty())
    print_out("variant wheel {}: {}\n", printable(r.variant_label),
              printable(fmt::format("{}", fmt::join(r.variant_properties, ", "))));
  for (const InspectReport::File& f : r.files) {
    if (!f.gpu_code.empty()) print_out("GPU code: {}: {}\n", printable(f.path), fmt::join(f.gpu_code, " "));
    if (!f.gpu_code_unreadable.empty())
      print_out("GPU code: {}: unreadable ({})\n", printable(f.path), printable(f.gpu_code_unreadable));
  }
  for (const auto& [label, values] : r.sm_arch)
    print_out("sm_arch{}: {}\n", label.empty() ? "" : " of " + label,
              values.empty() ? "none (any GPU)" : fmt::format("{}", fmt::join(values, " ")));
  for (const std::string& note : r.sm_arch_notes) print_out("note: {}\n", printable(note));
  for (const auto& [label, needs] : r.runtime)
    for (const InspectReport::Runtime& n : needs)
      print_out("CUDA runtime of {}: {} (linked by {}) from {}: {}\n", printable(label), printable(n.library),
                printable(n.member), n.distribution,
                n.provided_by.empty() ? "no requirement brings it" : "brought by " + printable(n.provided_by));
  if (!r.merged()) {
    print_out("not a merged wheel: no wheelmerge loader\n");
    return;
  }
  print_out("variants: {}\n", fmt::join(r.variants, ", "));
  for (const InspectReport::Loader& l : r.loaders)
    print_out("loader: {} (package {}, selector {}, driver fallback {})\n", printable(l.path),
              printable(l.manifest.package), selector_name(l.manifest.selector),
              l.manifest.driver_fallback ? "on" : "off");
  for (const InspectReport::Loader& l : r.loaders)
    for (const VariantLabel& label : l.manifest.variants)  // in selection order, lowest first
      if (const BuildFiles& build = l.manifest.builds.at(label); !build.build_info.empty())
        print_out("{} built with: {}\n", printable(label.str()), printable(nlohmann::json(build.build_info).dump()));
  print_out("shared: {} bytes\n", r.shared_bytes);
  for (const auto& [label, bytes] : r.variant_bytes) print_out("{}: {} bytes\n", label, bytes);
  for (const InspectReport::File& f : r.files)
    print_out("  {:>6} {:>12} {}\n", f.variant.value_or("shared"), f.size, printable(f.path));
}

}  // namespace wm::cli
