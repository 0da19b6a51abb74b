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

TEST_CASE("case folding is full folding of the canonical decomposition, then NFC") {
  CHECK(fold_case("\xc3\x9f") == "ss");            // ß
  CHECK(fold_case("\xe1\xba\x9e") == "ss");        // ẞ U+1E9E
  CHECK(fold_case("\xe2\x84\xaa") == "k");         // Kelvin sign U+212A
  CHECK(fold_case("\xef\xac\x81") == "fi");        // ligature ﬁ U+FB01
  CHECK(fold_case("\xe2\x84\xab") == "\xc3\xa5");  // Angstrom sign U+212B -> å
  CHECK(fold_case("A\xcc\x8a") == "\xc3\xa5");     // A + combining ring, composed
  // Σ, σ and final ς are one letter; so are the Greek words in capitals and in small letters.
  CHECK(fold_case("\xce\xa3") == "\xcf\x83");
  CHECK(fold_case("\xcf\x82") == "\xcf\x83");
  CHECK(fold_case("\xce\x9f\xce\x94\xce\xa5\xce\xa3\xce\xa3\xce\x95\xce\xa5\xce\xa3") ==
        fold_case("\xce\xbf\xce\xb4\xcf\x85\xcf\x83\xcf\x83\xce\xb5\xcf\x85\xcf\x82"));
  // No Turkish rule: İ is i + combining dot above, dotless ı stays.
  CHECK(fold_case("\xc4\xb0") == "i\xcc\x87");
  CHECK(fold_case("\xc4\xb1") == "\xc4\xb1");
  // U+0345 (class 240) folds to ι (a letter): NFD orders it after U+0301 (class 230) first, so
  // both spellings of the same text have one key.
  CHECK(fold_case("\xcd\x85\xcc\x81") == "\xcc\x81\xce\xb9");
  CHECK(fold_case("\xcc\x81\xcd\x85") == "\xcc\x81\xce\xb9");
  CHECK(fold_case("\xe1\xbe\x88") == "\xe1\xbc\x80\xce\xb9");  // ᾈ U+1F88 -> ἀι
  // Hangul: jamo compose into a syllable; U+11A7 is no trailing consonant and stays.
  CHECK(fold_case("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8") == "\xea\xb0\x81");  // U+AC01
  CHECK(fold_case("\xea\xb0\x80\xe1\x86\xa7") == "\xea\xb0\x80\xe1\x86\xa7");
  CHECK(fold_case("") == "");
  CHECK(fold_case(std::string("A\0B", 3)) == std::string("a\0b", 3));
  // Not UTF-8: the bytes as they are, nothing folded or composed.
  CHECK(fold_case("A\xcc\x8a\xff") == "A\xcc\x8a\xff");
  CHECK(fold_case("\xc0\xaf") == "\xc0\xaf");
}

TEST_CASE("NFC composes and keeps compatibility characters") {
  CHECK(nfc("\xe2\x84\xab") == "\xc3\x85");  // Angstrom sign U+212B -> Å U+00C5
  CHECK(nfc("\xe2\x84\xaa") == "K");         // Kelvin sign U+212A
  CHECK(nfc("A\xcc\x8a") == "\xc3\x85");
  CHECK(nfc("\xef\xac\x81") == "\xef\xac\x81");  // ﬁ: a compatibility decomposition only
  CHECK(nfc("\xc3\x9f") == "\xc3\x9f");
  CHECK(nfc("\xce\xa3") == "\xce\xa3");
  CHECK(nfc("\xe1\x84\x80\xe1\x85\xa1") == "\xea\xb0\x80");  // U+1100 U+1161 -> U+AC00
  CHECK(nfc("\xea\xb0\x80\xe1\x86\xa7") == "\xea\xb0\x80\xe1\x86\xa7");
  CHECK(nfc("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa7\xe1\x86\xa8") == "\xea\xb0\x80\xe1\x86\xa7\xe1\x86\xa8");
  CHECK(nfc("e\xcc\xa7\xcc\x81") == nfc("e\xcc\x81\xcc\xa7"));  // marks in canonical order
  CHECK(nfc("") == "");
  CHECK(nfc("A\xcc\x8a\xff") == "A\xcc\x8a\xff");  // not UTF-8: unchanged
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
