#include "merger/format/headers.hpp"
#include "merger/metadata.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("header fields, continuation lines and the body") {
  Problems problems;
  auto h = parse_headers("Name: pkg\nVersion: 1.0\nRequires-Dist: a\nRequires-Dist: b\nLicense: MIT\n  more\n\nBody\n",
                         "w", "METADATA", problems);
  REQUIRE(h);
  CHECK(h->one("name") == "pkg");
  CHECK(h->all("Requires-Dist") == std::vector<std::string>{"a", "b"});
  CHECK(h->one("License") == "MIT\n  more");
  CHECK(h->body == "Body\n");
  CHECK_FALSE(h->one("Summary"));
  CHECK(h->to_string() ==
        "Name: pkg\nVersion: 1.0\nRequires-Dist: a\nRequires-Dist: b\nLicense: MIT\n  more\n\nBody\n");
}

TEST_CASE("lines end where Python's email parser ends them") {
  Problems problems;
  // A lone CR ends a line: here the header, then an empty line, then the body.
  auto h = parse_headers("K: v\r\rL: w\n", "w", "METADATA", problems);
  REQUIRE(h);
  CHECK(h->fields == std::vector<Header>{{"K", "v"}});
  CHECK(h->body == "L: w\n");
  h = parse_headers("A: 1\r\nB: 2\r\n\r\nbody", "w", "METADATA", problems);
  REQUIRE(h);
  CHECK(h->fields.size() == 2);
  CHECK(h->body == "body");
}

TEST_CASE("a line that is no field is refused") {
  Problems problems;
  CHECK_FALSE(parse_headers("Name pkg\n", "w.whl", "METADATA", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].member == "METADATA");
  CHECK_FALSE(parse_headers(" leading\n", "w.whl", "METADATA", problems));
}
