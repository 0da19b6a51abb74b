// parse_headers (WHEEL and METADATA) over arbitrary text. Properties: a refusal says why;
// one() and all() agree; Headers::to_string() parses back to the same fields and body.
#include "fuzz_common.hpp"
#include "merger/format/headers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = wm_fuzz::as_text(data, size);
  wm::Problems problems;
  auto headers = wm::parse_headers(text, "fuzz.whl", "pkg-1.0.dist-info/METADATA", problems);
  if (!headers) {
    FUZZ_CHECK(!problems.empty(), "parse_headers refused without saying why");
    return 0;
  }
  FUZZ_CHECK(problems.empty(), problems);
  for (const wm::Header& h : headers->fields) {
    FUZZ_CHECK(!h.key.empty() && h.key.find(':') == std::string::npos &&
               h.key.find_first_of("\r\n") == std::string::npos);
    auto all = headers->all(h.key);
    auto one = headers->one(h.key);
    FUZZ_CHECK(!all.empty() && one && *one == all.front());
  }
  std::string text_again = headers->to_string();
  wm::Problems again_problems;
  auto again = wm::parse_headers(text_again, "fuzz.whl", "METADATA", again_problems);
  FUZZ_CHECK(again.has_value(), again_problems);
  FUZZ_CHECK(again->fields == headers->fields, "fields changed through to_string(): " + wm::printable(text_again));
  FUZZ_CHECK(again->body == headers->body, "body changed through to_string()");
  FUZZ_CHECK(again->to_string() == text_again, "to_string() is not canonical");
  return 0;
}
