// ISA-L against zlib on raw deflate data: wheelmerge inflates with ISA-L (patched to refuse the
// Huffman code sets zlib refuses, third_party/isal/) and accepts a member only as zlib would, so
// whatever ISA-L accepts, zlib must accept with the same bytes and the same end of stream.
// The input: one byte choosing how the data is cut into steps (input chunk and output buffer
// sizes, so that both decoders are driven through their resumable paths), then the data.
// Properties:
//   - ISA-L ends the stream => zlib ends it too, with the same output and the same unused input;
//   - zlib ends it => ISA-L ends it the same way (where not, member_stream falls back to zlib,
//     which is correct but slow: the harness reports it, so that it stays rare and known).
#include "fuzz_common.hpp"
#include "merger/zip/inflate.hpp"

#include <string>
#include <vector>

namespace {

struct Verdict {
  enum class Kind { end, error, truncated } kind = Kind::truncated;
  std::string output;
  size_t unused = 0;  // input bytes after the end of the stream
  std::string message;
};

// Output is capped (64 KiB of input inflates to at most ~66 MB; the cap keeps runs fast): past
// it, both decoders are still compared on what they produced up to the cap and their verdict.
constexpr size_t kMaxOutput = 8 << 20;

Verdict inflate_all(wm::InflateEngine engine, const uint8_t* data, size_t size, size_t in_chunk, size_t out_chunk) {
  wm::RawInflater inflater(engine);
  Verdict v;
  std::vector<uint8_t> out(out_chunk);
  size_t at = 0;
  for (;;) {
    size_t n = std::min(in_chunk, size - at);
    auto step = inflater.step(data + at, n, out.data(), out.size());
    at += step.consumed;
    if (v.output.size() < kMaxOutput)
      v.output.append(reinterpret_cast<const char*>(out.data()), std::min(step.produced, kMaxOutput - v.output.size()));
    if (step.status == wm::RawInflater::Status::error) {
      v.kind = Verdict::Kind::error;
      v.message = step.message;
      return v;
    }
    if (step.status == wm::RawInflater::Status::end) {
      v.kind = Verdict::Kind::end;
      FUZZ_CHECK(step.unused == n - step.consumed, "the end's unused input is not what the step left");
      v.unused = size - at;
      return v;
    }
    if (step.consumed == 0 && step.produced == 0 && at == size) return v;  // truncated
    if (step.consumed == 0 && step.produced == 0 && n > 0) {
      v.kind = Verdict::Kind::error;
      v.message = "no progress";
      return v;
    }
  }
}

const char* name(Verdict::Kind k) {
  return k == Verdict::Kind::end ? "end" : k == Verdict::Kind::error ? "error" : "truncated";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr size_t kInChunks[] = {1 << 20, 1, 7, 64, 4096};
  static constexpr size_t kOutChunks[] = {1 << 20, 1, 300, 32768, 65536};
  const size_t in_chunk = kInChunks[data[0] % 5], out_chunk = kOutChunks[(data[0] / 5) % 5];
  ++data;
  --size;
  Verdict isal = inflate_all(wm::InflateEngine::isal, data, size, in_chunk, out_chunk);
  Verdict zlib = inflate_all(wm::InflateEngine::zlib, data, size, in_chunk, out_chunk);
  auto describe = [&] {
    return std::string("ISA-L: ") + name(isal.kind) + " " + isal.message + " (" + std::to_string(isal.output.size()) +
           " bytes out, " + std::to_string(isal.unused) + " unused); zlib: " + name(zlib.kind) + " " + zlib.message +
           " (" + std::to_string(zlib.output.size()) + " bytes out, " + std::to_string(zlib.unused) + " unused)";
  };
  if (isal.kind == Verdict::Kind::end) {
    FUZZ_CHECK(zlib.kind == Verdict::Kind::end, "ISA-L accepts a stream zlib does not: " + describe());
    FUZZ_CHECK(isal.output == zlib.output, "ISA-L and zlib inflate to different bytes: " + describe());
    FUZZ_CHECK(isal.unused == zlib.unused, "ISA-L and zlib end the stream at different places: " + describe());
  }
  if (zlib.kind == Verdict::Kind::end)
    FUZZ_CHECK(isal.kind == Verdict::Kind::end, "zlib accepts a stream ISA-L refuses: " + describe());
  return 0;
}
