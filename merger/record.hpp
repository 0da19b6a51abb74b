// RECORD: the CSV list of every file in a wheel with its hash and size.
#pragma once

#include "merger/problem.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct RecordRow {
  std::string path;
  std::string hash;  // "algorithm=urlsafe-b64-digest", empty for RECORD's own row
  std::string size;  // decimal, empty for RECORD's own row
};

// Parses RFC 4180 CSV rows of exactly three fields, at most `max_rows` of them (a RECORD has
// one row per member, so the archive bounds it). Problems name `display_name`, `member`, the
// line and the row's path.
std::optional<std::vector<RecordRow>> parse_record(std::string_view text,
                                                   const std::string& display_name,
                                                   const std::string& member, size_t max_rows,
                                                   Problems& problems);

// One row, quoting a field only when it holds ',', '"', CR or LF.
std::string format_record_row(const RecordRow& row);

}  // namespace wm
