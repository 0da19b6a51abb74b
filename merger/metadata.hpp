// Merging the METADATA of per-variant builds: identical fields kept, differing Requires-Dist
// made conditional on an extra named after each build's label, anything else a conflict.
//
// Requirements, in the order they are decided:
// - the same in every build (compared parsed: names normalized, extras and specifiers as sets):
//   kept as the first build wrote them;
// - `torch` requirements of `torch` builds (labels torchMmm_cuNN) outside extras: all replaced
//   by ONE requirement admitting exactly the torch minors that have a build
//   (torch210 + torch211 -> `torch>=2.10,<2.12`; torch29 + torch211 -> `torch>=2.9,<2.12,!=2.10.*`),
//   so that pip can never install a torch the loader has no build for, nor a second torch.
//   Floor builds (torchMmmplus_...: torch M.mm or later, against torch's stable ABI) get
//   `torch>=M.mm,<M+1` from the lowest floor; exact and floor labels in one merge are refused;
//   beside the one a build needs. It is added even where no build declared torch: an extension
//   compiled against torch needs torch, and a requirement is what makes pip pick a torch with a
//   build. The builds' extras and markers on torch must agree (else a conflict), and each build's
//   own specifier must admit its label's torch minor (else a conflict: the label or the
//   requirement is wrong);
// - other differing requirements outside extras: `(marker) and extra == "LABEL"`, so
//   `pip install "dist[cu12]"` installs a build's own (cuda-bindings pins stay so);
// - differing requirements that depend on an extra X (CuPy's `cuda-toolkit==12.*; extra == "ctk"`
//   vs `==13.*`): pip evaluates `extra` once per requested extra, so `extra == "ctk" and
//   extra == "cu12"` never holds. Instead every build gets an extra of its own, `X-LABEL`
//   (normalized: `ctk-cu12`, `ctk-cu13`), declared with Provides-Extra and holding that build's
//   requirements of X: `extra == "X"` becomes `extra == "X-LABEL"`. Requirements of X that
//   every build shares stay under X and are made to hold under each `X-LABEL` too
//   (`extra == "ctk" or extra == "ctk-cu12" or ...`), so one spelling per build,
//   `pip install "dist[ctk-cu12]"`, installs all a cu12 build's `[ctk]` installed; plain `[ctk]`
//   installs only the shared part. An extra compared other than with `==`, and a marker that
//   may hold without any extra (`python_version >= "3" or extra == "ctk"`: its build installs it
//   with no extra too), are conflicts.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/label.hpp"
#include "merger/wheel.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wm {

struct MergedMetadata {
  std::string text;
  std::vector<VariantLabel> label_extras;  // the labels that became extras, in label order
  std::vector<std::string> build_extras;   // the per-build extras "X-LABEL" added, in order
  bool cuda_bindings = false;              // some build requires cuda-bindings or cuda-python
  // Per label, the per-build extras that bring its CUDA runtime (cuda-toolkit, nvidia-cuda-runtime*).
  std::map<VariantLabel, std::vector<std::string>> runtime_extras;
};

// `wheels` in label order, each with its label (Wheel::build_label: plan_merge refuses inputs
// without one); `version` is the merged version (no variant label); `name`, when not
// empty, the merged distribution's Name (`--name`: the builds' Name fields may then differ, and
// so may their descriptions, which describe each distribution: the paragraphs they share at the
// start and end are kept once, and each build's own paragraphs between them, introduced by
// "For the cu12 build (from cupy-cuda12x 14.2.0):").
// A wheel's description in either form core metadata allows: the body, else the older
// `Description:` field with its folding removed.
std::string description_text(const Wheel& wheel);

std::optional<MergedMetadata> merge_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                             const std::string& name, Problems& problems);
inline std::optional<MergedMetadata> merge_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                                    Problems& problems) {
  return merge_metadata(wheels, version, {}, problems);
}

// Whether a version specifier set (">=2.10,<2.12", "==2.10.*", "~=2.10.1") admits some final
// release of the series `major.minor` (2.10, 2.10.1, 2.10.1.5, ...). Evaluated on release
// segments; nullopt with `why` for what that cannot decide: `===`, and versions with an epoch,
// a pre-, post- or dev-release or a local part.
std::optional<bool> admits_release_series(std::string_view specifier, int major, int minor, std::string& why);

// The specifier admitting exactly the given `major.minor` series (one major): ">=2.9,<2.12,!=2.10.*".
// Empty with `why` when they span majors.
std::string series_specifier(std::vector<std::pair<int, int>> series, std::string& why);

// An extra's name as pip compares it (PEP 685): lower case, runs of "-_." as one "-".
std::string normalize_extra(std::string_view extra);

// The passes of merge_metadata, in the order it runs them, declared for the unit tests. `wheels`
// in label order, as merge_metadata has them; each pass appends its conflicts to `problems`,
// and merge_metadata stops after any pass that added one.
namespace metadata_passes {

// Every field but Version and Requires-Dist (and Name and Description, when renamed) the same
// in every build, and the description too unless renamed.
void check_fixed_fields(const std::vector<const Wheel*>& wheels, bool renamed, Problems& problems);

// What a build's requirement is to the merge: the same in every build (kept once), a torch
// requirement the combined one replaces, or the build's own.
enum class Share { common, torch, own };
using Shares = std::vector<std::vector<Share>>;  // per build, per requirement
// `torch`: whether the builds' torch requirements give way to a combined one.
Shares share_requirements(const std::vector<const Wheel*>& wheels, bool torch);

// The extras the builds' own requirements depend on, normalized, in order of appearance: each
// becomes one extra per build.
std::vector<std::string> split_extras(const std::vector<const Wheel*>& wheels, const Shares& shares,
                                      Problems& problems);

// The per-build extras of the `split` extras ("ctk-cu12", "ctk-cu13"), extra by extra.
std::vector<std::string> name_build_extras(const std::vector<const Wheel*>& wheels,
                                           const std::vector<std::string>& split, Problems& problems);

// The merged Provides-Extra and Requires-Dist values, in order; METADATA has them as one block.
struct RequirementBlock {
  std::vector<std::string> extras;
  std::vector<std::string> requirements;
};

// The first build's common requirements as written (those of a split extra widened to its
// per-build extras), with `torch` where the first build's first torch requirement was, else last.
std::vector<std::string> common_requirements(const std::vector<const Wheel*>& wheels, const Shares& shares,
                                             const std::vector<std::string>& split,
                                             const std::optional<Requirement>& torch);

// Each build's own requirements added to `block`, made conditional on the build's extras;
// returns the labels that became extras (declared in `block` unless an extra of that name is).
std::vector<VariantLabel> add_own_requirements(const std::vector<const Wheel*>& wheels, const Shares& shares,
                                               RequirementBlock& block, Problems& problems);

// The merged METADATA: the first build's fields, `block` where its extras and requirements
// first appeared, the merged version (and name and description, when `name` is not empty).
std::optional<std::string> render_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                           const std::string& name, const RequirementBlock& block, Problems& problems);

// What the loader needs of the builds' requirements: `cuda_bindings` and `runtime_extras`, from
// `result.build_extras`.
void note_loader_needs(const std::vector<const Wheel*>& wheels, MergedMetadata& result);

}  // namespace metadata_passes

}  // namespace wm
