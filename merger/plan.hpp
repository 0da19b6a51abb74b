// The merge plan: what the merged wheel holds, member by member, decided from validated
// inputs alone. Planning touches no file; writing (write.hpp) decides nothing.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"
#include "merger/wheel.hpp"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wm {

struct MergeOptions {
  std::vector<std::string> variant_globs;  // extra paths that may differ per build
  bool driver_fallback = false;            // let the loader ask the driver for its CUDA version
  std::map<VariantLabel, std::map<std::string, std::string>> build_info;  // per label, for build_info()
  // The merged distribution's name (`--name`), given where the inputs are distributions of
  // different names ("cupy-cuda12x", "cupy-cuda13x" -> "cupy"); empty: the inputs' common name.
  std::string name;
  // Generated files added to the dist-info: path inside it -> content (a variant wheel's
  // variant.json). RECORD, WHEEL and METADATA are always generated and cannot be given here.
  std::map<std::string, std::string> dist_info_files;
  // With one build: give each package with extension modules a loader that imports them from
  // their own names once the build is selected, so that a platform with one build (cuda-core's
  // win_arm64, CUDA 13 only) still says which build it has and why it cannot load, like its
  // merged siblings. Off for a variant wheel, where an installer chose the build.
  bool single_build_loader = true;
  // Each build's CUDA libraries that NVIDIA's runtime wheels ship and no requirement of the build
  // brings become its requirements (merger/runtime_wheels.hpp), instead of warnings.
  bool runtime_requirements = false;
};

// A file that differs per build, stored under a labelled name; or, in a merge of one build, an
// extension module its loader imports, stored under its own name (stored == original).
struct VariantFile {
  VariantLabel label;
  std::string original;  // path in the input wheel
  std::string stored;    // path in the merged wheel
  bool labelled() const { return stored != original; }
};

// Where a plan's member paths and generated contents live: appended, never moved, shared by
// copies of the plan (a path is stored once, not in a heap block per member).
struct PlanText {
  NameStore paths;
  std::deque<std::string> contents;
};

struct PlannedMember {
  std::string_view path;  // in the plan's text
  // Generated: its bytes, in the plan's text (empty for a copied member).
  std::string_view content;
  uint64_t size = 0;
  // Copied compressed from member `entry` of input `input` (an index into plan_merge's
  // `wheels`); no input: generated.
  uint32_t entry = 0;
  std::optional<uint32_t> input;
  std::optional<Sha256> sha256;  // absent only for RECORD
  bool executable = false;
};
static_assert(sizeof(PlannedMember) <= 88);

struct MergePlan {
  std::string filename;
  std::string dist_info;
  std::vector<VariantLabel> labels;  // the builds', in label order
  std::vector<std::string> tags;
  std::vector<PlannedMember> members;                             // in output order, RECORD last
  std::shared_ptr<PlanText> text = std::make_shared<PlanText>();  // the members' paths and contents
  std::vector<VariantFile> variant_files;
  std::vector<std::string> loader_packages;  // package directories that got a loader
  size_t shared_files = 0;
  std::vector<std::string> warnings;
};

// `wheels` may come in any order; the plan is the same for every order. Each must carry its
// label (a problem for one that does not). Pure: reads nothing but the models (the text of
// __init__.py files included).
// `files_read`, when given, is called once the planner has read the last of the inputs' file
// lists (Wheel::files, index, init_sources), before its last passes: a caller that owns the
// inputs may free those lists there, the bulk of a large wheel's model.
std::optional<MergePlan> plan_merge(std::span<const Wheel> wheels, const MergeOptions& options, Problems& problems,
                                    const std::function<void()>& files_read = {});

// The order to preload private libraries in, as indices into `libs`: each after every library
// whose SONAME it needs; the given order decides among those ready at once and breaks cycles.
std::vector<size_t> preload_order(const std::vector<const ElfInfo*>& libs);

// "dir/_core.cpython-311-x86_64-linux-gnu.so" -> "dir/_core.cu12.cpython-311-x86_64-linux-gnu.so"
std::string labelled_path(const std::string& path, const VariantLabel& label);

}  // namespace wm
