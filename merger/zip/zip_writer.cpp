#include "merger/zip/zip_writer.hpp"

#include "merger/base/bytes.hpp"

#include <zlib.h>

#include <algorithm>

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <memory>

namespace wm {

namespace {
constexpr uint64_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMadeByUnix = 3 << 8;
// A central directory record at its largest: fixed fields, a name, a ZIP64 extra of three values.
constexpr size_t kCentralRecordMax = 46 + 0xFFFF + 4 + 3 * 8;
// copy_file_range's offsets (Linux) are loff_t, which glibc declares in <sys/types.h> and musl
// only as a macro in <fcntl.h>: off_t itself, 64 bits on every 64-bit target, on musl and on
// macOS (the build sets no _FILE_OFFSET_BITS).
static_assert(sizeof(off_t) == 8, "offsets of members past 2 GiB need a 64-bit off_t");

bool needs_utf8_flag(std::string_view name) {
  for (char c : name)
    if (static_cast<uint8_t>(c) >= 0x80) return true;
  return false;
}
}  // namespace

DosTime dos_time_from_epoch(int64_t seconds) {
  constexpr int64_t k1980 = 315532800, k2107 = 4354819199;
  seconds = std::clamp(seconds, k1980, k2107);
  time_t t = static_cast<time_t>(seconds);
  struct tm tm {};
  gmtime_r(&t, &tm);
  DosTime d;
  d.date = static_cast<uint16_t>(((tm.tm_year - 80) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
  d.time = static_cast<uint16_t>((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
  return d;
}

DosTime output_time_from_environment(std::string& warning) {
  const char* sde = std::getenv("SOURCE_DATE_EPOCH");
  if (!sde || !*sde) return {};
  char* end = nullptr;
  errno = 0;
  long long seconds = std::strtoll(sde, &end, 10);
  if (*end != '\0' || errno == ERANGE) {
    warning = std::string("SOURCE_DATE_EPOCH=") + sde + " is not a number of seconds; using 1980-01-01";
    return {};
  }
  return dos_time_from_epoch(seconds);
}

bool ZipWriter::write(std::span<const uint8_t> data) {
  if (!out_.write_all(data)) return false;
  offset_ += data.size();
  return true;
}

bool ZipWriter::write_local_header(const Written& w) { return write(local_header(w)); }

std::vector<uint8_t> ZipWriter::local_header(const Written& w) const {
  // ZIP64 in a local header: both sizes 0xffffffff and both in a 16-byte extra, no offset.
  const bool zip64 = w.compressed >= kMax32 || w.uncompressed >= kMax32;
  const bool zip64_anywhere = zip64 || w.offset >= kMax32;
  std::vector<uint8_t> h;
  put32(h, 0x04034b50);
  put16(h, zip64_anywhere ? 45 : 20);
  put16(h, needs_utf8_flag(w.name) ? kFlagUtf8 : 0);
  put16(h, w.method);
  put16(h, time_.time);
  put16(h, time_.date);
  put32(h, w.crc);
  put32(h, zip64 ? kMax32 : w.compressed);
  put32(h, zip64 ? kMax32 : w.uncompressed);
  put16(h, w.name.size());
  put16(h, zip64 ? 20 : 0);
  put_bytes(h, w.name);
  if (zip64) {
    put16(h, 0x0001);
    put16(h, 16);
    put64(h, w.uncompressed);
    put64(h, w.compressed);
  }
  return h;
}

bool ZipWriter::add_copy(std::string_view name, const ZipArchive& from, const ZipEntry& entry, bool executable) {
  Written w{names_.add(name),        entry.method, entry.crc32, entry.compressed_size,
            entry.uncompressed_size, offset_,      executable};
  if (!write_local_header(w)) return false;
  off_t in_off = static_cast<off_t>(entry.data_offset);
  uint64_t left = entry.compressed_size;
#ifdef __linux__
  // The kernel copies the bytes between files (no trip through user space where it can).
  while (left > 0) {
    ssize_t n = ::copy_file_range(from.file->fd(), &in_off, out_.fd(), nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    left -= static_cast<uint64_t>(n);
  }
#endif
  std::vector<uint8_t> buffer;
  while (left > 0) {  // other systems, and file systems without copy_file_range between these files
    buffer.resize(std::min<uint64_t>(left, 1 << 20));
    if (!from.file->read_at(static_cast<uint64_t>(in_off), buffer) || !out_.write_all(buffer)) return false;
    in_off += static_cast<off_t>(buffer.size());
    left -= buffer.size();
  }
  offset_ += entry.compressed_size;
  entries_.push_back(std::move(w));
  return true;
}

bool ZipWriter::add_generated(std::string_view name, std::span<const uint8_t> content, bool executable) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    errno = ENOMEM;
    return false;
  }
  std::unique_ptr<z_stream, int (*)(z_stream*)> end(&z, deflateEnd);
  // Generated members (RECORD, METADATA, loaders) stay far below 4 GiB: no ZIP64 header, so the
  // header written before the data has its final length and is rewritten in place once the
  // compressed size is known. The data goes out a buffer at a time, never held whole.
  if (content.size() >= kMax32 || deflateBound(&z, static_cast<uLong>(content.size())) >= kMax32) {
    errno = EFBIG;
    return false;
  }
  const uint32_t crc = static_cast<uint32_t>(crc32_z(0L, content.data(), content.size()));
  Written w{names_.add(name), kMethodDeflate, crc, 0, content.size(), offset_, executable};
  if (!write_local_header(w)) return false;
  const uint64_t data_start = offset_;
  std::vector<uint8_t> buffer(std::min<size_t>(1 << 18, deflateBound(&z, static_cast<uLong>(content.size()))));
  z.next_in = const_cast<uint8_t*>(content.data());
  z.avail_in = static_cast<uInt>(content.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = buffer.data();
    z.avail_out = static_cast<uInt>(buffer.size());
    rc = deflate(&z, Z_FINISH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      errno = ENOMEM;
      return false;
    }
    if (!write(std::span(buffer).first(buffer.size() - z.avail_out))) return false;
  }
  w.compressed = offset_ - data_start;
  if (!out_.write_at(w.offset, local_header(w))) return false;  // now with the compressed size
  entries_.push_back(std::move(w));
  return true;
}

bool ZipWriter::finish() {
  const uint64_t cd_offset = offset_;
  // Written a window at a time: a directory of many members is never held whole.
  constexpr size_t kWindow = 1 << 20;
  std::vector<uint8_t> cd;
  cd.reserve(kWindow + kCentralRecordMax);
  uint64_t cd_size = 0;
  for (const Written& w : entries_) {
    if (cd.size() >= kWindow) {
      if (!write(cd)) return false;
      cd_size += cd.size();
      cd.clear();
    }
    // Only the overflowing fields go into the ZIP64 extra, in the order the format fixes.
    std::vector<uint8_t> extra;
    if (w.uncompressed >= kMax32) put64(extra, w.uncompressed);
    if (w.compressed >= kMax32) put64(extra, w.compressed);
    if (w.offset >= kMax32) put64(extra, w.offset);
    const bool zip64 = w.compressed >= kMax32 || w.uncompressed >= kMax32 || w.offset >= kMax32;
    const uint16_t version = zip64 ? 45 : 20;
    put32(cd, 0x02014b50);
    put16(cd, kMadeByUnix | version);
    put16(cd, version);
    put16(cd, needs_utf8_flag(w.name) ? kFlagUtf8 : 0);
    put16(cd, w.method);
    put16(cd, time_.time);
    put16(cd, time_.date);
    put32(cd, w.crc);
    put32(cd, std::min(w.compressed, kMax32));
    put32(cd, std::min(w.uncompressed, kMax32));
    put16(cd, w.name.size());
    put16(cd, extra.empty() ? 0 : extra.size() + 4);
    put16(cd, 0);  // comment
    put16(cd, 0);  // disk
    put16(cd, 0);  // internal attributes
    put32(cd, uint64_t{S_IFREG | (w.executable ? 0755u : 0644u)} << 16);
    put32(cd, std::min(w.offset, kMax32));
    put_bytes(cd, w.name);
    if (!extra.empty()) {
      put16(cd, 0x0001);
      put16(cd, extra.size());
      cd.insert(cd.end(), extra.begin(), extra.end());
    }
  }
  if (!write(cd)) return false;
  cd_size += cd.size();
  const uint64_t count = entries_.size();
  std::vector<uint8_t> end;
  if (count >= 0xFFFF || cd_offset >= kMax32 || cd_size >= kMax32) {
    const uint64_t z64_offset = offset_;
    put32(end, 0x06064b50);
    put64(end, 44);
    put16(end, kMadeByUnix | 45);
    put16(end, 45);
    put32(end, 0);
    put32(end, 0);
    put64(end, count);
    put64(end, count);
    put64(end, cd_size);
    put64(end, cd_offset);
    put32(end, 0x07064b50);
    put32(end, 0);
    put64(end, z64_offset);
    put32(end, 1);
  }
  put32(end, 0x06054b50);
  put16(end, 0);
  put16(end, 0);
  put16(end, std::min<uint64_t>(count, 0xFFFF));
  put16(end, std::min<uint64_t>(count, 0xFFFF));
  put32(end, std::min(cd_size, kMax32));
  put32(end, std::min(cd_offset, kMax32));
  put16(end, 0);
  return write(end);
}

}  // namespace wm
