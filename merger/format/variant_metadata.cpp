#include "merger/format/variant_metadata.hpp"

#include "merger/format/label.hpp"
#include "merger/format/requirement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace wm {

namespace {

// The provider entry of a namespace, as installers recognise it. uv runs no provider plugins:
// it serves the `nvidia` namespace itself only for exactly this requirement and plugin API, and
// the `x86_64` namespace (its `level` feature) for a requirement on x86-64-variant-provider
// whose plugin API, given or derived from the name as variantlib derives it, is
// `x86_64_variant_provider` (docs/variants.md).
nlohmann::json provider(const std::string& name_space) {
  if (name_space == "nvidia")
    return {{"requires", {"nvidia-variant-provider>=0.0.1,<1.0.0"}},
            {"plugin-api", "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}};
  if (name_space == "x86_64") return {{"requires", {"x86-64-variant-provider"}}};
  throw std::logic_error("no provider entry for the namespace " + name_space);
}

// How deep `text`'s arrays and objects nest (strings skipped); stops counting past `limit`.
size_t json_depth(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
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

// A name as both tools' grammars have it: a namespace or feature [a-z0-9_]+, a value or label
// [a-z0-9_.]+ (`dot`) (variantlib's VALIDATION_*_REGEX, uv's VariantNamespace, VariantFeature,
// VariantValue and VariantLabel parsers).
bool is_name(std::string_view s, bool dot) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [dot](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (dot && c == '.');
  });
}

// A Python object path, "module.sub" or "module.sub:attr.sub", each part an ASCII identifier:
// what variantlib's VALIDATION_PROVIDER_PLUGIN_API_REGEX accepts without its spaces around ":"
// and its non-ASCII word characters (uv matches the entry text exactly, so neither reads the
// same in both).
bool is_object_path(std::string_view s) {
  auto dotted = [](std::string_view part) {
    if (part.empty()) return false;
    bool start = true;
    for (char c : part) {
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
      if (c == '.') {
        if (start) return false;
        start = true;
      } else if (alpha || (!start && c >= '0' && c <= '9')) {
        start = false;
      } else {
        return false;
      }
    }
    return !start;
  };
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return dotted(s);
  return dotted(s.substr(0, colon)) && dotted(s.substr(colon + 1));
}

// A JSON value in an error, shortened.
std::string shown(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

std::string type_of(const nlohmann::json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_null()) return "null";
  return "a number";
}

// Thrown inside the reader with the member, what was expected and what was found.
struct Refusal {
  std::string why;
};

[[noreturn]] void refuse(const std::string& where, const std::string& expected, const std::string& found) {
  throw Refusal{fmt::format("{}: expected {}, found {}", where, expected, found)};
}

// `value` as an object whose keys are all in `allowed` (uv refuses unknown fields of its
// structures; variantlib unknown keys below the top level).
const nlohmann::json& object_at(const nlohmann::json& value, const std::string& where,
                                std::initializer_list<std::string_view> allowed) {
  if (!value.is_object())
    refuse(where, "an object", value.is_null() ? type_of(value) : type_of(value) + " " + shown(value));
  for (const auto& [key, item] : value.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      refuse(where, fmt::format("only the keys {}", fmt::join(allowed, ", ")), "the key " + nlohmann::json(key).dump());
  return value;
}

// A non-empty list of unique names (namespaces, features; values where `dot`).
std::vector<std::string> names_at(const nlohmann::json& value, const std::string& where, bool dot) {
  const char* expected = dot ? "a non-empty list of unique values (a-z, 0-9, _ and .)"
                             : "a non-empty list of unique names (a-z, 0-9 and _)";
  if (!value.is_array() || value.empty()) refuse(where, expected, shown(value));
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const nlohmann::json& item : value) {
    if (!item.is_string() || !is_name(item.get_ref<const std::string&>(), dot))
      refuse(where, expected, fmt::format("the item {}", shown(item)));
    if (!seen.insert(item.get<std::string>()).second) refuse(where, expected, fmt::format("{} twice", shown(item)));
    out.push_back(item.get<std::string>());
  }
  return out;
}

void check_key_name(const std::string& key, const std::string& where, const char* what, bool dot) {
  if (!is_name(key, dot))
    refuse(where, fmt::format("{} of a-z, 0-9, _{}", what, dot ? " and ." : ""), nlohmann::json(key).dump());
}

VariantProvider read_provider(const nlohmann::json& value, const std::string& where) {
  object_at(value, where, {"requires", "plugin-api", "optional", "static-properties", "feature-order", "builtin"});
  VariantProvider p;
  const int kinds =
      int(value.contains("requires")) + int(value.contains("static-properties")) + int(value.contains("builtin"));
  if (kinds != 1)
    refuse(where, "exactly one of requires, static-properties and builtin (uv's provider kinds, variantlib's rule)",
           kinds == 0 ? std::string("none") : "more than one");
  if (value.contains("requires")) {
    const nlohmann::json& list = value["requires"];
    const std::string at = where + ".requires";
    if (!list.is_array() || list.empty()) refuse(at, "a non-empty list of PEP 508 requirements", shown(list));
    for (const nlohmann::json& item : list) {
      std::string error;
      if (!item.is_string())
        refuse(at, "a non-empty list of PEP 508 requirements", fmt::format("the item {}", shown(item)));
      if (!parse_requirement(item.get_ref<const std::string&>(), error))
        refuse(at, "PEP 508 requirements", fmt::format("{} ({})", shown(item), error));
      p.requirements.push_back(item.get<std::string>());
    }
  }
  if (value.contains("plugin-api")) {
    const nlohmann::json& api = value["plugin-api"];
    const std::string at = where + ".plugin-api";
    if (!api.is_string() || !is_object_path(api.get_ref<const std::string&>()))
      refuse(at, "a Python object path (module.sub:attr)", shown(api));
    if (p.requirements.empty())
      refuse(at, "only beside requires",
             "it beside " + std::string(value.contains("builtin") ? "builtin" : "static-properties"));
    p.plugin_api = api.get<std::string>();
  }
  if (value.contains("optional")) {
    if (!value["optional"].is_boolean()) refuse(where + ".optional", "true or false", shown(value["optional"]));
    p.optional = value["optional"].get<bool>();
  }
  if (value.contains("static-properties")) {
    const std::string at = where + ".static-properties";
    const nlohmann::json& features = value["static-properties"];
    if (!features.is_object() || features.empty()) refuse(at, "a non-empty object of features", shown(features));
    for (const auto& [feature, values] : features.items()) {
      check_key_name(feature, at, "a feature", false);
      p.static_properties[feature] = names_at(values, at + "." + feature, true);
    }
  }
  if (value.contains("feature-order")) {
    const std::string at = where + ".feature-order";
    if (p.static_properties.empty()) refuse(at, "only beside static-properties", "it without");
    p.feature_order = names_at(value["feature-order"], at, false);
  }
  if (p.static_properties.size() > 1 || !p.feature_order.empty()) {
    std::set<std::string> ordered(p.feature_order.begin(), p.feature_order.end()), used;
    for (const auto& [feature, values] : p.static_properties) used.insert(feature);
    if (ordered != used)
      refuse(where + ".feature-order",
             fmt::format("the features of static-properties, {}", nlohmann::json(used).dump()),
             nlohmann::json(p.feature_order).dump());
  }
  if (value.contains("builtin")) {
    if (!value["builtin"].is_string()) refuse(where + ".builtin", "a string", shown(value["builtin"]));
    p.builtin = value["builtin"].get<std::string>();
  }
  return p;
}

VariantDocument read_document(const nlohmann::json& doc) {
  static const std::set<std::string> kSchemas = {std::string(kVariantSchema),
                                                 "https://variants-schema.wheelnext.dev/peps/825/v0.1.0.json",
                                                 "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"};
  object_at(doc, "the document", {"$schema", "default-priorities", "providers", "variants"});
  for (const char* key : {"$schema", "default-priorities", "providers", "variants"})
    if (!doc.contains(key)) refuse(key, "a member (uv and variantlib need it)", "none");
  VariantDocument out;
  const nlohmann::json& schema = doc["$schema"];
  if (!schema.is_string() || !kSchemas.count(schema.get<std::string>()))
    refuse("$schema", fmt::format("a schema installers know ({})", fmt::join(kSchemas, ", ")), shown(schema));
  out.schema = schema.get<std::string>();
  const nlohmann::json& priorities = object_at(doc["default-priorities"], "default-priorities", {"namespace"});
  if (!priorities.contains("namespace")) refuse("default-priorities.namespace", "a member", "none");
  out.namespace_priorities = names_at(priorities["namespace"], "default-priorities.namespace", false);
  const std::set<std::string> namespaces(out.namespace_priorities.begin(), out.namespace_priorities.end());
  const nlohmann::json& providers = doc["providers"];
  if (!providers.is_object()) refuse("providers", "an object", type_of(providers));
  for (const auto& [name_space, entry] : providers.items()) {
    check_key_name(name_space, "providers", "a namespace", false);
    out.providers[name_space] = read_provider(entry, "providers." + name_space);
  }
  std::set<std::string> provided;
  for (const auto& [name_space, entry] : out.providers) provided.insert(name_space);
  if (provided != namespaces)
    refuse("providers",
           fmt::format("an entry for exactly the namespaces of default-priorities.namespace, {}",
                       nlohmann::json(namespaces).dump()),
           nlohmann::json(provided).dump());
  const nlohmann::json& variants = doc["variants"];
  if (!variants.is_object()) refuse("variants", "an object", type_of(variants));
  for (const auto& [label, properties] : variants.items()) {
    check_key_name(label, "variants", "a label", true);
    const std::string at = "variants." + label;
    if (!properties.is_object()) refuse(at, "an object of namespaces", shown(properties));
    if (label == "null" && !properties.empty()) refuse(at, "no properties (the null variant)", shown(properties));
    if (label != "null" && properties.empty()) refuse(at, "properties (only the label null has none)", "{}");
    VariantPropertyMap& map = out.variants[label];
    for (const auto& [name_space, features] : properties.items()) {
      check_key_name(name_space, at, "a namespace", false);
      if (!namespaces.count(name_space))
        refuse(at + "." + name_space, "a namespace of default-priorities.namespace", nlohmann::json(name_space).dump());
      // An empty namespace: uv reads no property there, variantlib refuses the label.
      if (!features.is_object() || features.empty())
        refuse(at + "." + name_space, "a non-empty object of features", shown(features));
      for (const auto& [feature, values] : features.items()) {
        check_key_name(feature, at + "." + name_space, "a feature", false);
        map[name_space][feature] = names_at(values, at + "." + name_space + "." + feature, true);
      }
    }
  }
  return out;
}

}  // namespace

std::optional<VariantDocument> parse_variant_document(std::string_view text, std::string& why) {
  constexpr size_t kMaxDepth = 16;
  if (text.size() > kMaxVariantFile) {
    why = fmt::format("{} bytes, more than the {} read", text.size(), kMaxVariantFile);
    return std::nullopt;
  }
  // nlohmann skips a byte order mark; Python's json and serde_json refuse one.
  if (text.starts_with("\xEF\xBB\xBF")) {
    why = "the document: expected JSON, found a UTF-8 byte order mark (uv and variantlib refuse one)";
    return std::nullopt;
  }
  if (json_depth(text, kMaxDepth) > kMaxDepth) {
    why = fmt::format("nested more than {} deep", kMaxDepth);
    return std::nullopt;
  }
  // A key twice in one object: nlohmann and Python's json keep the last silently, uv refuses a
  // field of its structures twice. The path of open objects' keys names where.
  std::vector<std::set<std::string>> open;
  std::vector<std::string> path;
  std::string duplicate;
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      open.emplace_back();
      path.emplace_back();
    } else if (event == E::object_end && !open.empty()) {
      open.pop_back();
      path.pop_back();
    } else if (event == E::key && !open.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      path.back() = key;
      if (!open.back().insert(key).second && duplicate.empty()) {
        std::vector<std::string> outer(path.begin(), path.end() - 1);
        duplicate = fmt::format("{}: expected each key once, found {} twice",
                                outer.empty() ? std::string("the document") : fmt::format("{}", fmt::join(outer, ".")),
                                nlohmann::json(key).dump());
      }
    }
    return true;
  };
  const auto doc = nlohmann::json::parse(text, callback, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    why = "the document: expected UTF-8 JSON, found text that does not parse";
    return std::nullopt;
  }
  if (!duplicate.empty()) {
    why = duplicate;
    return std::nullopt;
  }
  try {
    return read_document(doc);
  } catch (const Refusal& r) {
    why = r.why;
    return std::nullopt;
  }
}

std::string variant_document_text(const VariantDocument& d) {
  nlohmann::json doc = nlohmann::json::object();
  doc["$schema"] = d.schema;
  doc["default-priorities"]["namespace"] = d.namespace_priorities;
  doc["providers"] = nlohmann::json::object();
  for (const auto& [name_space, p] : d.providers) {
    nlohmann::json entry = nlohmann::json::object();
    if (!p.requirements.empty()) entry["requires"] = p.requirements;
    if (p.plugin_api) entry["plugin-api"] = *p.plugin_api;
    if (p.optional) entry["optional"] = true;
    if (!p.static_properties.empty()) entry["static-properties"] = p.static_properties;
    if (!p.feature_order.empty()) entry["feature-order"] = p.feature_order;
    if (p.builtin) entry["builtin"] = *p.builtin;
    doc["providers"][name_space] = std::move(entry);
  }
  doc["variants"] = nlohmann::json::object();
  for (const auto& [label, properties] : d.variants) doc["variants"][label] = properties;
  return doc.dump(2) + "\n";
}

std::optional<LabelProperty> label_property(std::string_view label) {
  const auto parsed = VariantLabel::parse(label);
  if (!parsed) return std::nullopt;
  switch (parsed->selector()) {
    case Selector::cuda:
      return LabelProperty{"nvidia", "cuda_version_lower_bound", std::to_string(parsed->cuda_major())};
    case Selector::cpu:
      return LabelProperty{"x86_64", "level", fmt::format("v{}", parsed->cpu_level())};
    case Selector::torch:
      break;
  }
  return std::nullopt;
}

std::string variant_document_problem(std::string_view text, const std::string& label) {
  std::string why;
  auto doc = parse_variant_document(text, why);
  if (!doc) return why;
  if (doc->variants.size() != 1 || !doc->variants.count(label)) {
    std::vector<std::string> labels;
    for (const auto& [l, properties] : doc->variants) labels.push_back(l);
    return fmt::format("variants: expected the file name's label {} alone, found {}", nlohmann::json(label).dump(),
                       nlohmann::json(labels).dump());
  }
  // A label of wheelmerge's own kinds says its property: an installer picks the wheel by the
  // properties alone, so a v3 build claiming levels v1 .. v4 would be installed on a v2 CPU.
  if (auto property = label_property(label)) {
    const auto& [name_space, feature, value] = *property;
    const VariantPropertyMap& properties = doc->variants.at(label);
    std::vector<std::string> found;
    if (auto ns = properties.find(name_space); ns != properties.end())
      if (auto f = ns->second.find(feature); f != ns->second.end()) found = f->second;
    if (found != std::vector<std::string>{value})
      return fmt::format("variants.{}.{}.{}: expected [\"{}\"] for the label {} alone, found {}", label, name_space,
                         feature, value, label, found.empty() ? std::string("none") : nlohmann::json(found).dump());
  }
  return {};
}

std::string variant_index_problem(std::string_view text) {
  std::string why;
  auto doc = parse_variant_document(text, why);
  if (!doc) return why;
  if (doc->variants.empty()) return "variants: expected at least one variant, found none";
  return {};
}

std::vector<std::string> variant_property_strings(std::string_view text, const std::string& label) {
  if (!variant_document_problem(text, label).empty()) return {};
  std::string why;
  const auto doc = parse_variant_document(text, why);
  std::vector<std::string> out;
  for (const auto& [name_space, features] : doc->variants.at(label))
    for (const auto& [feature, values] : features)
      for (const std::string& value : values) out.push_back(fmt::format("{} :: {} :: {}", name_space, feature, value));
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
