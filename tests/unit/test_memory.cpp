#include "merger/base/memory.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define WM_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WM_SANITIZED_ALLOCATOR 1
#endif
#endif

namespace {

// This process's resident set, in KiB (Linux).
long resident_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  REQUIRE(f);
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

}  // namespace

TEST_CASE("release_free_memory gives freed pages in the middle of the heap back") {
#if !defined(__GLIBC__) || defined(WM_SANITIZED_ALLOCATOR)
  return;  // only glibc's allocator keeps freed pages (a sanitizer's allocator has its own)
#endif
  // 64 MiB of small blocks, written so they are resident; all but the last freed, so the heap
  // cannot simply shrink from its top: only trimming returns the pages.
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 16384; ++i) {
    blocks.push_back(std::make_unique<char[]>(4000));
    std::memset(blocks.back().get(), 1, 4000);
  }
  std::unique_ptr<char[]> last = std::move(blocks.back());
  blocks.clear();
  blocks.shrink_to_fit();
  const long before = resident_kib();
  wm::release_free_memory();
  const long after = resident_kib();
  CHECK(before - after > 32 * 1024);
  CHECK(last[0] == 1);
}
