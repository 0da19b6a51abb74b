// The prologue of a Python module (docstring, `from __future__` imports) and a line put after
// it, for any line: the loader's import is one such line (test_loader.cpp holds its cases; the
// fuzz harness fuzz_loader_inject the properties).
#include "merger/format/python_source.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("a line goes after the docstring and the future imports, in the file's line endings") {
  std::string why;
  const std::string source = "\"\"\"Doc.\"\"\"\r\nfrom __future__ import annotations\r\nimport os\r\n";
  auto at = prologue_end(source, why);
  REQUIRE_MESSAGE(at, why);
  CHECK(source.substr(*at) == "import os\r\n");
  auto out = insert_after_prologue(source, "import extra", why);
  REQUIRE_MESSAGE(out, why);
  CHECK(*out == "\"\"\"Doc.\"\"\"\r\nfrom __future__ import annotations\r\nimport extra\r\nimport os\r\n");
  CHECK(line_after_prologue(*out, "import extra"));
  CHECK_FALSE(line_after_prologue(source, "import extra"));
  CHECK_FALSE(line_after_prologue(*out, "import os"));  // there, but not where the line goes
}

TEST_CASE("a last line without a line ending gets one before the line put after it") {
  std::string why;
  auto out = insert_after_prologue("\"\"\"Doc.\"\"\"", "x = 1", why);
  REQUIRE_MESSAGE(out, why);
  CHECK(*out == "\"\"\"Doc.\"\"\"\nx = 1\n");
}

TEST_CASE("a prologue that cannot be read safely is refused, naming the line") {
  std::string why;
  CHECK_FALSE(insert_after_prologue("\"\"\"Doc.\"\"\"; import os\n", "x = 1", why));
  CHECK(why.starts_with("line 1: "));
  CHECK_FALSE(insert_after_prologue("# -*- coding: cp1252 -*-\nimport os\n", "x = 1", why));
  CHECK_FALSE(insert_after_prologue("'''never closed\n", "x = 1", why));
}
