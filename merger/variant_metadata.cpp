#include "merger/variant_metadata.hpp"

#include "merger/wheel_name.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace wm {

namespace {

// The provider entry of a namespace, as installers recognise it. uv runs no provider plugins:
// it serves the `nvidia` namespace itself, and only for exactly this requirement and plugin API.
nlohmann::json provider(const std::string& name_space) {
  if (name_space == "nvidia")
    return {{"requires", {"nvidia-variant-provider>=0.0.1,<1.0.0"}},
            {"plugin-api", "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}};
  return nlohmann::json::object();
}

// How deep `text`'s arrays and objects nest (strings skipped); stops counting past `limit`.
size_t json_depth(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// PEP 825's names: a value (`dot`) as a label is written (is_variant_label), a namespace or
// feature the same without ".".
bool all_of_chars(const std::string& s, bool dot) {
  return is_variant_label(s) && (dot || s.find('.') == std::string::npos);
}

// A non-empty JSON array of unique names (0-9, a-z, "_", and "." where `dot`); empty when it is
// one, else why not.
std::string unique_strings(const nlohmann::json& list, const std::string& where, bool dot) {
  if (!list.is_array() || list.empty()) return where + " is not a non-empty list";
  std::set<std::string> seen;
  for (const nlohmann::json& item : list) {
    if (!item.is_string() || !all_of_chars(item.get<std::string>(), dot))
      return fmt::format("{} holds {} (names are made of 0-9, a-z, _{})", where, item.dump(), dot ? " and ." : "");
    if (!seen.insert(item.get<std::string>()).second) return fmt::format("{} holds {} twice", where, item.dump());
  }
  return {};
}

}  // namespace

std::string variant_document_problem(std::string_view text, const std::string& label) {
  constexpr size_t kMaxDepth = 16;
  if (json_depth(text, kMaxDepth) > kMaxDepth) return fmt::format("nested more than {} deep", kMaxDepth);
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return "not a JSON object";
  static const std::set<std::string> kSchemas = {std::string(kVariantSchema),
                                                 "https://variants-schema.wheelnext.dev/peps/825/v0.1.0.json",
                                                 "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"};
  if (!doc.contains("$schema") || !doc["$schema"].is_string() || !kSchemas.count(doc["$schema"].get<std::string>()))
    return fmt::format("$schema is {}, not a schema installers know ({})", doc.value("$schema", nlohmann::json()).dump(),
                       fmt::join(kSchemas, ", "));
  if (!doc.contains("default-priorities") || !doc["default-priorities"].is_object() ||
      !doc["default-priorities"].contains("namespace"))
    return "no default-priorities.namespace";
  if (auto why = unique_strings(doc["default-priorities"]["namespace"], "default-priorities.namespace", false);
      !why.empty())
    return why;
  const auto priorities = doc["default-priorities"]["namespace"].get<std::set<std::string>>();
  if (!doc.contains("variants") || !doc["variants"].is_object()) return "no variants object";
  const nlohmann::json& variants = doc["variants"];
  if (variants.size() != 1 || !variants.contains(label))
    return fmt::format("variants lists {}, not the file name's label {} alone", variants.dump(), nlohmann::json(label).dump());
  const nlohmann::json& properties = variants[label];
  if (!properties.is_object()) return "the label's properties are not an object";
  if (label == "null" && !properties.empty()) return "the null variant has properties";
  for (const auto& [name_space, features] : properties.items()) {
    if (!all_of_chars(name_space, false) || !features.is_object() || features.empty())
      return fmt::format("namespace {} is not a name with features", nlohmann::json(name_space).dump());
    if (!priorities.count(name_space))
      return fmt::format("namespace {} is not in default-priorities.namespace", name_space);
    for (const auto& [feature, values] : features.items()) {
      if (!all_of_chars(feature, false)) return fmt::format("feature {} is not a name", nlohmann::json(feature).dump());
      if (auto why = unique_strings(values, name_space + " :: " + feature, true); !why.empty()) return why;
    }
  }
  if (doc["$schema"] == std::string(kVariantSchema)) {
    if (!doc.contains("providers") || !doc["providers"].is_object()) return "no providers object";
    std::set<std::string> providers;
    for (const auto& [name_space, provider] : doc["providers"].items()) providers.insert(name_space);
    if (providers != priorities)
      return fmt::format("providers name {}, default-priorities.namespace {}: the same namespaces, as variantlib requires",
                         nlohmann::json(providers).dump(), nlohmann::json(priorities).dump());
  }
  return {};
}

std::vector<std::string> variant_property_strings(std::string_view text, const std::string& label) {
  if (!variant_document_problem(text, label).empty()) return {};
  std::vector<std::string> out;
  const auto doc = nlohmann::json::parse(text);
  for (const auto& [name_space, features] : doc["variants"][label].items())
    for (const auto& [feature, values] : features.items())
      for (const nlohmann::json& value : values) out.push_back(fmt::format("{} :: {} :: {}", name_space, feature, value.get<std::string>()));
  std::sort(out.begin(), out.end());
  return out;
}

std::string variants_document(const std::vector<VariantProperties>& variants) {
  nlohmann::json doc = nlohmann::json::object();  // keys sorted: the bytes depend on the content alone
  doc["$schema"] = std::string(kVariantSchema);
  std::set<std::string> namespaces;
  nlohmann::json listed = nlohmann::json::object();
  for (const VariantProperties& v : variants) {
    listed[v.label] = v.properties;
    for (const auto& [name_space, features] : v.properties) namespaces.insert(name_space);
  }
  doc["default-priorities"]["namespace"] = namespaces;
  doc["providers"] = nlohmann::json::object();
  for (const std::string& name_space : namespaces) doc["providers"][name_space] = provider(name_space);
  doc["variants"] = listed;
  return doc.dump(2) + "\n";
}

}  // namespace wm
