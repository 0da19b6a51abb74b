// RECORD: the CSV list of every file in a wheel with its hash and size.
#pragma once

#include "merger/base/digest.hpp"
#include "merger/base/problem.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

// One row's fields, as views: into the text parse_record read (or its RecordRows' storage), or
// into whatever the caller formats.
struct RecordRow {
  std::string_view path;
  std::string_view hash;  // "algorithm=urlsafe-b64-digest", empty for RECORD's own row
  std::string_view size;  // decimal, empty for RECORD's own row
};

// RECORD's rows, in file order. Most fields are views into the parsed text, which must outlive
// them; a quoted field that is not a slice of it ("" for a quote, text after the closing quote)
// lives in `storage`, whose strings never move.
struct RecordRows {
  std::vector<RecordRow> rows;
  std::deque<std::string> storage;

  size_t size() const { return rows.size(); }
  const RecordRow& operator[](size_t i) const { return rows[i]; }
  auto begin() const { return rows.begin(); }
  auto end() const { return rows.end(); }
};

// A RECORD row's hash field, "algorithm=digest", parsed and checked (pypa/installer's
// records.Hash is the model): the algorithm one that RECORD may use (sha256, sha384, sha512), the
// digest canonical urlsafe base64 without padding of exactly that algorithm's length.
struct RecordHash {
  std::string algorithm;  // "sha256"
  RecordAlgorithm id = RecordAlgorithm::none;
  std::string digest;        // urlsafe base64 without padding, as written
  std::vector<uint8_t> raw;  // the digest decoded

  // nullopt when the field is not such a hash; then `what`, `expected` and `found` say why:
  //   "RECORD row without a hash"                  (an empty field, or one without '=')
  //   "weak or unknown hash algorithm in RECORD"   (md5, sha1, anything but sha256/384/512)
  //   "malformed digest in RECORD"                 (not base64url, or the wrong length)
  static std::optional<RecordHash> parse(std::string_view field, std::string& what, std::string& expected,
                                         std::string& found);

  std::string text() const { return algorithm + "=" + digest; }  // the field as written
};

// Parses RFC 4180 CSV rows of exactly three fields, at most `max_rows` of them (a RECORD has
// one row per member, so the archive bounds it), as Python's csv module reads them. The rows
// refer to `text`. Problems name `display_name`, `member`, the line and the row's path.
std::optional<RecordRows> parse_record(std::string_view text, const std::string& display_name,
                                       const std::string& member, size_t max_rows, Problems& problems);

// One row, quoting a field only when it holds ',', '"', CR or LF.
std::string format_record_row(const RecordRow& row);

}  // namespace wm
