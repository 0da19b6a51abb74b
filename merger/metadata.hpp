// Merging the METADATA of per-variant builds: identical fields kept, differing Requires-Dist
// made conditional on an extra named after each build's label, anything else a conflict.
#pragma once

#include "merger/problem.hpp"
#include "merger/wheel.hpp"

#include <optional>
#include <string>
#include <vector>

namespace wm {

struct MergedMetadata {
  std::string text;
  std::vector<std::string> label_extras;  // the labels that became extras, in label order
};

// `wheels` in label order; `version` is the merged version (no variant label). Requirements are
// compared by their parsed form; a differing one becomes `(marker) and extra == "label"`,
// combined as marker trees. One that already depends on an extra cannot be (pip evaluates
// `extra` once per requested extra, so it would never apply): a conflict.
std::optional<MergedMetadata> merge_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                             Problems& problems);

}  // namespace wm
