// Python literals as the loader's manifest holds them: py_string's escapes read back by
// LiteralReader (and their meaning checked against Python in tests/integration/loader/test_loader*.py),
// ruff format's layout at 88 columns, and only the canonical form read back.
#include "merger/format/python_literal.hpp"

#include <doctest/doctest.h>

using namespace wm;

namespace {
std::optional<nlohmann::json> read_back(const std::string& text) {
  LiteralReader reader(text);
  auto value = reader.value();
  if (value && reader.pos != text.size()) return std::nullopt;
  return value;
}
}  // namespace

TEST_CASE("py_string: printable ASCII as it is, everything else escaped, read back whole") {
  CHECK(py_string("pkg/_core.so") == "\"pkg/_core.so\"");
  CHECK(py_string("a\"b\\c") == "\"a\\x22b\\\\c\"");
  CHECK(py_string("\n\x7f") == "\"\\x0a\\x7f\"");
  CHECK(py_string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") == "\"\\xe9\\u20ac\\U0001f600\"");
  CHECK(py_string("\xff") == "\"\\xff\"");  // no UTF-8: the byte, as Latin-1
  for (const std::string s : {"", "plain", "a\"b\\c\n", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}) {
    CAPTURE(s);
    auto back = read_back(py_string(s));
    REQUIRE(back);
    CHECK(back->get<std::string>() == s);
  }
}

TEST_CASE("py_assign lays a value out as ruff format does, and LiteralReader reads it back") {
  const std::string short_one = py_assign("_V", "tuple[str, ...]", py_strings(std::vector<std::string>{"cu12"}));
  CHECK(short_one == "_V: tuple[str, ...] = (\"cu12\",)\n");
  std::map<std::string, std::string> map;
  for (int i = 0; i < 4; ++i) map["module_" + std::to_string(i)] = "file_" + std::to_string(i) + ".cu12.so";
  const std::string long_one = py_assign("_M", "dict[str, str]", py_strings(map));
  CHECK(long_one.starts_with("_M: dict[str, str] = {\n    \"module_0\": \"file_0.cu12.so\",\n"));
  CHECK(long_one.ends_with(",\n}\n"));
  const std::string value = long_one.substr(long_one.find('{'), long_one.size() - long_one.find('{') - 1);
  auto back = read_back(value);
  REQUIRE(back);
  CHECK(back->size() == 4);
  CHECK((*back)["module_3"] == "file_3.cu12.so");
}

TEST_CASE("LiteralReader reads the canonical form alone") {
  for (const char* bad : {"'single'", "(\"a\" ,)", "{\"a\":\"b\"}", "{\"a\": \"b\", \"a\": \"c\"}", "(\"a\", 1)",
                          "\"\\q\"", "\"\\x4\"", "\"\\U00110000\"", "((((((\"deep\",),),),),),)", "\"open"}) {
    CAPTURE(bad);
    CHECK_FALSE(read_back(bad));
  }
  CHECK(read_back("(\"a\", \"b\")") == nlohmann::json::array({"a", "b"}));
  CHECK(read_back("{}") == nlohmann::json::object());
}
