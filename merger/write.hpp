// Writes a merge plan: into an unnamed temporary file in the output directory, checked, then
// linked into place, so the output path holds either nothing or the complete wheel, and no
// other file is ever left beside it. (Where the file system has no O_TMPFILE, or no /proc is
// mounted to link the unnamed file through, a named temporary file is used and removed on
// failure or interruption; only a kill can leave that one behind.)
#pragma once

#include "merger/base/problem.hpp"
#include "merger/plan.hpp"
#include "merger/zip/zip_writer.hpp"

#include <functional>
#include <optional>
#include <string>

namespace wm {

// Where a caller that owns the inputs and the plan may free them as writing goes on; each is
// called once, when set.
struct WriteHooks {
  // Every member is written: the inputs (their archive models above all) are not read again.
  std::function<void()> copied;
  // The output is read back against the plan, before libzip's check, which needs no member of
  // the plan: plan.members and plan.text may go (the rest of the plan, its filename above all,
  // is still read).
  std::function<void()> read_back;
};

// Returns the path written; nullopt with problems (nothing left behind) on failure.
std::optional<std::string> write_wheel(const MergePlan& plan, std::span<const Wheel> inputs, const std::string& out_dir,
                                       DosTime time, Problems& problems, const WriteHooks& hooks = {});

// The archive at `path` read back: structure, the names and order the plan promised, the
// generated members' bytes and the loaders against the files (as `wheelmerge verify` checks
// them); libzip's consistency check as a second, independent reader. Copied members are not
// hashed again: their bytes are those of input members whose hashes were verified, and their
// headers (CRC, sizes) are checked here.
// `read_back` as WriteHooks says.
void check_written(const std::string& path, const std::string& display, const MergePlan& plan, Problems& problems,
                   const std::function<void()>& read_back = {});

}  // namespace wm
