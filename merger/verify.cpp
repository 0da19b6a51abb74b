#include "merger/verify.hpp"

#include "merger/loader.hpp"
#include "merger/member_stream.hpp"
#include "merger/text.hpp"
#include "merger/wheel.hpp"
#include "merger/zip_archive.hpp"

#include <fmt/format.h>
#include <unordered_set>
#include <nlohmann/json.hpp>

namespace wm {

std::string manifest_archive_path(const std::string& package_dir, std::string relative) {
  std::string dir = package_dir;
  for (; relative.rfind("../", 0) == 0; relative = relative.substr(3)) {
    if (dir.empty()) return {};  // above the wheel's root
    dir = dir.find('/') == std::string::npos ? "" : dir.substr(0, dir.rfind('/'));
  }
  if (!unsafe_name_reason(relative).empty() || relative.ends_with('/')) return {};
  return dir.empty() ? relative : dir + "/" + relative;
}

namespace {
// The import line at the start of a line, ended by the file's own newline (LF, CRLF or CR).
bool imports_loader(std::string_view source) {
  const std::string_view line = kLoaderImport.substr(0, kLoaderImport.size() - 1);
  for (size_t at = source.find(line); at != std::string_view::npos; at = source.find(line, at + 1)) {
    bool line_start = at == 0 || source[at - 1] == '\n' || source[at - 1] == '\r' ||
                      (at == 3 && source.starts_with("\xef\xbb\xbf"));
    size_t end = at + line.size();
    if (line_start && end < source.size() && (source[end] == '\n' || source[end] == '\r')) return true;
  }
  return false;
}
}  // namespace

void check_loaders(const std::string& display, const std::vector<LoaderFiles>& loaders,
                   const std::set<std::string>& paths, Problems& problems) {
  auto fail = [&](const std::string& member, std::string what, std::string expected, std::string found) {
    problems.push_back({ProblemKind::invalid_input, display, member, std::move(what), std::move(expected), std::move(found)});
  };
  std::set<std::string> listed;  // every file some manifest names
  std::optional<nlohmann::json> first_variants;
  for (const LoaderFiles& l : loaders) {
    const std::string package_dir = l.loader_path.substr(0, l.loader_path.rfind('/'));
    auto text = manifest_of_loader(l.loader_source);
    auto manifest = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
    auto has = [&](const char* key, bool (nlohmann::json::*is)() const noexcept) {
      return manifest.contains(key) && (manifest[key].*is)();
    };
    if (!text || manifest.is_discarded() || !manifest.is_object() || !manifest.contains("format") || manifest["format"] != 1 ||
        !has("variants", &nlohmann::json::is_array) || !has("package", &nlohmann::json::is_string) ||
        !has("distribution", &nlohmann::json::is_string) || !has("driver_fallback", &nlohmann::json::is_number_integer) ||
        !has("modules", &nlohmann::json::is_object) || !has("files", &nlohmann::json::is_object) ||
        !has("preload", &nlohmann::json::is_object) ||
        (manifest.contains("build_info") && !manifest["build_info"].is_object())) {
      fail(l.loader_path, "loader manifest malformed", "a format 1 manifest with a list of variants", text ? "other JSON or text" : "no manifest line");
      continue;
    }
    if (!imports_loader(l.init_source))
      fail(package_dir + "/__init__.py", "package does not import its loader", std::string(kLoaderImport.substr(0, kLoaderImport.size() - 1)), "no such line");
    std::unordered_set<std::string> labels;
    for (const auto& variant : manifest["variants"])
      if (variant.is_string()) labels.insert(variant.get<std::string>());
    for (const char* section : {"modules", "files", "preload", "build_info"}) {
      if (!manifest.contains(section)) continue;
      for (const auto& [label, value] : manifest[section].items())
        if (!labels.count(label))
          fail(l.loader_path, fmt::format("loader manifest malformed: {} has a build the manifest does not list", section),
               "one of the manifest's variants", label);
    }
    if (!first_variants) first_variants = manifest["variants"];
    else if (*first_variants != manifest["variants"])
      fail(l.loader_path, "loaders disagree on the variants", first_variants->dump(), manifest["variants"].dump());
    for (const auto& variant : manifest["variants"]) {
      if (!variant.is_string()) {
        fail(l.loader_path, "variant label is not a string", "\"cuNN\"", variant.dump());
        continue;
      }
      const std::string label = variant.get<std::string>();
      // Each section maps a label to an object (modules, files) or array (preload) of paths;
      // anything else is a malformed manifest, reported like any invalid input.
      auto names = [&](const char* section, bool array) -> std::optional<std::vector<std::string>> {
        std::vector<std::string> out;
        if (!manifest.contains(section) || !manifest[section].is_object()) return std::nullopt;
        const nlohmann::json& node = manifest[section].value(label, array ? nlohmann::json::array() : nlohmann::json::object());
        if (array ? !node.is_array() : !node.is_object()) return std::nullopt;
        for (const auto& value : node) {
          if (!value.is_string()) return std::nullopt;
          out.push_back(value.get<std::string>());
        }
        return out;
      };
      for (const char* section : {"modules", "files", "preload"}) {
        bool array = std::string_view(section) == "preload";
        auto rels = names(section, array);
        if (!rels) {
          fail(l.loader_path, fmt::format("loader manifest malformed: {} of {}", section, label),
               array ? "an array of paths" : "an object of paths", "other JSON");
          continue;
        }
        for (const std::string& rel : *rels) {
          std::string path = manifest_archive_path(package_dir, rel);
          if (path.empty()) {
            fail(l.loader_path, fmt::format("manifest {} of {} names a path outside the wheel", section, label),
                 "a path relative to the package, inside the wheel", rel);
            continue;
          }
          listed.insert(path);
          if (!paths.count(path))
            fail(l.loader_path, fmt::format("manifest {} of {} names a file the wheel lacks", section, label), path, "no such member");
        }
      }
    }
  }
  // A file stored under a variant label that no manifest names would never be loaded. A name
  // is labelled when one of its dot-separated pieces after the stem is a variant label.
  if (first_variants) {
    std::unordered_set<std::string> labels;
    for (const auto& variant : *first_variants)
      if (variant.is_string()) labels.insert(variant.get<std::string>());
    for (const std::string& path : paths) {
      if (listed.count(path) || path.find(".dist-info/") != std::string::npos) continue;
      std::vector<std::string> pieces = split(path.substr(path.rfind('/') + 1), '.');
      bool labelled = std::any_of(pieces.begin() + (pieces.front().empty() ? 2 : 1), pieces.end(),
                                  [&](const std::string& piece) { return labels.count(piece) > 0; });
      if (labelled) fail(path, "variant file no loader lists", "a file named in a manifest", "none names it");
    }
  }
}

std::vector<LoaderFiles> checked_loaders(const Wheel& wheel, Problems& problems) {
  std::set<std::string> paths;
  for (const WheelFile& f : wheel.files) paths.insert(f.path);
  // Loaders and their __init__.py are read whole, so what they may hold is bounded in all: a
  // loader is the template and a manifest of paths, far below this.
  constexpr size_t kMaxLoaderBytes = 16 << 20;
  size_t budget = kMaxLoaderBytes;
  auto text_of = [&](const std::string& member) -> std::string {
    const WheelFile* f = wheel.find(member);
    if (!f) return {};
    if (f->size > budget) {
      problems.push_back({ProblemKind::invalid_input, wheel.display, member, "loader files larger than wheelmerge reads",
                          fmt::format("at most {} bytes of loaders and their __init__.py in all", kMaxLoaderBytes),
                          fmt::format("{} bytes more", f->size)});
      budget = 0;
      return {};
    }
    budget -= f->size;
    auto bytes = read_member(wheel.zip, wheel.zip.entries[f->entry], f->size, wheel.display, problems);
    return bytes ? std::string(bytes->begin(), bytes->end()) : std::string();
  };
  std::vector<LoaderFiles> loaders;
  const std::string suffix = "/" + std::string(kLoaderModule);
  for (const std::string& p : paths) {
    if (p.size() <= suffix.size() || p.compare(p.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string source = text_of(p);
    if (!manifest_of_loader(source)) continue;  // a module of that name that is no wheelmerge loader
    loaders.push_back({p, source, text_of(p.substr(0, p.size() - suffix.size()) + "/__init__.py")});
  }
  check_loaders(wheel.display, loaders, paths, problems);
  return loaders;
}

std::optional<nlohmann::json> verify_wheel(const std::string& path, Problems& problems) {
  const size_t before = problems.size();
  auto wheel = read_wheel(WheelInput{path, {}}, problems);
  if (!wheel) return std::nullopt;
  std::vector<LoaderFiles> loaders = checked_loaders(*wheel, problems);
  if (problems.size() != before) return std::nullopt;
  nlohmann::json summary = {{"file", path}, {"valid", true}, {"files", wheel->files.size()},
                            {"merged", !loaders.empty()}, {"warnings", wheel->warnings}};
  nlohmann::json packages = nlohmann::json::array();
  for (const LoaderFiles& l : loaders) packages.push_back(l.loader_path);
  summary["loaders"] = packages;
  return summary;
}

}  // namespace wm
