#include "loader.hpp"

#include <doctest/doctest.h>

using namespace wm;

namespace {
std::string inject(std::string_view source) {
  std::string why;
  auto out = inject_loader_import(source, why);
  REQUIRE(out);
  return *out;
}
const std::string kLine(kLoaderImport);
}  // namespace

TEST_CASE("the import goes first in a plain module") {
  CHECK(inject("") == kLine);
  CHECK(inject("import os\n") == kLine + "import os\n");
  CHECK(inject("x = 1") == kLine + "x = 1");
}

TEST_CASE("the import goes after the docstring and __future__ imports") {
  CHECK(inject("\"\"\"Doc.\n\nMore.\n\"\"\"\nimport os\n") == "\"\"\"Doc.\n\nMore.\n\"\"\"\n" + kLine + "import os\n");
  CHECK(inject("# comment\n'''doc'''  # trailing\n\nfrom __future__ import annotations\nimport os\n") ==
        "# comment\n'''doc'''  # trailing\n\nfrom __future__ import annotations\n" + kLine + "import os\n");
  CHECK(inject("r\"\"\"a \\\"\"\" b\"\"\"\nfrom __future__ import (\n    annotations,\n)\nx = 1\n") ==
        "r\"\"\"a \\\"\"\" b\"\"\"\nfrom __future__ import (\n    annotations,\n)\n" + kLine + "x = 1\n");
  CHECK(inject("\"doc\"") == "\"doc\"\n" + kLine);
}

TEST_CASE("a string that is not the first statement is no docstring") {
  CHECK(inject("import os\n\"\"\"not a docstring\"\"\"\n") == kLine + "import os\n\"\"\"not a docstring\"\"\"\n");
}

TEST_CASE("an unterminated docstring is refused") {
  std::string why;
  CHECK_FALSE(inject_loader_import("\"\"\"never closed\n", why));
  CHECK(why.find("unterminated") != std::string::npos);
}

TEST_CASE("the rendered loader carries the manifest, and it can be read back") {
  std::string rendered = render_loader(R"({"format":1})");
  CHECK(rendered.find("_MANIFEST_JSON = r\"\"\"{\"format\":1}\"\"\"") != std::string::npos);
  CHECK(manifest_of_loader(rendered) == R"({"format":1})");
  CHECK_FALSE(manifest_of_loader("print('hello')\n"));
}
