#include "merger/zip/member_stream.hpp"

#include "merger/base/interrupt.hpp"
#include "merger/zip/inflate.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

namespace wm {

namespace {
constexpr size_t kChunk = 1 << 20;

// One pass over a member with one decoder: the state its steps share.
class MemberPass {
 public:
  MemberPass(InflateEngine engine, const ZipArchive& zip, const ZipEntry& entry, const ChunkSink& sink,
             const std::string& display_name)
      : zip_(zip),
        entry_(entry),
        sink_(sink),
        display_name_(display_name),
        deflated_(entry.method == kMethodDeflate),
        // Buffers sized for the member: most members of a wheel are small. One byte more than the
        // declared size lets inflate show at once that the claim is too small.
        in_(std::min<uint64_t>(kChunk, std::max<uint64_t>(entry.compressed_size, 1))),
        out_(deflated_ ? std::min<uint64_t>(kChunk, entry.uncompressed_size + 1) : 0),
        stream_end_(!deflated_) {
    if (deflated_) inflater_.emplace(engine);
  }

  std::optional<Problem> run() {
    while (consumed_ < entry_.compressed_size || !stream_end_) {
      if (int signal = interrupted()) return interruption(display_name_, std::string(entry_.name), signal);
      size_t n = 0;
      if (consumed_ < entry_.compressed_size) {
        n = static_cast<size_t>(std::min<uint64_t>(in_.size(), entry_.compressed_size - consumed_));
        if (!zip_.file->read_at(entry_.data_offset + consumed_, std::span(in_.data(), n)))
          return fail("cannot read member data", fmt::format("{} bytes", entry_.compressed_size), "a short read");
        consumed_ += n;
      }
      if (!deflated_) {
        if (auto problem = deliver(in_.data(), n); problem || stopped_) return problem;
        continue;
      }
      if (stream_end_) return trailing(entry_.compressed_size - consumed_ + n);
      if (auto problem = inflate(n); problem || stopped_) return problem;
    }
    return check_claims();
  }

 private:
  Problem fail(std::string what, std::string expected, std::string found) const {
    return Problem{ProblemKind::invalid_input, display_name_,   std::string(entry_.name), std::move(what),
                   std::move(expected),        std::move(found)};
  }

  Problem trailing(uint64_t unused) const {
    return fail("data after the end of the deflate stream",
                fmt::format("a stream of {} compressed bytes, the declared size", entry_.compressed_size),
                fmt::format("a stream that ends after {} bytes", entry_.compressed_size - unused));
  }

  // Hands `len` bytes to the sink, counted and checksummed; stopped_ when it wants no more. A problem
  // where they pass the declared size: the size lied.
  std::optional<Problem> deliver(const uint8_t* data, size_t len) {
    if (len > entry_.uncompressed_size - produced_)
      return fail("more data than the declared uncompressed size", fmt::format("{} bytes", entry_.uncompressed_size),
                  "more bytes");
    crc_ = crc32_update(crc_, data, len);
    produced_ += len;
    stopped_ = !sink_(std::span<const uint8_t>(data, len));
    return std::nullopt;
  }

  // Decodes the `n` bytes of input just read, whole; with the last input, goes on until the stream
  // ends or stalls.
  std::optional<Problem> inflate(size_t n) {
    const bool last = consumed_ == entry_.compressed_size;
    size_t at = 0;
    while (!stream_end_ && (at < n || last)) {
      // One chunk of input may inflate to a thousand times its size: a signal is noticed per step.
      if (int signal = interrupted()) return interruption(display_name_, std::string(entry_.name), signal);
      RawInflater::Step step = inflater_->step(in_.data() + at, n - at, out_.data(), out_.size());
      at += step.consumed;
      if (step.status == RawInflater::Status::error)
        return fail("corrupt deflate data", "a valid deflate stream", step.message);
      if (step.produced > 0) {
        if (auto problem = deliver(out_.data(), step.produced); problem || stopped_) return problem;
      }
      if (step.status == RawInflater::Status::end) {
        stream_end_ = true;
        if (step.unused > 0 || n - at > 0 || consumed_ < entry_.compressed_size)
          return trailing(entry_.compressed_size - consumed_ + std::max<uint64_t>(step.unused, n - at));
      } else if (step.consumed == 0 && step.produced == 0) {
        if (!last) return fail("corrupt deflate data", "a valid deflate stream", "a stream that makes no progress");
        return fail("truncated deflate data", "a complete deflate stream", "a stream that ends early");
      }
    }
    return std::nullopt;
  }

  // After the whole member: what it gave matches the archive's size and CRC-32.
  std::optional<Problem> check_claims() const {
    if (produced_ != entry_.uncompressed_size)
      return fail("uncompressed size mismatch", fmt::format("{} bytes", entry_.uncompressed_size),
                  fmt::format("{} bytes", produced_));
    if (crc_ != entry_.crc32)
      return fail("CRC-32 mismatch", fmt::format("{:#010x}", entry_.crc32), fmt::format("{:#010x}", crc_));
    return std::nullopt;
  }

  const ZipArchive& zip_;
  const ZipEntry& entry_;
  const ChunkSink& sink_;
  const std::string& display_name_;
  const bool deflated_;
  std::vector<uint8_t> in_, out_;
  std::optional<RawInflater> inflater_;
  uint32_t crc_ = 0;
  uint64_t produced_ = 0;
  uint64_t consumed_ = 0;  // compressed bytes read from the archive
  bool stream_end_;
  bool stopped_ = false;  // the sink wanted no more: not an error, and nothing more is checked
};

// One pass over the member with one decoder.
std::optional<Problem> stream_with(InflateEngine engine, const ZipArchive& zip, const ZipEntry& entry,
                                   const ChunkSink& sink, const std::string& display_name) {
  return MemberPass(engine, zip, entry, sink, display_name).run();
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

std::optional<std::string> read_member(const ZipArchive& zip, const ZipEntry& entry, size_t limit,
                                       const std::string& display_name, Problems& problems) {
  auto too_large = [&] {
    problems.push_back({ProblemKind::invalid_input, display_name, std::string(entry.name), "member too large",
                        fmt::format("at most {} bytes", limit), fmt::format("{} bytes", entry.uncompressed_size)});
    return std::nullopt;
  };
  if (entry.uncompressed_size > limit) return too_large();
  std::string content;
  content.reserve(static_cast<size_t>(entry.uncompressed_size));  // streaming never goes past it
  auto problem = stream_member(
      zip, entry,
      [&](std::span<const uint8_t> chunk) {
        content.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
        return true;
      },
      display_name, [&] { content.clear(); });
  if (problem) {
    problems.push_back(*problem);
    return std::nullopt;
  }
  return content;
}

}  // namespace wm
