// parse_record over arbitrary text. Properties: a refusal says why; formatting the parsed
// rows with format_record_row and parsing that again gives the same rows.
#include "fuzz_common.hpp"
#include "merger/format/record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = wm_fuzz::as_text(data, size);
  wm::Problems problems;
  auto rows = wm::parse_record(text, "fuzz.whl", "pkg-1.0.dist-info/RECORD", 1 << 16, problems);
  if (!rows) {
    FUZZ_CHECK(!problems.empty(), "parse_record refused without saying why");
    return 0;
  }
  FUZZ_CHECK(problems.empty(), problems);
  std::string formatted;
  for (const wm::RecordRow& row : *rows) formatted += wm::format_record_row(row);
  wm::Problems again_problems;
  auto again = wm::parse_record(formatted, "fuzz.whl", "RECORD", 1 << 16, again_problems);
  FUZZ_CHECK(again.has_value(), again_problems);
  FUZZ_CHECK(again->size() == rows->size(), "row count changed: " + wm::printable(formatted));
  for (size_t i = 0; i < rows->size(); ++i) {
    const wm::RecordRow &a = (*rows)[i], &b = (*again)[i];
    FUZZ_CHECK(a.path == b.path && a.hash == b.hash && a.size == b.size,
               "row " + std::to_string(i) + " changed: " + wm::printable(wm::format_record_row(a)) + " -> " +
                   wm::printable(wm::format_record_row(b)));
  }
  // Formatting is canonical: the reparsed rows format to the same text.
  std::string formatted_again;
  for (const wm::RecordRow& row : *again) formatted_again += wm::format_record_row(row);
  FUZZ_CHECK(formatted == formatted_again);
  return 0;
}
