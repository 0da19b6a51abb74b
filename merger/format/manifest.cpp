#include "merger/format/manifest.hpp"

#include "merger/format/fatbin.hpp"
#include "merger/format/label.hpp"
#include "merger/zip/zip_archive.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace wm {

std::vector<std::string> LoaderManifest::sources() const {
  if (selector != Selector::cuda) return {};
  if (!cuda_bindings) return {"runtime", "driver"};
  if (driver_fallback) return {"cuda-bindings", "runtime", "driver"};
  return {"cuda-bindings"};
}

std::string LoaderManifest::to_json() const {
  nlohmann::json j;
  j["format"] = kFormat;
  j["wheelmerge"] = wheelmerge;
  j["package"] = package;
  j["distribution"] = distribution;
  j["selector"] = std::string(selector_name(selector));
  j["variants"] = label_strings(variants);
  j["sources"] = sources();
  static const BuildFiles kNone;
  for (const VariantLabel& label : variants) {  // every build has its sections, files or not
    auto it = builds.find(label);
    const BuildFiles& build = it == builds.end() ? kNone : it->second;
    auto extra = extras.find(label);
    const std::string& key = label.str();
    j["extras"][key] = extra == extras.end() ? nlohmann::json::array() : nlohmann::json(extra->second);
    j["modules"][key] = nlohmann::json(build.modules);
    j["files"][key] = nlohmann::json(build.files);
    j["preload"][key] = nlohmann::json(build.preload);
    j["build_info"][key] = nlohmann::json(build.build_info);
    j["gpu_code"][key] = build.gpu_code.empty() ? nlohmann::json::object() : nlohmann::json(build.gpu_code);
  }
  return j.dump(-1, ' ', /*ensure_ascii=*/true);
}

namespace {

bool all_strings(const nlohmann::json& array) {
  return array.is_array() &&
         std::all_of(array.begin(), array.end(), [](const nlohmann::json& v) { return v.is_string(); });
}

// An object whose values are all strings, as a map; nullopt for anything else.
std::optional<std::map<std::string, std::string>> string_map(const nlohmann::json& node) {
  if (!node.is_object()) return std::nullopt;
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : node.items()) {
    if (!value.is_string()) return std::nullopt;
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// An object of paths to non-empty lists of GPU code as GpuCode spells it, each once, in its order.
std::optional<std::map<std::string, std::vector<std::string>>> gpu_code_map(const nlohmann::json& node) {
  if (!node.is_object()) return std::nullopt;
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [key, value] : node.items()) {
    if (!all_strings(value) || value.empty()) return std::nullopt;
    std::vector<std::string> list = value.get<std::vector<std::string>>();
    std::optional<GpuCode> last;
    for (const std::string& each : list) {
      auto code = GpuCode::parse(each);
      if (!code || (last && !(*last < *code))) return std::nullopt;
      last = code;
    }
    out.emplace(key, std::move(list));
  }
  return out;
}

// The per-build sections of `j` into `m`, whose variants are `labels`: empty, or what is wrong.
std::string read_sections(const nlohmann::json& j, const std::set<std::string>& labels, LoaderManifest& m) {
  for (const char* section : {"extras", "modules", "files", "preload", "build_info", "gpu_code"}) {
    if (!j.contains(section) || !j[section].is_object()) return fmt::format("{} is not an object", section);
    for (const auto& [label, value] : j[section].items())
      if (!labels.count(label)) return fmt::format("{} has a build the manifest does not list: {}", section, label);
    for (const VariantLabel& variant : m.variants) {
      const std::string& label = variant.str();
      if (!j[section].contains(label)) return fmt::format("{} lacks the build {}", section, label);
      const nlohmann::json& value = j[section][label];
      BuildFiles& build = m.builds[variant];
      std::string_view s = section;
      if (s == "preload" || s == "extras") {
        if (!all_strings(value)) return fmt::format("{} of {} is not a list of strings", section, label);
        auto list = value.get<std::vector<std::string>>();
        if (s == "preload")
          build.preload = std::move(list);
        else if (!list.empty())
          m.extras[variant] = std::move(list);
        continue;
      }
      if (s == "gpu_code") {
        auto code = gpu_code_map(value);
        if (!code) return fmt::format("gpu_code of {} is not an object of GPU code lists", label);
        build.gpu_code = std::move(*code);
        continue;
      }
      auto map = string_map(value);
      if (!map) return fmt::format("{} of {} is not an object of strings", section, label);
      (s == "modules" ? build.modules : s == "files" ? build.files : build.build_info) = std::move(*map);
    }
  }
  return {};
}

}  // namespace

std::optional<LoaderManifest> LoaderManifest::parse(std::string_view text, std::string& why) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  return from_json(j, why);
}

std::optional<LoaderManifest> LoaderManifest::from_json(const nlohmann::json& j, std::string& why) {
  auto fail = [&](std::string reason) -> std::optional<LoaderManifest> {
    why = std::move(reason);
    return std::nullopt;
  };
  if (!j.is_object()) return fail("not a JSON object");
  static const std::set<std::string> kKeys{"format",   "wheelmerge", "package", "distribution", "selector",
                                           "variants", "sources",    "extras",  "modules",      "files",
                                           "preload",  "build_info", "gpu_code"};
  for (const auto& [key, value] : j.items())
    if (!kKeys.count(key)) return fail(fmt::format("it has an unknown key {}", nlohmann::json(key).dump()));
  if (!j.contains("format") || !j["format"].is_number_integer() || j["format"] != kFormat)
    return fail(fmt::format("format is not {}", kFormat));
  LoaderManifest m;
  std::string selector;  // read into m.selector once the fields before it are checked
  for (auto [key, field] : {std::pair{"wheelmerge", &m.wheelmerge}, std::pair{"package", &m.package},
                            std::pair{"distribution", &m.distribution}, std::pair{"selector", &selector}}) {
    if (!j.contains(key) || !j[key].is_string()) return fail(fmt::format("{} is not a string", key));
    *field = j[key].get<std::string>();
  }
  if (m.package.empty()) return fail("package is empty");
  // The version goes into a comment line of the loader as it is: nothing but what versions hold.
  if (m.wheelmerge.size() > 64 ||
      m.wheelmerge.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+!_-") !=
          std::string::npos)
    return fail(fmt::format("wheelmerge is not a version: {}", nlohmann::json(m.wheelmerge.substr(0, 64)).dump()));
  if (auto known = parse_selector(selector))
    m.selector = *known;
  else
    return fail("selector is not one of cuda, torch, cpu");
  if (!j.contains("variants") || !all_strings(j["variants"]) || j["variants"].empty())
    return fail("variants is not a list of labels");
  std::set<std::string> labels;  // as the sections' keys spell them
  for (const auto& v : j["variants"]) {
    std::string label = v.get<std::string>();
    auto parsed = VariantLabel::parse(label);
    if (!parsed) return fail(fmt::format("variant {} is not a variant label", nlohmann::json(label).dump()));
    if (parsed->selector() != m.selector)
      return fail(fmt::format("variant {} is no label of selector {}", label, selector_name(m.selector)));
    if (!labels.insert(label).second) return fail(fmt::format("variant {} is listed twice", label));
    m.variants.push_back(*parsed);
  }
  if (!j.contains("sources") || !all_strings(j["sources"])) return fail("sources is not a list");
  const auto sources = j["sources"].get<std::vector<std::string>>();
  m.cuda_bindings = sources.empty() || sources.front() == "cuda-bindings";
  m.driver_fallback = sources.size() > 1;
  if (sources != m.sources())
    return fail(fmt::format("sources {} is none of the orders a loader knows", nlohmann::json(sources).dump()));
  if (std::string wrong = read_sections(j, labels, m); !wrong.empty()) return fail(std::move(wrong));
  return m;
}

std::string manifest_archive_path(const std::string& package_dir, std::string relative) {
  std::string dir = package_dir;
  size_t at = 0;
  for (; relative.compare(at, 3, "../") == 0; at += 3) {
    if (dir.empty()) return {};  // above the wheel's root
    dir.resize(dir.find('/') == std::string::npos ? 0 : dir.rfind('/'));
  }
  relative.erase(0, at);
  if (!unsafe_name_reason(relative).empty() || relative.ends_with('/')) return {};
  return dir.empty() ? relative : dir + "/" + relative;
}

std::optional<std::string_view> site_packages_view(std::string_view member) {
  // In a valid wheel the one top-level directory named "*.data" is the wheel's data directory.
  size_t slash = member.find('/');
  if (slash == std::string_view::npos || !member.substr(0, slash).ends_with(".data")) return member;
  std::string_view rest = member.substr(slash + 1);
  for (std::string_view key : {"purelib/", "platlib/"})
    if (rest.starts_with(key)) return rest.substr(key.size());
  return std::nullopt;
}

std::optional<std::string> site_packages_path(std::string_view member) {
  auto view = site_packages_view(member);
  return view ? std::optional<std::string>(*view) : std::nullopt;
}

std::string ManifestResolver::installed(const std::string& loader_path, const std::string& relative) {
  auto loader = site_packages_path(loader_path);
  if (!loader) return {};
  size_t slash = loader->rfind('/');
  return manifest_archive_path(slash == std::string::npos ? std::string() : loader->substr(0, slash), relative);
}

std::optional<std::string_view> ManifestResolver::member(std::string_view installed) const {
  auto it = by_installed_.find(installed);
  if (it == by_installed_.end()) return std::nullopt;
  return it->second;
}

}  // namespace wm
