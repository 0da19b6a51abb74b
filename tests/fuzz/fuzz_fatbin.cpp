// FatbinWalker over arbitrary bytes, fed in chunks as a member streams by (the first byte picks
// the chunk size), and sm_arch_values over what it read. Properties: no crash, the result (the
// code read, or that it is unreadable) does not depend on how the bytes were chunked, and every
// entry read names an architecture in the walker's bounds.
#include "fuzz_common.hpp"
#include "merger/gpu_code.hpp"

namespace {
wm::GpuCodeScan walk(std::span<const uint8_t> bytes, size_t chunk) {
  wm::FatbinWalker walker(bytes.size());
  wm_fuzz::in_chunks(bytes, chunk, [&](std::span<const uint8_t> part) { walker.feed(part); });
  return std::move(walker).finish();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = wm_fuzz::chunk_size(data[0]);
  std::span<const uint8_t> bytes(data + 1, size - 1);
  const wm::GpuCodeScan whole = walk(bytes, 1 << 20), chunked = walk(bytes, chunk);
  FUZZ_CHECK(whole.unreadable.empty() == chunked.unreadable.empty(), "readability depends on the chunk size");
  FUZZ_CHECK(whole.code == chunked.code, "the code read depends on the chunk size");
  for (const wm::GpuCode& c : whole.code) FUZZ_CHECK(c.arch >= 10 && c.arch <= 999, "an architecture out of bounds");
  if (whole.unreadable.empty()) (void)wm::sm_arch_values({{"a.so", whole.code}, {"b.so", chunked.code}});
  return 0;
}
