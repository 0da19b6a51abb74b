#include "merger/zip/member_stream.hpp"

#include "merger/zip/inflate.hpp"
#include "merger/base/interrupt.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

namespace wm {

namespace {
constexpr size_t kChunk = 1 << 20;

// One pass over the member with one decoder.
std::optional<Problem> stream_with(InflateEngine engine, const ZipArchive& zip, const ZipEntry& entry,
                                   const ChunkSink& sink, const std::string& display_name) {
  auto fail = [&](std::string what, std::string expected, std::string found) {
    return Problem{ProblemKind::invalid_input, display_name, std::string(entry.name), std::move(what),
                   std::move(expected), std::move(found)};
  };
  const bool deflated = entry.method == kMethodDeflate;
  // Buffers sized for the member: most members of a wheel are small. One byte more than the
  // declared size lets inflate show at once that the claim is too small.
  std::vector<uint8_t> in(std::min<uint64_t>(kChunk, std::max<uint64_t>(entry.compressed_size, 1)));
  std::vector<uint8_t> out(deflated ? std::min<uint64_t>(kChunk, entry.uncompressed_size + 1) : 0);
  std::optional<RawInflater> inflater;
  if (deflated) inflater.emplace(engine);
  uint32_t crc = 0;
  uint64_t produced = 0;
  uint64_t consumed = 0;  // compressed bytes read from the archive
  bool stream_end = !deflated;

  auto deliver = [&](const uint8_t* data, size_t len) -> std::optional<bool> {
    if (len > entry.uncompressed_size - produced) return std::nullopt;  // the size lied
    crc = crc32_update(crc, data, len);
    produced += len;
    return sink(std::span<const uint8_t>(data, len));
  };
  auto size_lie = [&] {
    return fail("more data than the declared uncompressed size",
                fmt::format("{} bytes", entry.uncompressed_size), "more");
  };
  auto trailing = [&](uint64_t unused) {
    return fail("data after the end of the deflate stream",
                fmt::format("{} compressed bytes", entry.compressed_size - unused),
                fmt::format("{}", entry.compressed_size));
  };

  while (consumed < entry.compressed_size || !stream_end) {
    if (int signal = interrupted()) return interruption(display_name, std::string(entry.name), signal);
    size_t n = 0;
    if (consumed < entry.compressed_size) {
      n = static_cast<size_t>(std::min<uint64_t>(in.size(), entry.compressed_size - consumed));
      if (!zip.file->read_at(entry.data_offset + consumed, std::span(in.data(), n)))
        return fail("cannot read member data", fmt::format("{} bytes", entry.compressed_size), "a short read");
      consumed += n;
    }
    if (!deflated) {
      auto more = deliver(in.data(), n);
      if (!more) return size_lie();
      if (!*more) return std::nullopt;
      continue;
    }
    if (stream_end) return trailing(entry.compressed_size - consumed + n);
    // Decode this input whole; with the last input, go on until the stream ends or stalls.
    const bool last = consumed == entry.compressed_size;
    size_t at = 0;
    while (!stream_end && (at < n || last)) {
      // One chunk of input may inflate to a thousand times its size: a signal is noticed per step.
      if (int signal = interrupted()) return interruption(display_name, std::string(entry.name), signal);
      RawInflater::Step step = inflater->step(in.data() + at, n - at, out.data(), out.size());
      at += step.consumed;
      if (step.status == RawInflater::Status::error)
        return fail("corrupt deflate data", "a valid deflate stream", step.message);
      if (step.produced > 0) {
        auto more = deliver(out.data(), step.produced);
        if (!more) return size_lie();
        if (!*more) return std::nullopt;
      }
      if (step.status == RawInflater::Status::end) {
        stream_end = true;
        if (step.unused > 0 || n - at > 0 || consumed < entry.compressed_size)
          return trailing(entry.compressed_size - consumed + std::max<uint64_t>(step.unused, n - at));
      } else if (step.consumed == 0 && step.produced == 0) {
        if (!last)
          return fail("corrupt deflate data", "a valid deflate stream", "no progress");
        return fail("truncated deflate data", "a complete deflate stream", "it ends early");
      }
    }
  }
  if (produced != entry.uncompressed_size)
    return fail("uncompressed size mismatch", fmt::format("{} bytes", entry.uncompressed_size),
                fmt::format("{} bytes", produced));
  if (crc != entry.crc32)
    return fail("CRC-32 mismatch", fmt::format("{:#010x}", entry.crc32), fmt::format("{:#010x}", crc));
  return std::nullopt;
}

}  // namespace

std::optional<Problem> stream_member(const ZipArchive& zip, const ZipEntry& entry, const ChunkSink& sink,
                                     const std::string& display_name, const std::function<void()>& restart) {
  const InflateEngine first = entry.method == kMethodDeflate ? preferred_inflate_engine() : InflateEngine::zlib;
  auto problem = stream_with(first, zip, entry, sink, display_name);
  if (!problem || problem->kind == ProblemKind::interrupted || first == InflateEngine::zlib) return problem;
  // ISA-L refused the member: zlib's verdict, and its words, stand (every Python installer
  // inflates with zlib). The sink starts over.
  restart();
  return stream_with(InflateEngine::zlib, zip, entry, sink, display_name);
}

std::optional<std::string> read_member(const ZipArchive& zip, const ZipEntry& entry,
                                       size_t limit, const std::string& display_name,
                                       Problems& problems) {
  auto too_large = [&] {
    problems.push_back({ProblemKind::invalid_input, display_name, std::string(entry.name), "member too large",
                        fmt::format("at most {} bytes", limit),
                        fmt::format("{} bytes", entry.uncompressed_size)});
    return std::nullopt;
  };
  if (entry.uncompressed_size > limit) return too_large();
  std::string content;
  content.reserve(static_cast<size_t>(entry.uncompressed_size));  // streaming never goes past it
  auto problem = stream_member(zip, entry, [&](std::span<const uint8_t> chunk) {
    content.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    return true;
  }, display_name, [&] { content.clear(); });
  if (problem) {
    problems.push_back(*problem);
    return std::nullopt;
  }
  return content;
}

}  // namespace wm
