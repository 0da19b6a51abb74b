// Writes a merge plan: into an unnamed temporary file in the output directory, checked, then
// linked into place, so the output path holds either nothing or the complete wheel, and no
// other file is ever left beside it. (Where the file system has no O_TMPFILE, a named
// temporary file is used and removed on failure; only a kill can leave that one behind.)
#pragma once

#include "merger/plan.hpp"
#include "merger/problem.hpp"
#include "merger/zip_writer.hpp"

#include <functional>
#include <optional>
#include <string>

namespace wm {

// Returns the path written; nullopt with problems (nothing left behind) on failure.
// `read_back`, when given, is called once the output is written and read back against the plan,
// before libzip's check, which needs neither the inputs nor the plan's members: a caller that
// owns them may free the inputs' archive models and plan.members there (the rest of the plan,
// its filename above all, is still read).
std::optional<std::string> write_wheel(const MergePlan& plan, const std::vector<Wheel>& inputs,
                                       const std::string& out_dir, DosTime time, Problems& problems,
                                       const std::function<void()>& read_back = {});

// The archive at `path` read back: structure, the names and order the plan promised, the
// generated members' bytes and the loaders against the files (as `wheelmerge verify` checks
// them); libzip's consistency check as a second, independent reader. Copied members are not
// hashed again: their bytes are those of input members whose hashes were verified, and their
// headers (CRC, sizes) are checked here.
// `read_back` as for write_wheel.
void check_written(const std::string& path, const std::string& display, const MergePlan& plan, Problems& problems,
                   const std::function<void()>& read_back = {});

}  // namespace wm
