// Writes a zip archive in exactly the form docs/WHEEL_RULES.md asks of a merged wheel: stored or
// deflate members, no data descriptors, comments or extra fields beyond a required ZIP64
// field, one timestamp, Unix regular-file attributes, ZIP64 only where a value overflows.
#pragma once

#include "merger/zip/file.hpp"
#include "merger/zip/zip_archive.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wm {

struct DosTime {
  uint16_t time = 0;
  uint16_t date = (0 << 9) | (1 << 5) | 1;  // 1980-01-01 00:00:00
};

// SOURCE_DATE_EPOCH (seconds, UTC) as a DOS timestamp, clamped to 1980-01-01..2107-12-31.
DosTime dos_time_from_epoch(int64_t seconds);

// The timestamp of every entry: SOURCE_DATE_EPOCH when set, else 1980-01-01. A value that is
// no number of seconds is ignored and `warning` says so.
DosTime output_time_from_environment(std::string& warning);

class ZipWriter {
 public:
  ZipWriter(const File& out, DosTime time) : out_(out), time_(time) {}

  // Copies an input member's compressed bytes unchanged. False on an I/O error (errno set).
  bool add_copy(std::string_view name, const ZipArchive& from, const ZipEntry& entry, bool executable);
  // Deflates `content` with the one fixed setting wheelmerge uses for generated files.
  bool add_generated(std::string_view name, std::span<const uint8_t> content, bool executable);
  // Writes the central directory and end records.
  bool finish();
  // Room for `members` entries' central directory records, allocated once.
  void reserve(size_t members) { entries_.reserve(members); }

 private:
  struct Written {
    std::string_view name;  // in names_
    uint16_t method;
    uint32_t crc;
    uint64_t compressed, uncompressed, offset;
    bool executable;
  };
  bool write_local_header(const Written& w);
  std::vector<uint8_t> local_header(const Written& w) const;
  bool write(std::span<const uint8_t> data);

  const File& out_;
  DosTime time_;
  uint64_t offset_ = 0;
  std::vector<Written> entries_;
  NameStore names_;
};

}  // namespace wm
