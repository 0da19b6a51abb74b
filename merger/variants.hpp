// Wheel variants (PEP 825, with PEP 850's providers) from the builds a merge takes: one variant
// wheel per build, each the build's own files under the release's name and version with a
// `.dist-info/variant.json` naming its label and properties, and the index file
// `{name}-{version}-variants.json` listing every label. Variant-aware installers install the
// one build that fits the machine; the merged wheel, written beside them on request, is the
// fallback every other installer takes. docs/variants.md has the format chosen and why.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"
#include "merger/format/variant_metadata.hpp"
#include "merger/merge.hpp"
#include "merger/zip/zip_writer.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wm {

// The properties of a build's label, or nullopt with `why`: a CUDA build needs a driver of at
// least its CUDA major (nvidia :: cuda_version_lower_bound), and runs on the GPUs `sm_arch`
// names (nvidia :: sm_arch; none given: any GPU, as far as the properties say). Labels of other
// selectors have no provider an installer knows today (torch, x86-64 levels).
std::optional<VariantProperties> variant_properties(const VariantLabel& label, std::string& why,
                                                    const std::vector<std::string>& sm_arch = {});

struct VariantsOptions {
  MergeOptions merge;        // labels, --name, --variant-file and the rest, as for `merge`
  bool with_merged = false;  // also write the merged wheel, the non-variant fallback
  // nvidia :: sm_arch from the GPU code of each build's files (gpu_code.hpp); off, a build's
  // properties say nothing about the GPU.
  bool sm_arch = true;
};

struct VariantsResult {
  std::vector<std::string> wheels;                // the variant wheels written, in label order
  std::vector<VariantLabel> labels;               // of the variant wheels, in the same order
  std::vector<std::vector<std::string>> sm_arch;  // per label: the sm_arch values given, if any
  std::string index;                              // {name}-{version}-variants.json
  std::optional<std::string> merged;
  // With `with_merged`: the merged wheel's plan, less its members once the wheel is written
  // (what `build` reports: shared and variant files, warnings).
  std::optional<MergePlan> merged_plan;
  std::vector<std::string> warnings;
};

// Reads and checks the inputs as a merge does, plans every output before writing any, then
// writes the variant wheels (each read back and checked, as a merged wheel is), the index file
// and, with `with_merged`, the merged wheel. On failure nothing is left in `out_dir`.
std::optional<VariantsResult> write_variants(const std::vector<WheelInput>& inputs, const VariantsOptions& options,
                                             const std::string& out_dir, DosTime time, Problems& problems);

}  // namespace wm
