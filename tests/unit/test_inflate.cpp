#include "merger/zip/inflate.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <string>
#include <vector>

using namespace wm;

namespace {

std::vector<uint8_t> deflate_raw(const std::string& data, int level, int strategy = Z_DEFAULT_STRATEGY) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, level, Z_DEFLATED, -MAX_WBITS, 8, strategy) == Z_OK);
  std::vector<uint8_t> out(deflateBound(&z, data.size()) + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<uint8_t> hex(const std::string& text) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

struct Outcome {
  RawInflater::Status status = RawInflater::Status::progress;
  std::string output;
  size_t unused = 0;
};

// The whole stream through one engine, `in_chunk` bytes of input and `out_chunk` of output a step.
Outcome inflate(InflateEngine engine, const std::vector<uint8_t>& data, size_t in_chunk, size_t out_chunk) {
  RawInflater inflater(engine);
  Outcome o;
  std::vector<uint8_t> out(out_chunk);
  size_t at = 0;
  for (int guard = 0; guard < 10'000'000; ++guard) {
    size_t n = std::min(in_chunk, data.size() - at);
    auto step = inflater.step(data.data() + at, n, out.data(), out.size());
    at += step.consumed;
    o.output.append(reinterpret_cast<const char*>(out.data()), step.produced);
    if (step.status != RawInflater::Status::progress) {
      o.status = step.status;
      o.unused = data.size() - at;
      return o;
    }
    if (step.consumed == 0 && step.produced == 0 && at == data.size()) return o;  // truncated
  }
  FAIL("no end");
  return o;
}

std::string sample() {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += "line " + std::to_string(i * 7919 % 1000) + (i % 3 ? " alpha\n" : " beta\n");
  for (int i = 0; i < 50000; ++i) s += static_cast<char>((i * 2654435761u) >> 23);
  return s;
}

}  // namespace

TEST_CASE("inflate: ISA-L and zlib give the same bytes for every level, strategy and step size") {
  const std::string data = sample();
  for (int level : {0, 1, 6, 9})
    for (int strategy : {Z_DEFAULT_STRATEGY, Z_FIXED, Z_HUFFMAN_ONLY, Z_RLE}) {
      auto stream = deflate_raw(data, level, strategy);
      for (auto [in_chunk, out_chunk] : {std::pair<size_t, size_t>{1 << 20, 1 << 20}, {7, 300}, {4096, 65536}}) {
        CAPTURE(level);
        CAPTURE(strategy);
        CAPTURE(in_chunk);
        for (InflateEngine engine : {InflateEngine::isal, InflateEngine::zlib}) {
          Outcome o = inflate(engine, stream, in_chunk, out_chunk);
          CHECK(o.status == RawInflater::Status::end);
          CHECK(o.output == data);
          CHECK(o.unused == 0);
        }
      }
    }
}

TEST_CASE("inflate: both engines find the end of the stream before trailing bytes") {
  auto stream = deflate_raw(sample(), 6);
  for (uint8_t extra : {1, 4, 40}) {
    auto data = stream;
    data.insert(data.end(), extra, 0x50);
    for (InflateEngine engine : {InflateEngine::isal, InflateEngine::zlib}) {
      Outcome o = inflate(engine, data, 1 << 20, 1 << 20);
      CHECK(o.status == RawInflater::Status::end);
      CHECK(o.unused == extra);
    }
  }
}

TEST_CASE("inflate: a truncated stream ends without an end, in both engines") {
  auto stream = deflate_raw(sample(), 6);
  stream.resize(stream.size() - 10);
  for (InflateEngine engine : {InflateEngine::isal, InflateEngine::zlib})
    CHECK(inflate(engine, stream, 1 << 20, 1 << 20).status == RawInflater::Status::progress);
}

TEST_CASE("inflate: an incomplete literal/length code is refused by zlib and by the patched ISA-L") {
  // tests/integration/hostile/test_bad_inputs.py INCOMPLETE_CODE_AAA: decodes to "AAA" where the
  // code set is not checked (Debian's ISA-L 2.30 does); third_party/isal/README.md.
  auto incomplete =
      hex("05c001080000008220000000000000000000000000000000000200000000000000000000000000000000"
          "000000000000000000000000000000000000000000000000000000000000800404");
  auto complete = hex("05c001040000000010000000000000000001000000000000000000000000000000000000000000008009");
  for (InflateEngine engine : {InflateEngine::isal, InflateEngine::zlib}) {
    CAPTURE(inflate_engine_description(engine));
    CHECK(inflate(engine, incomplete, 1 << 20, 1 << 20).status == RawInflater::Status::error);
    Outcome ok = inflate(engine, complete, 1 << 20, 1 << 20);
    CHECK(ok.status == RawInflater::Status::end);
    CHECK(ok.output == "AA");
  }
}

TEST_CASE("inflate: the build inflates with ISA-L, and its CRC-32 is zlib's") {
#if WHEELMERGE_WITH_ISAL
  CHECK(preferred_inflate_engine() == InflateEngine::isal);
#else
  CHECK(preferred_inflate_engine() == InflateEngine::zlib);
#endif
  const std::string data = sample();
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  uint32_t expected = static_cast<uint32_t>(crc32(0, bytes, static_cast<uInt>(data.size())));
  CHECK(crc32_update(0, bytes, data.size()) == expected);
  uint32_t pieces = 0;
  for (size_t at = 0; at < data.size(); at += 777)
    pieces = crc32_update(pieces, bytes + at, std::min<size_t>(777, data.size() - at));
  CHECK(pieces == expected);
  CHECK(crc32_update(0, bytes, 0) == 0);
}

TEST_CASE("inflate: an inflater's state, reused by the next on the thread, starts clean") {
  const std::string first = sample();
  const std::string second = "a second, shorter stream " + std::string(3000, 'z');
  for (InflateEngine engine : {InflateEngine::isal, InflateEngine::zlib}) {
    CAPTURE(static_cast<int>(engine));
    {  // left mid-stream: its state, window and half-decoded block go to the next inflater
      RawInflater abandoned(engine);
      const std::vector<uint8_t> data = deflate_raw(first, 6);
      std::vector<uint8_t> out(4096);
      auto step = abandoned.step(data.data(), data.size() / 2, out.data(), out.size());
      CHECK(step.status == RawInflater::Status::progress);
    }
    // The next one decodes its own stream exactly, in both engines and in either order.
    for (InflateEngine next : {InflateEngine::isal, InflateEngine::zlib}) {
      Outcome o = inflate(next, deflate_raw(second, 9), 7, 13);
      CHECK(o.status == RawInflater::Status::end);
      CHECK(o.output == second);
    }
    // A corrupt stream after a good one is still refused.
    std::vector<uint8_t> bad = hex("ff");
    Outcome refused = inflate(engine, bad, 1, 64);
    CHECK(refused.status == RawInflater::Status::error);
  }
}
