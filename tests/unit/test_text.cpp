#include "merger/base/problem.hpp"
#include "merger/base/text.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("UTF-8 validity") {
  CHECK(is_valid_utf8("plain"));
  CHECK(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xff"));
  CHECK_FALSE(is_valid_utf8("\xc3"));              // cut short
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST_CASE("case folding covers more than ASCII") {
  CHECK(fold_case("Pkg/README.md") == "pkg/readme.md");
  CHECK(fold_case("pkg/\xc3\x84.py") == fold_case("pkg/\xc3\xa4.py"));  // Ä, ä
  CHECK(fold_case("\xce\xa3") == "\xcf\x83");                           // Σ -> σ
  CHECK(fold_case("\xd0\x96") == "\xd0\xb6");                           // Ж -> ж
  CHECK(fold_case("\xff") == "\xff");                                   // not UTF-8: as bytes
  CHECK(fold_case("Stra\xc3\x9f"
                  "e") == fold_case("STRASSE"));                 // full folding: ß = ss
  CHECK(fold_case("caf\xc3\xa9") == fold_case("cafe\xcc\x81"));  // NFC and NFD spellings
  CHECK(nfc("cafe\xcc\x81") == "caf\xc3\xa9");
  CHECK(nfc("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(code_points("caf\xc3\xa9") == "caf\\u{00e9}");
  CHECK(code_points("cafe\xcc\x81") == "cafe\\u{0301}");
  CHECK(
      has_hidden_controls("a\xe2\x80\xae"
                          "b"));            // U+202E right-to-left override
  CHECK(has_hidden_controls("a\xc2\x85"));  // U+0085 next line
  CHECK_FALSE(has_hidden_controls("caf\xc3\xa9"));
}

TEST_CASE("printable keeps UTF-8 and escapes the rest") {
  CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(printable("a\x01"
                  "b\xff") == "a\\x01b\\xff");
  CHECK(printable("line\nnext") == "line\\nnext");
}

TEST_CASE("split keeps empty pieces") {
  CHECK(split("a..b", '.') == std::vector<std::string>{"a", "", "b"});
  CHECK(split("", ',') == std::vector<std::string>{""});
  CHECK(split("x", ',') == std::vector<std::string>{"x"});
}
