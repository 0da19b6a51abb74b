// FatbinWalker over arbitrary bytes, fed in chunks as a member streams by (the first byte picks
// the chunk size), and sm_arch_values over what it read. Properties: no crash, the result (the
// code read, or that it is unreadable) does not depend on how the bytes were chunked, and every
// entry read names an architecture in the walker's bounds. FatbinRecorder fed the same chunks:
// whatever it puts together for the whole range, or for the range from an 8-aligned offset the
// first byte picks, is what FatbinWalker reads there, and readable.
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
  wm::FatbinRecorder recorder(bytes.size());
  wm_fuzz::in_chunks(bytes, chunk, [&](std::span<const uint8_t> part) { recorder.feed(part); });
  const size_t from = std::min<size_t>(8 * (data[0] >> 4), bytes.size());
  for (const wm::ByteRange& range : {wm::ByteRange{0, bytes.size()}, wm::ByteRange{from, bytes.size() - from}}) {
    auto code = recorder.code_in({range});
    if (!code) continue;
    const wm::GpuCodeScan truth = walk(bytes.subspan(range.offset, range.size), 1 << 20);
    FUZZ_CHECK(truth.unreadable.empty(), "the recorder put together a range the walker cannot read");
    FUZZ_CHECK(*code == truth.code, "the recorder's code differs from the walker's");
  }
  return 0;
}
