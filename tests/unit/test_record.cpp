#include "merger/record.hpp"

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
