#include "merger/loader.hpp"

#include "merger/base/text.hpp"
#include "merger/format/python_literal.hpp"
#include "merger/format/python_source.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace wm {

extern const std::string_view kLoaderCore;
extern const std::string_view kLoaderUsualCuda;
extern const std::string_view kLoaderUsualOther;
extern const std::string_view kRulesCore;
extern const std::string_view kRulesCuda;
extern const std::string_view kRulesTorch;
extern const std::string_view kRulesCpu;
extern const std::string_view kRulesReport;

namespace {

constexpr std::string_view kBlockBegin = "# wheelmerge manifest: what wheelmerge ";
constexpr std::string_view kBlockEnd = "# end of the wheelmerge manifest\n";

// `text` with its line `marker` (a whole line, with its "\n") replaced by `with`.
std::string replace_line(std::string_view text, std::string_view marker, std::string_view with) {
  size_t at = text.find(marker);
  if (at == std::string_view::npos || (at > 0 && text[at - 1] != '\n'))
    throw std::logic_error("a template lacks the line " + std::string(marker));
  return std::string(text.substr(0, at)) + std::string(with) + std::string(text.substr(at + marker.size()));
}

// WHEELMERGE_VARIANT_ and the distribution's normalized name in upper case, '-' as '_'.
std::string package_variable(std::string_view distribution) {
  std::string out = "WHEELMERGE_VARIANT_";
  bool gap = false;
  for (char c : distribution) {
    if (c == '-' || c == '_' || c == '.') {
      gap = true;
      continue;
    }
    if (gap && out.back() != '_') out += '_';
    gap = false;
    out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  }
  return out;
}

std::string manifest_block(const LoaderManifest& m) {
  // One entry per build, in label order (a dict literal's order is its keys').
  auto per_build = [&](auto get) {
    PyValue v;
    v.open = '{';
    static const BuildFiles kNone;
    std::vector<VariantLabel> labels = m.variants;
    std::sort(labels.begin(), labels.end(), LabelTextOrder());
    for (const VariantLabel& label : labels) {
      auto it = m.builds.find(label);
      v.add(py_string(label.str()), get(it == m.builds.end() ? kNone : it->second, label));
    }
    return v;
  };
  std::string out = std::string(kBlockBegin) + m.wheelmerge + " recorded about this package's builds.\n";
  out += py_assign("_WHEELMERGE", "", {py_string(m.wheelmerge), {}, {}, 0});
  out += py_assign("_DISTRIBUTION", "", {py_string(m.distribution), {}, {}, 0});
  out += py_assign("_PACKAGE", "", {py_string(m.package), {}, {}, 0});
  out += py_assign("_SELECTOR", "", {py_string(selector_name(m.selector)), {}, {}, 0});
  out += py_assign("_VARIANTS", "tuple[str, ...]", py_strings(label_strings(m.variants)));
  out += py_assign("_SOURCES", "tuple[str, ...]", py_strings(m.sources()));
  out +=
      py_assign("_EXTRAS", "dict[str, tuple[str, ...]]", per_build([&](const BuildFiles&, const VariantLabel& label) {
                  auto it = m.extras.find(label);
                  return py_strings(it == m.extras.end() ? std::vector<std::string>() : it->second);
                }));
  out += py_assign("_MODULES", "dict[str, dict[str, str]]",
                   per_build([](const BuildFiles& b, const VariantLabel&) { return py_strings(b.modules); }));
  out += py_assign("_FILES", "dict[str, dict[str, str]]",
                   per_build([](const BuildFiles& b, const VariantLabel&) { return py_strings(b.files); }));
  out += py_assign("_PRELOAD", "dict[str, tuple[str, ...]]",
                   per_build([](const BuildFiles& b, const VariantLabel&) { return py_strings(b.preload); }));
  out += py_assign("_BUILD_INFO", "dict[str, dict[str, str]]",
                   per_build([](const BuildFiles& b, const VariantLabel&) { return py_strings(b.build_info); }));
  out += py_assign("_GPU_CODE", "dict[str, dict[str, tuple[str, ...]]]",
                   per_build([](const BuildFiles& b, const VariantLabel&) { return py_strings(b.gpu_code); }));
  out += py_assign("_VARIANT_VARS", "", py_strings({package_variable(m.distribution), "WHEELMERGE_VARIANT"}));
  out += kBlockEnd;
  return out;
}

}  // namespace

std::string render_loader(const LoaderManifest& manifest) {
  std::string out = replace_line(kLoaderCore, "#: manifest\n", manifest_block(manifest));
  return replace_line(out, "#: selector\n", manifest.selector == Selector::cuda ? kLoaderUsualCuda : kLoaderUsualOther);
}

std::string render_rules(Selector selector, std::string_view package) {
  std::string_view part = selector == Selector::cuda    ? kRulesCuda
                          : selector == Selector::torch ? kRulesTorch
                                                        : kRulesCpu;
  std::string out = replace_line(kRulesCore, "#: selector\n", part);
  out = replace_line(out, "#: include report\n", kRulesReport);
  const std::string_view placeholder = "of package PACKAGE (";
  size_t at = out.find(placeholder);
  if (at == std::string::npos || at > out.find('\n'))
    throw std::logic_error("templates/loader/rules.py names no PACKAGE");
  // The name as a string literal's contents (quotes, backslashes and any other character
  // escaped), so that no directory name can end the docstring.
  std::string literal = py_string(package);
  return out.replace(at, placeholder.size(), "of package " + literal.substr(1, literal.size() - 2) + " (");
}

bool claims_to_be_loader(std::string_view source) {
  for (size_t at = source.find(kBlockBegin); at != std::string_view::npos; at = source.find(kBlockBegin, at + 1))
    if (at == 0 || source[at - 1] == '\n' || source[at - 1] == '\r') return true;
  return false;
}

std::optional<LoaderManifest> manifest_of_loader(std::string_view source, std::string& why) {
  size_t begin = source.find(std::string("\n") + std::string(kBlockBegin));
  if (begin == std::string_view::npos) {
    why = "no manifest block";
    return std::nullopt;
  }
  begin = source.find('\n', begin + 1);
  if (begin == std::string_view::npos) {
    why = "the manifest block has no end";
    return std::nullopt;
  }
  ++begin;
  size_t end = source.find(std::string("\n") + std::string(kBlockEnd), begin - 1);
  if (end == std::string_view::npos) {
    why = "the manifest block has no end";
    return std::nullopt;
  }
  LiteralReader reader(source.substr(begin, end + 1 - begin));
  struct Constant {
    const char* name;
    const char* key;
  };
  static const Constant kConstants[] = {
      {"_WHEELMERGE = ", "wheelmerge"},
      {"_DISTRIBUTION = ", "distribution"},
      {"_PACKAGE = ", "package"},
      {"_SELECTOR = ", "selector"},
      {"_VARIANTS: tuple[str, ...] = ", "variants"},
      {"_SOURCES: tuple[str, ...] = ", "sources"},
      {"_EXTRAS: dict[str, tuple[str, ...]] = ", "extras"},
      {"_MODULES: dict[str, dict[str, str]] = ", "modules"},
      {"_FILES: dict[str, dict[str, str]] = ", "files"},
      {"_PRELOAD: dict[str, tuple[str, ...]] = ", "preload"},
      {"_BUILD_INFO: dict[str, dict[str, str]] = ", "build_info"},
      {"_GPU_CODE: dict[str, dict[str, tuple[str, ...]]] = ", "gpu_code"},
      {"_VARIANT_VARS = ", ""},
  };
  nlohmann::json j;
  j["format"] = LoaderManifest::kFormat;
  for (const Constant& c : kConstants) {
    if (!reader.expect(c.name)) {
      why = fmt::format("the manifest block does not assign {}where expected", c.name);
      return std::nullopt;
    }
    auto value = reader.value();
    if (!value || !reader.expect("\n")) {
      why = fmt::format("the value of {}is not a literal as wheelmerge writes it", c.name);
      return std::nullopt;
    }
    if (*c.key) j[c.key] = std::move(*value);
  }
  if (reader.pos != end + 1 - begin) {
    why = "the manifest block holds more than wheelmerge writes";
    return std::nullopt;
  }
  return LoaderManifest::from_json(j, why);
}

std::optional<size_t> loader_import_at(std::string_view source, std::string& why) { return prologue_end(source, why); }

std::optional<std::string> inject_loader_import(std::string_view source, std::string& why) {
  return insert_after_prologue(source, kLoaderImport.substr(0, kLoaderImport.size() - 1), why);
}

bool executes_loader_import(std::string_view source) {
  return line_after_prologue(source, kLoaderImport.substr(0, kLoaderImport.size() - 1));
}

std::vector<LoaderShadow> loader_shadows(std::string_view dir) {
  std::vector<LoaderShadow> out;
  for (std::string_view module : {kLoaderModule, kRulesModule}) {
    const std::string_view stem = module.substr(0, module.size() - 3);
    out.push_back({module, stem, fmt::format("{}{}/", dir, stem), "a package of that name"});
    out.push_back({module, stem, fmt::format("{}{}.", dir, stem), "another module file of that name"});
    out.push_back({module, stem, fmt::format("{}__pycache__/{}.", dir, stem), "cached bytecode of that name"});
  }
  return out;
}

}  // namespace wm
