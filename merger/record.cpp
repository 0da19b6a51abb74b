#include "merger/record.hpp"

#include "merger/digest.hpp"

#include <fmt/format.h>

namespace wm {

std::optional<RecordHash> RecordHash::parse(std::string_view field, std::string& what, std::string& expected,
                                            std::string& found) {
  size_t eq = field.find('=');
  if (eq == std::string_view::npos) {
    what = "RECORD row without a hash";
    expected = "algorithm=digest";
    found = field.empty() ? "an empty field" : std::string(field);
    return std::nullopt;
  }
  RecordHash hash;
  hash.algorithm = field.substr(0, eq);
  hash.digest = field.substr(eq + 1);
  auto algorithm = Digest::for_record_algorithm(hash.algorithm);
  if (!algorithm) {
    what = "weak or unknown hash algorithm in RECORD";
    expected = "sha256, sha384 or sha512";
    found = hash.algorithm;
    return std::nullopt;
  }
  auto raw = decode_base64url_nopad(hash.digest);
  if (!raw || raw->size() != algorithm->size()) {
    what = "malformed digest in RECORD";
    expected = fmt::format("{} bytes of urlsafe base64 without padding", algorithm->size());
    found = hash.digest;
    return std::nullopt;
  }
  hash.raw = std::move(*raw);
  return hash;
}

std::optional<std::vector<RecordRow>> parse_record(std::string_view text,
                                                   const std::string& display_name,
                                                   const std::string& member, size_t max_rows,
                                                   Problems& problems) {
  std::vector<RecordRow> rows;
  size_t line = 1;
  size_t i = 0;
  std::vector<std::string> fields;
  // Errors name the line and, once its first field is read, the row's path.
  auto fail = [&](std::string what, std::string expected, std::string found) {
    std::string where = fields.size() > 1 && !fields.front().empty() ? fmt::format("line {} (row of {})", line, fields.front())
                                          : fmt::format("line {}", line);
    problems.push_back({ProblemKind::invalid_input, display_name, member,
                        fmt::format("{}: {}", where, what), std::move(expected), std::move(found)});
    return std::nullopt;
  };
  while (i < text.size()) {
    if (rows.size() == max_rows)
      return fail("more rows than the archive has members", fmt::format("at most {} rows", max_rows), "more");
    fields.assign(1, std::string());
    bool row_done = false;
    while (!row_done) {
      if (i < text.size() && text[i] == '"') {
        ++i;
        for (;;) {
          if (i >= text.size()) return fail("unterminated quoted field", "a closing quote", "end of file");
          if (text[i] == '"') {
            if (i + 1 < text.size() && text[i + 1] == '"') {
              fields.back() += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (text[i] == '\n') ++line;
          fields.back() += text[i++];
        }
      }
      while (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
        if (text[i] == '"') return fail("stray quote in a field", "a quote only around a whole field", "one inside");
        fields.back() += text[i++];
      }
      if (i >= text.size()) {
        row_done = true;
      } else if (text[i] == ',') {
        fields.emplace_back();
        ++i;
      } else {
        if (text[i] == '\r') ++i;
        if (i < text.size() && text[i] == '\n') ++i;
        row_done = true;
      }
    }
    if (fields.size() == 1 && fields[0].empty()) {
      return fail("empty row", "path,hash,size", "an empty line");
    }
    if (fields.size() != 3) {
      return fail("row without exactly 3 fields", "path,hash,size",
                  fmt::format("{} field{}", fields.size(), fields.size() == 1 ? "" : "s"));
    }
    rows.push_back({std::move(fields[0]), std::move(fields[1]), std::move(fields[2])});
    ++line;
  }
  return rows;
}

std::string format_record_row(const RecordRow& row) {
  auto field = [](const std::string& f) {
    if (f.find_first_of(",\"\r\n") == std::string::npos) return f;
    std::string quoted = "\"";
    for (char c : f) {
      if (c == '"') quoted += '"';
      quoted += c;
    }
    return quoted + '"';
  };
  return field(row.path) + ',' + field(row.hash) + ',' + field(row.size) + '\n';
}

}  // namespace wm
