#include "merger/member_stream.hpp"

#include "merger/interrupt.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <memory>
#include <vector>

namespace wm {

namespace {
constexpr size_t kChunk = 1 << 20;
}

std::optional<Problem> stream_member(const ZipArchive& zip, const ZipEntry& entry,
                                     const ChunkSink& sink, const std::string& display_name) {
  auto fail = [&](std::string what, std::string expected, std::string found) {
    return Problem{ProblemKind::invalid_input, display_name, entry.name, std::move(what),
                   std::move(expected), std::move(found)};
  };
  // Buffers sized for the member: most members of a wheel are small. One byte more than the
  // declared size lets inflate show at once that the claim is too small.
  std::vector<uint8_t> in(std::min<uint64_t>(kChunk, std::max<uint64_t>(entry.compressed_size, 1)));
  std::vector<uint8_t> out(entry.method == kMethodDeflate ? std::min<uint64_t>(kChunk, entry.uncompressed_size + 1) : 0);
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t produced = 0;
  uint64_t consumed = 0;

  z_stream z{};
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(nullptr, inflateEnd);
  if (entry.method == kMethodDeflate) {
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return fail("cannot start inflating", {}, {});
    guard.reset(&z);
  }
  bool stream_end = entry.method == kMethodStored;

  auto deliver = [&](const uint8_t* data, size_t len) -> std::optional<bool> {
    if (len > entry.uncompressed_size - produced) return std::nullopt;  // the size lied
    crc = crc32(crc, data, static_cast<uInt>(len));
    produced += len;
    return sink(std::span<const uint8_t>(data, len));
  };
  auto size_lie = [&] {
    return fail("more data than the declared uncompressed size",
                fmt::format("{} bytes", entry.uncompressed_size), "more");
  };

  while (consumed < entry.compressed_size) {
    if (int signal = interrupted()) return interruption(display_name, entry.name, signal);
    size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), entry.compressed_size - consumed));
    if (!zip.file->read_at(entry.data_offset + consumed, std::span(in.data(), n)))
      return fail("cannot read member data", fmt::format("{} bytes", entry.compressed_size), "a short read");
    consumed += n;
    if (entry.method == kMethodStored) {
      auto more = deliver(in.data(), n);
      if (!more) return size_lie();
      if (!*more) return std::nullopt;
      continue;
    }
    if (stream_end) return fail("data after the end of the deflate stream",
                                fmt::format("{} compressed bytes", consumed - n), "more");
    z.next_in = in.data();
    z.avail_in = static_cast<uInt>(n);
    while (z.avail_in > 0 && !stream_end) {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      int rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        return fail("corrupt deflate data", "a valid deflate stream", z.msg ? z.msg : "an error");
      auto more = deliver(out.data(), out.size() - z.avail_out);
      if (!more) return size_lie();
      if (!*more) return std::nullopt;
      stream_end = rc == Z_STREAM_END;
      if (rc == Z_BUF_ERROR && z.avail_in > 0 && z.avail_out > 0)
        return fail("corrupt deflate data", "a valid deflate stream", "no progress");
    }
    if (stream_end && (z.avail_in > 0 || consumed < entry.compressed_size))
      return fail("data after the end of the deflate stream",
                  fmt::format("{} compressed bytes", entry.compressed_size - z.avail_in -
                                                         (entry.compressed_size - consumed)),
                  fmt::format("{}", entry.compressed_size));
  }
  // Flush what inflate still holds once all input is in (a final block may produce output).
  while (entry.method == kMethodDeflate && !stream_end) {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    size_t got = out.size() - z.avail_out;
    if (got > 0) {
      auto more = deliver(out.data(), got);
      if (!more) return size_lie();
      if (!*more) return std::nullopt;
    }
    if (rc == Z_STREAM_END) stream_end = true;
    else if (got == 0) return fail("truncated deflate data", "a complete deflate stream", "it ends early");
  }
  if (produced != entry.uncompressed_size)
    return fail("uncompressed size mismatch", fmt::format("{} bytes", entry.uncompressed_size),
                fmt::format("{} bytes", produced));
  if (crc != entry.crc32)
    return fail("CRC-32 mismatch", fmt::format("{:#010x}", entry.crc32), fmt::format("{:#010x}", crc));
  return std::nullopt;
}

std::optional<std::vector<uint8_t>> read_member(const ZipArchive& zip, const ZipEntry& entry,
                                                size_t limit, const std::string& display_name,
                                                Problems& problems) {
  std::vector<uint8_t> content;
  bool too_big = false;
  auto problem = stream_member(zip, entry, [&](std::span<const uint8_t> chunk) {
    if (content.size() + chunk.size() > limit) {
      too_big = true;
      return false;
    }
    content.insert(content.end(), chunk.begin(), chunk.end());
    return true;
  }, display_name);
  if (problem) {
    problems.push_back(*problem);
    return std::nullopt;
  }
  if (too_big) {
    problems.push_back({ProblemKind::invalid_input, display_name, entry.name, "member too large",
                        fmt::format("at most {} bytes", limit),
                        fmt::format("{} bytes", entry.uncompressed_size)});
    return std::nullopt;
  }
  return content;
}

}  // namespace wm
