// Streams the uncompressed content of one archive member through a callback, in bounded
// chunks, checking what the archive claims about it: the CRC-32, the uncompressed size (never
// trusted for allocation; inflating stops as soon as the data passes it) and that the deflate
// stream ends exactly at the member's compressed end.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/zip/zip_archive.hpp"

#include <functional>
#include <optional>
#include <span>

namespace wm {

// Receives consecutive chunks; returns false to stop early (not an error: no checks are then
// made on the rest).
using ChunkSink = std::function<bool(std::span<const uint8_t>)>;

// nullopt when the member was read whole and matched its claims, or the sink stopped early.
// Deflated members are inflated with ISA-L (inflate.hpp); where it refuses one, the member is
// streamed again with zlib, whose verdict stands: `restart` is called first, so that the sink
// forgets what it received.
std::optional<Problem> stream_member(const ZipArchive& zip, const ZipEntry& entry, const ChunkSink& sink,
                                     const std::string& display_name, const std::function<void()>& restart);

// The whole content of a small member, refused past `limit` bytes. Its declared size, once within
// the limit, is reserved: the content is allocated once, at the size streaming allows.
std::optional<std::string> read_member(const ZipArchive& zip, const ZipEntry& entry, size_t limit,
                                       const std::string& display_name, Problems& problems);

}  // namespace wm
