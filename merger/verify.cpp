#include "merger/verify.hpp"

#include "merger/base/text.hpp"
#include "merger/loader.hpp"
#include "merger/version.hpp"
#include "merger/wheel.hpp"
#include "merger/zip/member_stream.hpp"
#include "merger/zip/zip_archive.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

namespace wm {

namespace {
// Records a problem of the wheel `display`'s loaders.
struct LoaderFailures {
  const std::string& display;
  Problems& problems;
  void operator()(const std::string& member, std::string what, std::string expected, std::string found) const {
    problems.push_back(
        {ProblemKind::invalid_input, display, member, std::move(what), std::move(expected), std::move(found)});
  }
};

// The loader's manifest, when the loader is exactly what this wheelmerge writes for it.
std::optional<LoaderManifest> read_manifest(const LoaderFiles& l, const LoaderFailures& fail) {
  std::string why;
  // Python reads CR and CRLF as line ends too, which the manifest reader below does not: a
  // loader wheelmerge wrote has LF only, so any CR is refused before the block is read.
  if (size_t cr = l.loader_source.find('\r'); cr != std::string::npos) {
    const auto before_cr = l.loader_source.begin() + static_cast<std::ptrdiff_t>(cr);
    fail(l.loader_path, "loader has CR line endings", "LF only, as wheelmerge writes loaders",
         fmt::format("a CR on line {}", 1 + std::count(l.loader_source.begin(), before_cr, '\n')));
    return std::nullopt;
  }
  auto manifest = manifest_of_loader(l.loader_source, why);
  if (!manifest) {
    fail(l.loader_path, "loader manifest malformed", {}, why);  // why: a reason, said as it is
    return std::nullopt;
  }
  // What Python runs is the whole file, so the whole file must be what this wheelmerge
  // writes for that manifest: a second assignment, another line ending or an edited line
  // would change what the manifest seems to say.
  if (std::string rendered = render_loader(*manifest); rendered != l.loader_source) {
    size_t at = std::mismatch(rendered.begin(), rendered.end(), l.loader_source.begin(), l.loader_source.end()).first -
                rendered.begin();
    size_t line = 1 + std::count(rendered.begin(), rendered.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    fail(l.loader_path, "loader is not the one wheelmerge " + std::string(kVersion) + " writes for its manifest",
         "the rendered loader", fmt::format("a difference on line {}", line));
    return std::nullopt;
  }
  return manifest;
}

// The package and its modules are the loader's own: a manifest claiming another package's
// name, or a module outside its package ("json"), would take over that import. And the
// package's __init__.py imports the loader.
void check_package(const LoaderFiles& l, const std::string& package_dir, const LoaderManifest& manifest,
                   const LoaderFailures& fail) {
  std::string dotted = site_packages_path(package_dir).value_or("");
  std::replace(dotted.begin(), dotted.end(), '/', '.');
  if (manifest.package != dotted)
    fail(l.loader_path, "loader manifest names another package", dotted.empty() ? "a package in site-packages" : dotted,
         manifest.package);
  for (const auto& [label, build] : manifest.builds)
    for (const auto& [module, file] : build.modules)
      if (module != manifest.package && !module.starts_with(manifest.package + "."))
        fail(l.loader_path, fmt::format("manifest modules of {} names a module outside the package", label.str()),
             "a module of " + manifest.package, module);
  if (!executes_loader_import(l.init_source))
    fail(package_dir + "/__init__.py", "package does not import its loader",
         fmt::format("the statement \"{}\" first after the docstring and future imports, as wheelmerge writes it",
                     kLoaderImport.substr(0, kLoaderImport.find("  #"))),
         "no such statement there");
}

// Every path the manifest names is a member of the wheel; the members named are added to `listed`.
// A build's entries name its own labelled files or shared ones: a cu12 entry naming
// `libkern.cu13.so` would load the other build's code into this one.
void check_manifest_paths(const LoaderFiles& l, const LoaderManifest& manifest, const ManifestResolver& resolver,
                          std::set<std::string, std::less<>>& listed, const LoaderFailures& fail) {
  const std::vector<std::string> names = label_strings(manifest.variants);
  const std::unordered_set<std::string> labels(names.begin(), names.end());
  for (const VariantLabel& variant : manifest.variants) {
    const BuildFiles& build = manifest.builds.at(variant);
    const std::string& label = variant.str();
    auto check = [&](const char* section, const std::string& rel) {
      std::string installed = ManifestResolver::installed(l.loader_path, rel);
      if (installed.empty()) {
        fail(l.loader_path, fmt::format("manifest {} of {} names a path outside the wheel", section, label),
             "a path relative to the package, inside the wheel", rel);
        return;
      }
      if (std::string other = label_in_name(installed, labels); !other.empty() && other != label)
        fail(l.loader_path, fmt::format("manifest {} of {} names a file of build {}", section, label, other),
             fmt::format("a file of {} or a shared one", label), installed);
      if (auto member = resolver.member(installed))
        listed.insert(std::string(*member));
      else
        fail(l.loader_path, fmt::format("manifest {} of {} names a file the wheel lacks", section, label), installed,
             "no such member");
    };
    for (const auto& [module, rel] : build.modules) check("modules", rel);
    for (const auto& [original, rel] : build.files) check("files", rel);
    for (const std::string& rel : build.preload) check("preload", rel);
    for (const auto& [rel, code] : build.gpu_code) check("gpu_code", rel);
  }
}

// Each build's GPU code in a loader's manifest is what its files' fat binaries hold, as reading
// the wheel found them: the loader's report warns of GPUs no code runs on by it. A difference is
// reported once per build, at the first file where they differ.
void check_gpu_code(const Wheel& wheel, const std::vector<FoundLoader>& loaders,
                    const std::vector<std::string_view>& paths, Problems& problems) {
  const ManifestResolver resolver(paths);
  for (const FoundLoader& l : loaders) {
    for (const auto& [label, build] : l.manifest.builds) {
      std::map<std::string, std::vector<std::string>> found;
      auto add = [&](const std::string& rel) {
        auto member = resolver.member(ManifestResolver::installed(l.loader_path, rel));
        if (auto code = member ? spelled_gpu_code(wheel, *member) : std::vector<std::string>(); !code.empty())
          found[rel] = std::move(code);
      };
      for (const auto& [original, rel] : build.files) add(rel);
      for (const std::string& rel : build.preload) add(rel);
      if (found == build.gpu_code) continue;
      auto [ours, theirs] = std::mismatch(found.begin(), found.end(), build.gpu_code.begin(), build.gpu_code.end());
      const std::string& rel = ours == found.end()              ? theirs->first
                               : theirs == build.gpu_code.end() ? ours->first
                                                                : std::min(ours->first, theirs->first);
      auto spelled = [&](const std::map<std::string, std::vector<std::string>>& m) {
        auto it = m.find(rel);
        return it == m.end() ? std::string("none") : fmt::format("{}", fmt::join(it->second, " "));
      };
      problems.push_back({ProblemKind::invalid_input, wheel.display, l.loader_path,
                          fmt::format("manifest gpu_code of {} is not the GPU code of {}", label.str(), rel),
                          spelled(found), spelled(build.gpu_code)});
    }
  }
}

// A file stored under a variant label that no manifest names would never be loaded. A name
// is labelled when one of its dot-separated pieces after the stem is a variant label.
void check_unlisted(const std::vector<std::string>& variants, const std::vector<std::string_view>& paths,
                    const std::set<std::string, std::less<>>& listed, const LoaderFailures& fail) {
  std::unordered_set<std::string> labels(variants.begin(), variants.end());
  for (std::string_view path : paths) {
    if (listed.count(path) || path.find(".dist-info/") != std::string::npos) continue;
    if (!label_in_name(path, labels).empty())
      fail(std::string(path), "variant file no loader lists", "a file named in a manifest", "a file no manifest names");
  }
}
// What Python's path finder could import in place of the loader or its rules module
// (loader_shadows). `installed` is every member's site-packages path with its member, sorted.
void check_shadows(const std::string& loader_path,
                   const std::vector<std::pair<std::string_view, std::string_view>>& installed,
                   const LoaderFailures& fail) {
  auto loader_installed = site_packages_view(loader_path);
  if (!loader_installed) return;
  const std::string_view dir = loader_installed->substr(0, loader_installed->rfind('/') + 1);  // "pkg/"
  for (const LoaderShadow& shadow : loader_shadows(dir)) {
    const std::string own = fmt::format("{}{}", dir, shadow.module);
    auto at = std::lower_bound(installed.begin(), installed.end(),
                               std::pair<std::string_view, std::string_view>(shadow.prefix, {}));
    for (; at != installed.end() && at->first.starts_with(shadow.prefix); ++at) {
      if (at->first == own) continue;
      fail(std::string(at->second), fmt::format("a file Python could import as {}", shadow.stem),
           fmt::format("{} alone under that name (the module wheelmerge checked)", own), shadow.kind);
      break;  // one problem a prefix: a shadow is a shadow
    }
  }
}
}  // namespace

std::vector<FoundLoader> check_loaders(const std::string& display, const std::vector<LoaderFiles>& loaders,
                                       const std::vector<std::string_view>& paths, Problems& problems) {
  const LoaderFailures fail{display, problems};
  std::vector<FoundLoader> found;
  std::set<std::string, std::less<>> listed;  // every file some manifest names
  const ManifestResolver resolver(paths);
  std::vector<std::pair<std::string_view, std::string_view>> installed;  // site-packages path, member
  if (!loaders.empty()) {
    for (std::string_view m : paths)
      if (auto at = site_packages_view(m)) installed.emplace_back(*at, m);
    std::sort(installed.begin(), installed.end());
  }
  for (const LoaderFiles& l : loaders) {
    check_shadows(l.loader_path, installed, fail);
    const std::string package_dir = l.loader_path.substr(0, l.loader_path.rfind('/'));
    std::optional<LoaderManifest> manifest = read_manifest(l, fail);
    if (!manifest) continue;
    const std::string rules_path = package_dir + "/" + std::string(kRulesModule);
    if (!l.rules_source)
      fail(rules_path, "loader's rules module is missing", "the module beside the loader", "no such member");
    else if (*l.rules_source != render_rules(manifest->selector, manifest->package))
      fail(rules_path, "rules module is not the one wheelmerge " + std::string(kVersion) + " writes",
           "the rendered rules module of selector " + std::string(selector_name(manifest->selector)), "other text");
    check_package(l, package_dir, *manifest, fail);
    if (!found.empty() && found.front().manifest.variants != manifest->variants)
      fail(l.loader_path, "loaders disagree on the variants",
           nlohmann::json(label_strings(found.front().manifest.variants)).dump(),
           nlohmann::json(label_strings(manifest->variants)).dump());
    check_manifest_paths(l, *manifest, resolver, listed, fail);
    found.push_back({l.loader_path, std::move(*manifest)});
  }
  if (!found.empty()) check_unlisted(label_strings(found.front().manifest.variants), paths, listed, fail);
  return found;
}

std::vector<FoundLoader> check_loaders(const std::string& display, const std::vector<LoaderFiles>& loaders,
                                       const std::set<std::string>& paths, Problems& problems) {
  return check_loaders(display, loaders, std::vector<std::string_view>(paths.begin(), paths.end()), problems);
}

std::vector<FoundLoader> find_loaders(const Wheel& wheel, Problems& problems) {
  std::vector<std::string_view> paths;
  for (const WheelFile& f : wheel.files) paths.push_back(f.path);
  std::sort(paths.begin(), paths.end());
  // Loaders and their __init__.py are read whole, so what they may hold is bounded in all: a
  // loader is the template and a manifest of paths, far below this.
  constexpr size_t kMaxLoaderBytes = 16 << 20;
  size_t budget = kMaxLoaderBytes;
  auto text_of = [&](const std::string& member) -> std::string {
    const WheelFile* f = wheel.find(member);
    if (!f) return {};
    if (f->size > budget) {
      problems.push_back({ProblemKind::invalid_input, wheel.display, member,
                          "loader files larger than wheelmerge reads",
                          fmt::format("at most {} bytes of loaders and their __init__.py in all", kMaxLoaderBytes),
                          fmt::format("{} bytes more", f->size)});
      budget = 0;
      return {};
    }
    budget -= f->size;
    return read_member(wheel.zip, wheel.zip.entries[f->entry], f->size, wheel.display, problems)
        .value_or(std::string());
  };
  std::vector<LoaderFiles> loaders;
  const std::string suffix = "/" + std::string(kLoaderModule);
  for (std::string_view view : paths) {
    if (!view.ends_with(suffix) || view.size() == suffix.size()) continue;
    const std::string p(view);
    std::string source = text_of(p);
    if (!claims_to_be_loader(source)) continue;  // a module of that name that is no wheelmerge loader
    const std::string dir = p.substr(0, p.size() - suffix.size());
    std::optional<std::string> rules;
    if (wheel.find(dir + "/" + std::string(kRulesModule))) rules = text_of(dir + "/" + std::string(kRulesModule));
    loaders.push_back({p, source, text_of(dir + "/__init__.py"), std::move(rules)});
  }
  std::vector<FoundLoader> found = check_loaders(wheel.display, loaders, paths, problems);
  check_gpu_code(wheel, found, paths, problems);
  return found;
}

std::string label_in_name(std::string_view path, const std::unordered_set<std::string>& labels) {
  std::vector<std::string> pieces = split(path.substr(path.rfind('/') + 1), '.');
  for (size_t i = pieces.front().empty() ? 2 : 1; i < pieces.size(); ++i)
    if (labels.count(pieces[i])) return pieces[i];
  return {};
}

}  // namespace wm
