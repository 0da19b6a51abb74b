// Giving freed memory back to the system between the phases of a merge.
#pragma once

namespace wm {

// Returns the pages of freed memory to the system. glibc keeps one heap per thread: memory the
// reading workers freed stays resident on theirs while later phases grow another, so without
// this the peak RSS would be the sum of the phases rather than the largest.
void release_free_memory();

}  // namespace wm
