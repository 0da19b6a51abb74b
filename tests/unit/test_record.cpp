#include "merger/format/record.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("RECORD rows parse, quoted fields included") {
  Problems problems;
  auto rows = parse_record("a.py,sha256=abc,3\n\"b,c.py\",sha256=def,4\r\npkg-1.dist-info/RECORD,,\n", "w.whl",
                           "pkg-1.dist-info/RECORD", 100, problems);
  REQUIRE(rows);
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[1].path == "b,c.py");
  CHECK((*rows)[2].hash.empty());
  CHECK(problems.empty());
}

TEST_CASE("RECORD rows need exactly three fields") {
  Problems problems;
  CHECK_FALSE(parse_record("a.py,sha256=abc\n", "w.whl", "R", 100, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what.find("line 1") != std::string::npos);
  CHECK(problems[0].found == "2 fields");
  CHECK(problems[0].what.find("row of a.py") != std::string::npos);  // the row's path is named
  CHECK_FALSE(parse_record("a.py,sha256=abc,1,x\n", "w.whl", "R", 100, problems));
  CHECK_FALSE(parse_record("\"a.py,sha256=abc,1\n", "w.whl", "R", 100, problems));
}

TEST_CASE("RECORD fields read as Python's csv reads them, views into the text where they can be") {
  Problems problems;
  const std::string text = "\"a\"\"b.py\",sha256=x,1\n\"ab\"cd.py,sha256=y,2\nplain.py,\"sha256=z\",3\n";
  auto rows = parse_record(text, "w.whl", "R", 100, problems);
  REQUIRE(rows);
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[0].path == "a\"b.py");  // a doubled quote is one quote
  CHECK((*rows)[1].path == "abcd.py");  // text after the closing quote joins the field
  CHECK((*rows)[2].hash == "sha256=z");
  // Unquoted and plainly quoted fields are slices of the text; only the two rewritten ones are stored.
  CHECK((*rows)[2].path.data() >= text.data());
  CHECK((*rows)[2].path.data() < text.data() + text.size());
  CHECK(rows->storage.size() == 2);
  RecordRows moved = std::move(*rows);  // the stored fields survive a move of the rows
  CHECK(moved[0].path == "a\"b.py");
  CHECK(moved[1].path == "abcd.py");
  CHECK_FALSE(parse_record("a.py,sha256=abc,1,x,y\n", "w.whl", "R", 100, problems));
  CHECK(problems.back().found == "5 fields");
}

TEST_CASE("RECORD rows end at LF, CRLF, a lone CR or the end; line endings inside quotes count as lines") {
  Problems problems;
  auto rows = parse_record("a,b,1\rc,d,2\r\n\"e\nf\",g,3", "w.whl", "R", 100, problems);
  REQUIRE(rows);
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[1].path == "c");
  CHECK((*rows)[2].path == "e\nf");
  CHECK((*rows)[2].size == "3");
  // The quoted line ending moves the next row to line 3.
  CHECK_FALSE(parse_record("\"a\nb\",h,1\nc.py,h\n", "w.whl", "R", 100, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "line 3 (row of c.py): row without exactly 3 fields");
}

TEST_CASE("RECORD field errors: an unterminated quote at the end, a stray quote, an empty row") {
  Problems problems;
  CHECK_FALSE(parse_record("a,b,1\n\"x\ny", "w.whl", "R", 100, problems));
  CHECK_FALSE(parse_record("a,b,1\nc.py,h,1\"x\n", "w.whl", "R", 100, problems));
  CHECK_FALSE(parse_record("\"a\"b\"c,h,1\n", "w.whl", "R", 100, problems));
  CHECK_FALSE(parse_record("a,b,1\n\n", "w.whl", "R", 100, problems));
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].what == "line 3: unterminated quoted field");
  CHECK(problems[0].expected == "a closing quote");
  CHECK(problems[0].found == "the end of the file");
  CHECK(problems[1].what == "line 2 (row of c.py): stray quote in a field");
  CHECK(problems[1].found == "a quote inside the field");
  CHECK(problems[2].what == "line 1: stray quote in a field");  // after the closing quote
  CHECK(problems[3].what == "line 2: empty row");
  CHECK(problems[3].found == "an empty line");
}

TEST_CASE("RECORD holds at most one row per archive member") {
  Problems problems;
  CHECK(parse_record("a,b,1\nc,d,2\n", "w.whl", "R", 2, problems));
  CHECK_FALSE(parse_record("a,b,1\nc,d,2\ne,f,3\n", "w.whl", "R", 2, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what.find("line 3") != std::string::npos);
  CHECK(problems[0].what.find("more rows than the archive has members") != std::string::npos);
}

TEST_CASE("fields are quoted only when they must be") {
  CHECK(format_record_row({"a.py", "sha256=x", "1"}) == "a.py,sha256=x,1\n");
  CHECK(format_record_row({"a,b.py", "sha256=x", "1"}) == "\"a,b.py\",sha256=x,1\n");
  CHECK(format_record_row({"a\"b.py", "", ""}) == "\"a\"\"b.py\",,\n");
}

TEST_CASE("a formatted row parses back to itself") {
  RecordRow row{"we\"ird,\nname.py", "sha256=x", "12"};
  Problems problems;
  auto rows = parse_record(format_record_row(row), "w", "R", 100, problems);
  REQUIRE(rows);
  CHECK((*rows)[0].path == row.path);
}

namespace {

struct HashParse {
  std::optional<RecordHash> hash;
  std::string what, expected, found;
};

HashParse parse_hash(std::string_view field) {
  HashParse p;
  p.hash = RecordHash::parse(field, p.what, p.expected, p.found);
  return p;
}

}  // namespace

TEST_CASE("a RECORD hash parses into algorithm, digest and raw bytes") {
  // python: base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).rstrip(b"=")
  auto p = parse_hash("sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  REQUIRE(p.hash);
  CHECK(p.hash->algorithm == "sha256");
  CHECK(p.hash->digest == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  REQUIRE(p.hash->raw.size() == 32);
  CHECK(p.hash->raw[0] == 0xe3);
  CHECK(p.hash->raw[31] == 0x55);
  CHECK(p.hash->text() == "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  CHECK(p.what.empty());

  // sha384 and sha512 are accepted, each with its own length.
  std::string sha384 = "sha384=" + std::string(64, 'A');
  std::string sha512 = "sha512=" + std::string(86, 'A');
  CHECK(parse_hash(sha384).hash->raw.size() == 48);
  CHECK(parse_hash(sha512).hash->raw.size() == 64);
}

TEST_CASE("a RECORD hash without '=' is no hash") {
  auto empty = parse_hash("");
  CHECK_FALSE(empty.hash);
  CHECK(empty.what == "RECORD row without a hash");
  CHECK(empty.expected == "algorithm=digest");
  CHECK(empty.found == "an empty field");

  auto bare = parse_hash("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  CHECK_FALSE(bare.hash);
  CHECK(bare.what == "RECORD row without a hash");
  CHECK(bare.found == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
}

TEST_CASE("weak and unknown RECORD hash algorithms are refused") {
  for (std::string_view field : {"md5=1B2M2Y8AsgTpgAmY7PhCfg", "sha1=2jmj7l5rSw0yVb_vlWAYkK_YBwk", "SHA256=x",
                                 "blake2b=x", "=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"}) {
    CAPTURE(field);
    auto p = parse_hash(field);
    CHECK_FALSE(p.hash);
    CHECK(p.what == "weak or unknown hash algorithm in RECORD");
    CHECK(p.expected == "sha256, sha384 or sha512");
    CHECK(p.found == field.substr(0, field.find('=')));
  }
}

TEST_CASE("malformed RECORD digests are refused, with the expected length") {
  const std::string good = "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU";
  for (const std::string& digest :
       std::vector<std::string>{"", good + "=",                                 // padding
                                good.substr(0, 42),                             // too short
                                good + "AAAA",                                  // too long
                                "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",  // not the urlsafe alphabet
                                good.substr(0, 42) + "V",                       // non-zero leftover bits
                                "sha256=" + good}) {                            // a second '='
    CAPTURE(digest);
    auto p = parse_hash("sha256=" + digest);
    CHECK_FALSE(p.hash);
    CHECK(p.what == "malformed digest in RECORD");
    CHECK(p.expected == "32 bytes of urlsafe base64 without padding");
    CHECK(p.found == digest);
  }
  // The length is the algorithm's: a sha256 digest under sha512.
  auto p = parse_hash("sha512=" + good);
  CHECK_FALSE(p.hash);
  CHECK(p.expected == "64 bytes of urlsafe base64 without padding");
}
