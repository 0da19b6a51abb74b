// Variant metadata (PEP 825's variant.json and {name}-{version}-variants.json, with PEP 850's
// providers): the document wheelmerge writes, and the check the strict reader makes of a
// variant wheel's variant.json. docs/variants.md has the format chosen and why.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

// The metadata schema written: PEP 850's draft (PEP 825's plus `providers`), the one that both
// uv's wheel-variants preview and variantlib read today. PEP 825's own draft schema has no
// providers, so uv installs no variant by hardware from it.
inline constexpr std::string_view kVariantSchema = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json";

// One build's variant: its label (the file name's last component) and its properties,
// namespace -> feature -> values.
struct VariantProperties {
  std::string label;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> properties;
};

// variant.json (one variant) or the index file (every variant): the same document, its keys
// sorted, two-space indented, ending in a newline.
std::string variants_document(const std::vector<VariantProperties>& variants);

// The largest variant.json read: the document names a handful of properties.
inline constexpr size_t kMaxVariantFile = 1 << 20;

// A `providers` entry as both uv (0.13, `--preview-features wheel-variants`) and variantlib
// (0.2) read it: exactly one of `requires` (with an optional `plugin-api`), `static-properties`
// (with an optional `feature-order`) or `builtin`; `optional` false when absent.
struct VariantProvider {
  std::vector<std::string> requirements;  // "requires": PEP 508 requirements
  std::optional<std::string> plugin_api;  // "module.sub:attr"
  bool optional = false;
  std::map<std::string, std::vector<std::string>> static_properties;  // feature -> values
  std::vector<std::string> feature_order;
  std::optional<std::string> builtin;
  bool operator==(const VariantProvider&) const = default;
};

// namespace -> feature -> values, in the order written.
using VariantPropertyMap = std::map<std::string, std::map<std::string, std::vector<std::string>>>;

// A variant metadata document (variant.json or the index file) as read.
struct VariantDocument {
  std::string schema;
  std::vector<std::string> namespace_priorities;  // default-priorities.namespace
  std::map<std::string, VariantProvider> providers;
  std::map<std::string, VariantPropertyMap> variants;  // label -> properties
  bool operator==(const VariantDocument&) const = default;
};

// `text` read as a variant metadata document, or nullopt with `why` naming the member inside the
// document (`providers.nvidia.plugin-api`), what was expected and what was found. Accepted only
// when uv's reader and variantlib's both accept it and read it the same way (docs/variants.md,
// "Reading variant metadata"): UTF-8 JSON without a byte order mark, no key twice in an object,
// nested at most 16 deep; the four top-level keys `$schema` (a schema this reader knows),
// `default-priorities` (`namespace` alone: a non-empty list of unique namespaces), `providers`
// (an entry for exactly those namespaces) and `variants` (label -> namespace -> feature ->
// non-empty list of unique values; every namespace among the priorities; only the label `null`
// without properties), and no other key anywhere. Names: a namespace or feature is made of
// a-z, 0-9 and _; a value and a label of those and "."; no length limit (neither tool has one),
// the file itself bounded by kMaxVariantFile.
std::optional<VariantDocument> parse_variant_document(std::string_view text, std::string& why);

// `doc` as JSON (keys sorted, two-space indented, a final newline); parse_variant_document reads
// it back as `doc`.
std::string variant_document_text(const VariantDocument& doc);

// The property a label of wheelmerge's own kinds means: cuNN is `nvidia :: cuda_version_lower_bound`
// N, x86_64_vN is `x86_64 :: level` vN; nullopt for other labels (torch labels have no provider, a
// PEP 825 label of another tool means what it says). The writer (variant_properties) and the
// reader (variant_document_problem) both take it from here.
struct LabelProperty {
  std::string name_space, feature, value;
};
std::optional<LabelProperty> label_property(std::string_view label);

// Why `text` is not a variant wheel's variant.json for `label`, or empty when it is one: a
// document parse_variant_document accepts whose `variants` holds `label` alone, with exactly
// the label's own value of label_property where it has one.
std::string variant_document_problem(std::string_view text, const std::string& label);

// Why `text` is not a `{name}-{version}-variants.json` index, or empty when it is one: a
// document parse_variant_document accepts with at least one variant.
std::string variant_index_problem(std::string_view text);

// The properties `label` has in a valid variant document, as "namespace :: feature :: value"
// (variantlib's notation), sorted; empty for a document variant_document_problem refuses.
std::vector<std::string> variant_property_strings(std::string_view text, const std::string& label);

}  // namespace wm
