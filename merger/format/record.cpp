#include "merger/format/record.hpp"

#include "merger/base/digest.hpp"

#include <fmt/format.h>

#include <algorithm>

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
  auto id = parse_record_algorithm(hash.algorithm);
  if (!id) {
    what = "weak or unknown hash algorithm in RECORD";
    expected = "sha256, sha384 or sha512";
    found = hash.algorithm;
    return std::nullopt;
  }
  hash.id = *id;
  const size_t digest_size = Digest::of(*id).size();
  auto raw = decode_base64url_nopad(hash.digest);
  if (!raw || raw->size() != digest_size) {
    what = "malformed digest in RECORD";
    expected = fmt::format("{} bytes of urlsafe base64 without padding", digest_size);
    found = hash.digest;
    return std::nullopt;
  }
  hash.raw = std::move(*raw);
  return hash;
}

namespace {

// Why a field could not be read: parse_record's what, expected and found.
struct FieldError {
  const char* what;
  const char* expected;
  const char* found;
};

// The quoted part of a field, its opening quote at text[i]: `i` is left after the closing quote, and `line`
// counts the line endings inside. A doubled quote ("") stands for one: such a field is stored undoubled in
// `storage`. nullopt when no closing quote comes.
std::optional<std::string_view> read_quoted(std::string_view text, size_t& i, size_t& line,
                                            std::deque<std::string>& storage) {
  const size_t start = ++i;
  bool doubled = false;
  for (;;) {
    if (i >= text.size()) return std::nullopt;
    if (text[i] == '"') {
      if (i + 1 < text.size() && text[i + 1] == '"') {
        doubled = true;
        i += 2;
        continue;
      }
      break;
    }
    if (text[i] == '\n') ++line;
    ++i;
  }
  const std::string_view field = text.substr(start, i - start);
  ++i;  // the closing quote
  if (!doubled) return field;
  std::string& own = storage.emplace_back();
  for (size_t k = 0; k < field.size(); ++k) {
    own += field[k];
    if (field[k] == '"') ++k;
  }
  return own;
}

// One field from text[i] on: `i` is left on the ',' or line ending after it, or at the end.
std::optional<FieldError> read_field(std::string_view text, size_t& i, size_t& line, std::deque<std::string>& storage,
                                     std::string_view& field) {
  field = {};
  const bool quoted = i < text.size() && text[i] == '"';
  if (quoted) {
    auto inside = read_quoted(text, i, line, storage);
    if (!inside) return FieldError{"unterminated quoted field", "a closing quote", "the end of the file"};
    field = *inside;
  }
  const size_t start = i;
  while (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
    if (text[i] == '"')
      return FieldError{"stray quote in a field", "a quote only around a whole field", "a quote inside the field"};
    ++i;
  }
  if (i > start) {
    // Text after a closing quote joins the quoted part, as Python's csv reads it.
    const std::string_view rest = text.substr(start, i - start);
    if (quoted)
      field = storage.emplace_back(std::string(field) + std::string(rest));
    else
      field = rest;
  }
  return std::nullopt;
}

// Steps over what ends a field at text[i]: true where it ends the row too (a line ending, CRLF or LF, or the
// end of the text).
bool field_ends_row(std::string_view text, size_t& i) {
  if (i >= text.size()) return true;
  if (text[i] == ',') {
    ++i;
    return false;
  }
  if (text[i] == '\r') ++i;
  if (i < text.size() && text[i] == '\n') ++i;
  return true;
}

}  // namespace

std::optional<RecordRows> parse_record(std::string_view text, const std::string& display_name,
                                       const std::string& member, size_t max_rows, Problems& problems) {
  RecordRows parsed;
  // One row per line at most (a quoted field may span lines): the rows are allocated once.
  parsed.rows.reserve(std::min<size_t>(max_rows, static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1));
  size_t line = 1;
  size_t i = 0;
  std::string_view fields[3];
  size_t count = 0;  // fields of the row so far
  // Errors name the line and, once its first field is read, the row's path.
  auto fail = [&](std::string what, std::string expected, std::string found) {
    std::string where = count > 1 && !fields[0].empty() ? fmt::format("line {} (row of {})", line, fields[0])
                                                        : fmt::format("line {}", line);
    problems.push_back({ProblemKind::invalid_input, display_name, member, fmt::format("{}: {}", where, what),
                        std::move(expected), std::move(found)});
    return std::nullopt;
  };
  while (i < text.size()) {
    if (parsed.rows.size() == max_rows)
      return fail("more rows than the archive has members", fmt::format("at most {} rows", max_rows), "more rows");
    count = 0;
    do {
      std::string_view field;
      if (auto error = read_field(text, i, line, parsed.storage, field))
        return fail(error->what, error->expected, error->found);
      if (count < 3) fields[count] = field;
      ++count;
    } while (!field_ends_row(text, i));
    if (count == 1 && fields[0].empty()) return fail("empty row", "path,hash,size", "an empty line");
    if (count != 3)
      return fail("row without exactly 3 fields", "path,hash,size",
                  fmt::format("{} field{}", count, count == 1 ? "" : "s"));
    parsed.rows.push_back({fields[0], fields[1], fields[2]});
    ++line;
  }
  return parsed;
}

std::string format_record_row(const RecordRow& row) {
  auto field = [](std::string_view f) {
    if (f.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(f);
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
