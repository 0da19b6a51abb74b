// Merging the METADATA of per-variant builds: identical fields kept, differing Requires-Dist
// made conditional on an extra named after each build's label, anything else a conflict.
#pragma once

#include "problem.hpp"
#include "wheel.hpp"

#include <optional>
#include <string>
#include <vector>

namespace wm {

// `wheels` in label order; `version` is the merged version (no variant label).
std::optional<std::string> merge_metadata(const std::vector<const Wheel*>& wheels,
                                          const std::string& version, Problems& problems);

// "req" or "req; marker" made conditional on `extra == "label"`.
std::string require_for_extra(std::string_view requirement, std::string_view label);

}  // namespace wm
