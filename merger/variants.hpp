// Wheel variants (PEP 825, with PEP 850's providers) from the builds a merge takes: one variant
// wheel per build, each the build's own files under the release's name and version with a
// `.dist-info/variant.json` naming its label and properties, and the index file
// `{name}-{version}-variants.json` listing every label. Variant-aware installers install the
// one build that fits the machine; the merged wheel, written beside them on request, is the
// fallback every other installer takes. docs/variants.md has the format chosen and why.
#pragma once

#include "merger/label.hpp"
#include "merger/merge.hpp"
#include "merger/problem.hpp"
#include "merger/zip_writer.hpp"

#include <map>
#include <optional>
#include <string>
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

// The properties of a build's label, or nullopt with `why`: a CUDA build needs a driver of at
// least its CUDA major (nvidia :: cuda_version_lower_bound). Labels of other selectors have no
// provider an installer knows today (torch, x86-64 levels).
std::optional<VariantProperties> variant_properties(const VariantLabel& label, std::string& why);

// variant.json (one variant) or the index file (every variant): the same document, its keys
// sorted, two-space indented, ending in a newline.
std::string variants_document(const std::vector<VariantProperties>& variants);

struct VariantsOptions {
  MergeOptions merge;        // labels, --name, --variant-file and the rest, as for `merge`
  bool with_merged = false;  // also write the merged wheel, the non-variant fallback
};

struct VariantsResult {
  std::vector<std::string> wheels;  // the variant wheels written, in label order
  std::vector<std::string> labels;
  std::string index;                // {name}-{version}-variants.json
  std::optional<std::string> merged;
  std::vector<std::string> warnings;
};

// Reads and checks the inputs as a merge does, plans every output before writing any, then
// writes the variant wheels (each read back and checked, as a merged wheel is), the index file
// and, with `with_merged`, the merged wheel. On failure nothing is left in `out_dir`.
std::optional<VariantsResult> write_variants(const std::vector<WheelInput>& inputs, const VariantsOptions& options,
                                             const std::string& out_dir, DosTime time, Problems& problems);

}  // namespace wm
