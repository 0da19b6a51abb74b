// Writes a merge plan: into an unnamed temporary file in the output directory, checked, then
// linked into place, so the output path holds either nothing or the complete wheel, and no
// other file is ever left beside it. (Where the file system has no O_TMPFILE, a named
// temporary file is used and removed on failure; only a kill can leave that one behind.)
#pragma once

#include "merger/plan.hpp"
#include "merger/problem.hpp"
#include "merger/zip_writer.hpp"

#include <optional>
#include <string>

namespace wm {

// Returns the path written; nullopt with problems (nothing left behind) on failure.
std::optional<std::string> write_wheel(const MergePlan& plan, const std::vector<Wheel>& inputs,
                                       const std::string& out_dir, DosTime time, Problems& problems);

// The archive at `path` read back: structure, the names and order the plan promised, the
// generated members' bytes and the loaders against the files (as `wheelmerge verify` checks
// them); libzip's consistency check as a second, independent reader. Copied members are not
// hashed again: their bytes are those of input members whose hashes were verified, and their
// headers (CRC, sizes) are checked here.
void check_written(const std::string& path, const std::string& display, const MergePlan& plan, Problems& problems);

}  // namespace wm
