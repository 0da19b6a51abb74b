// Variant metadata (PEP 825's variant.json and {name}-{version}-variants.json, with PEP 850's
// providers): the document wheelmerge writes, and the check the strict reader makes of a
// variant wheel's variant.json. docs/variants.md has the format chosen and why.
#pragma once

#include <cstddef>
#include <map>
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

// Why `text` is not a variant wheel's variant.json for `label`, or empty when it is one: JSON
// (nested at most 16 deep) with a `$schema` an installer knows (PEP 825's or PEP 850's draft),
// `default-priorities.namespace` a non-empty list of unique namespaces, `variants` holding
// `label` alone with its properties (namespace -> feature -> unique values, each named as
// PEP 825 allows, every namespace among the priorities; none for the null variant), and, under
// PEP 850's schema, a provider for exactly the namespaces of the priorities (as variantlib
// requires).
std::string variant_document_problem(std::string_view text, const std::string& label);

// The properties `label` has in a valid variant document, as "namespace :: feature :: value"
// (variantlib's notation), sorted; empty for a document variant_document_problem refuses.
std::vector<std::string> variant_property_strings(std::string_view text, const std::string& label);

}  // namespace wm
