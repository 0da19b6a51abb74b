// The whole merge: labels, every input read and validated, the plan, the write.
#pragma once

#include "merger/plan.hpp"
#include "merger/wheel.hpp"
#include "merger/zip/zip_writer.hpp"

#include <optional>
#include <string>
#include <vector>

namespace wm {

struct MergeResult {
  std::string output;
  // The inputs as read, less their file lists (Wheel::release_files: the plan has taken what it
  // needs, and the writer copies from the archives) and, once the output is written and read
  // back, their archives' entries.
  std::vector<Wheel> inputs;
  MergePlan plan;  // less its members once the output is written and read back
};

// The variant label of an input: PATH=LABEL, a .LABEL suffix, a +LABEL local version, and with
// --name (options.name) the distribution name's suffix ("cupy_cuda12x-...whl" is cu12); nullopt
// when none gives one. Its `label` is nullopt where a PATH=LABEL names no label.
std::optional<LabelSource> input_label(const WheelInput& input, const MergeOptions& options);

// The inputs read and checked for a merge (two or more, each with a valid label of one
// selector, no label twice), every member verified; nullopt with every problem found.
std::optional<std::vector<Wheel>> read_inputs(const std::vector<WheelInput>& inputs, const MergeOptions& options,
                                              Problems& problems);

std::optional<MergeResult> merge_wheels(const std::vector<WheelInput>& inputs, const MergeOptions& options,
                                        const std::string& out_dir, DosTime time, Problems& problems);

}  // namespace wm
