#include "merger/format/requirement.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace wm;

namespace {

Requirement parse_ok(std::string_view text) {
  std::string error;
  auto r = parse_requirement(text, error);
  INFO(text, " -> ", error);
  REQUIRE(r);
  CHECK(error.empty());
  return *r;
}

std::string refusal(std::string_view text) {
  std::string error;
  auto r = parse_requirement(text, error);
  INFO(text);
  CHECK_FALSE(r);
  CHECK_FALSE(error.empty());
  return error;
}

std::string printed(std::string_view text) { return parse_ok(text).to_string(); }

}  // namespace

TEST_CASE("requirement: the parts of typical requirements") {
  Requirement r = parse_ok("  Foo.Bar [ cu12 , test ]( >= 1.0 , < 2 ) ; python_version >= '3.9'  ");
  CHECK(r.name == "Foo.Bar");
  CHECK(r.extras == std::vector<std::string>{"cu12", "test"});
  CHECK(r.specifier == ">=1.0,<2");
  CHECK(r.url.empty());
  REQUIRE(r.marker);
  CHECK(r.marker->kind == MarkerExpr::Kind::Compare);
  CHECK(r.marker->lhs.is_variable);
  CHECK(r.marker->lhs.text == "python_version");
  CHECK(r.marker->op == ">=");
  CHECK_FALSE(r.marker->rhs.is_variable);
  CHECK(r.marker->rhs.text == "3.9");
  CHECK(r.to_string() == "Foo.Bar[cu12,test]>=1.0,<2; python_version >= \"3.9\"");

  CHECK(printed("numpy") == "numpy");
  CHECK(printed("cuda-bindings~=12.9") == "cuda-bindings~=12.9");
  CHECK(printed("a_") == "a_");  // packaging's name pattern allows a trailing underscore
  CHECK(printed("foo==1.0.*,!=1.0.3") == "foo==1.0.*,!=1.0.3");
  CHECK(printed("foo (===any-thing)") == "foo===any-thing");
  CHECK(printed("foo>=1,") == "foo>=1");  // packaging allows one trailing comma
  CHECK(printed("foo>=\xe3\x80\x80"
                "1.0") == "foo>=1.0");  // Unicode space inside a specifier
  CHECK(printed("foo; os.name == 'nt'") == "foo; os_name == \"nt\"");
  CHECK(printed("foo; python_implementation=='PyPy'") == "foo; platform_python_implementation == \"PyPy\"");
  CHECK(printed("foo;'a'not in extra") == "foo; \"a\" not in extra");
}

TEST_CASE("requirement: version specifiers are validated like packaging's Specifier") {
  for (const char* ok : {"foo==1.0.*", "foo~=1.0", "foo===anything", "foo===", "foo==1.0+local.7",
                         "foo!=v1!2.0rc1.post2.dev3", "foo>1.0-1", "foo<=1.0PoSt2", "foo~=1.0po\xc5\xbft1"})
    parse_ok(ok);
  for (const char* bad : {"foo>=1.0.*", "foo~=1", "foo>=1.0+local", "foo==1.0+local.*", "foo=1.0", "foo=>1.0",
                          "foo==1.0po\xc5\xbft1", "foo===a,b", "foo>=1,,<2", "foo,"})
    refusal(bad);
  CHECK(printed("foo===a,==1") == "foo===a,==1");  // split again at the comma, as SpecifierSet does
}

TEST_CASE("requirement: URLs may hold ';', a marker after one needs whitespace first") {
  Requirement r = parse_ok("pkg @ https://host/p;params?q=1 ; sys_platform == 'linux'");
  CHECK(r.url == "https://host/p;params?q=1");
  CHECK(r.specifier.empty());
  CHECK(r.to_string() == "pkg @ https://host/p;params?q=1 ; sys_platform == \"linux\"");

  // Without the space the "marker" is part of the URL.
  r = parse_ok("pkg @ https://host/p;python_version>'3'");
  CHECK(r.url == "https://host/p;python_version>'3'");
  CHECK_FALSE(r.marker);
  CHECK(r.to_string() == "pkg @ https://host/p;python_version>'3'");

  CHECK(printed("pkg@file:///x.whl") == "pkg @ file:///x.whl");
  refusal("pkg @ https://host/p;x python_version>'3'");  // whitespace, then no ';'
  refusal("pkg @");
}

TEST_CASE("requirement: a marker cannot close and reopen the parentheses around it") {
  // Valid only if wrapped as a string, where it would make the requirement always apply.
  std::string error = refusal("foo; python_version >= \"0\") or (python_version < \"0\"");
  CHECK(error.find("column 27") != std::string::npos);
  CHECK(error.find("found ') or") != std::string::npos);
  refusal("foo; (python_version >= '3'");
  refusal("foo; python_version >= '3')");
  refusal("foo; ()");
  refusal("foo; python_version >= '3' and");
}

TEST_CASE("requirement: errors say what was expected, at which column, and what was found") {
  CHECK(refusal("") == "column 1: expected a package name, found end of text");
  CHECK(refusal("-foo") == "column 1: expected a package name, found '-foo'");
  CHECK(refusal("foo-") == "column 4: expected a version specifier, '@', ';' or end of text, found '-'");
  CHECK(refusal("foo[a b]") == "column 7: expected a comma between extra names");
  CHECK(refusal("foo; python_version = '3'").find("column 21: expected a marker operator") == 0);
  // Columns count characters, not bytes.
  CHECK(refusal("foo; '\xc3\xa9' = '3'").find("column 10:") == 0);
  CHECK(refusal("foo; 'a\\'").find("invalid quoted string") != std::string::npos);
  CHECK(refusal("foo\xff").find("invalid UTF-8") != std::string::npos);
}

TEST_CASE("requirement: 'and' binds tighter than 'or'; parentheses printed only where needed") {
  Requirement r = parse_ok("foo; os_name == 'a' or os_name == 'b' and os_name == 'c'");
  REQUIRE(r.marker->kind == MarkerExpr::Kind::Or);
  REQUIRE(r.marker->children.size() == 2);
  CHECK(r.marker->children[1]->kind == MarkerExpr::Kind::And);
  CHECK(r.to_string() == "foo; os_name == \"a\" or os_name == \"b\" and os_name == \"c\"");

  CHECK(printed("foo; (os_name == 'a' or os_name == 'b') and os_name == 'c'") ==
        "foo; (os_name == \"a\" or os_name == \"b\") and os_name == \"c\"");
  // Redundant parentheses go; groups of the same kind merge into one node.
  r = parse_ok("foo; ((os_name == 'a')) and (os_name == 'b' and (os_name == 'c'))");
  REQUIRE(r.marker->kind == MarkerExpr::Kind::And);
  CHECK(r.marker->children.size() == 3);
  CHECK(r.to_string() == "foo; os_name == \"a\" and os_name == \"b\" and os_name == \"c\"");
  CHECK(printed("foo;(os_name=='a'or(os_name=='b'and(os_name=='c'or os_name=='d')))") ==
        "foo; os_name == \"a\" or os_name == \"b\" and (os_name == \"c\" or os_name == \"d\")");
  // Keywords need word boundaries: "os_name in'b'" is a comparison, "'a'inextras" is not.
  CHECK(printed("foo; os_name in'b'") == "foo; os_name in \"b\"");
  refusal("foo; 'a'inextras");
  refusal("foo; 'a' notin extras");
  refusal("foo; os_name == 'a' andos_name == 'b'");
}

TEST_CASE("requirement: marker values are quoted so that they read back the same") {
  CHECK(printed("foo; os_name == \"it's\"") == "foo; os_name == \"it's\"");
  CHECK(printed("foo; os_name == 'say \"hi\"'") == "foo; os_name == 'say \"hi\"'");
  // Escapes are read as Python reads them...
  Requirement r = parse_ok(R"(foo; os_name == '\x41\101\u00e9\U0001F600\q\
z')");
  CHECK(r.marker->rhs.text == "AA\xc3\xa9\xf0\x9f\x98\x80\\qz");
  r = parse_ok(R"(foo; os_name == "a\x22b'c\\d\n")");
  CHECK(r.marker->rhs.text == "a\"b'c\\d\n");
  // ...and written back with escapes where no plain quoting holds the value: a quote cannot
  // be escaped with a backslash, since the string ends at the first matching quote.
  CHECK(r.to_string() == R"(foo; os_name == "a\x22b'c\\d\x0a")");
  CHECK(parse_ok(r.to_string()).marker->rhs.text == r.marker->rhs.text);

  refusal("foo; os_name == 'a\\'b'");  // 'a\' is unterminated for Python
  refusal("foo; os_name == '\\x4'");   // truncated \x escape
  refusal("foo; os_name == '\\U00110000'");
  refusal(std::string("foo; os_name == 'a\0b'", 22));  // a raw NUL
  // Accepted by packaging, but not representable or not supported here: refused with a reason.
  CHECK(refusal("foo; os_name == '\\ud800'").find("surrogate") != std::string::npos);
  CHECK(refusal("foo; os_name == '\\N{BULLET}'").find("\\N{") != std::string::npos);
}

TEST_CASE("requirement: what the input controls is bounded") {
  std::string deep = "foo; " + std::string(64, '(') + "os_name == 'nt'" + std::string(64, ')');
  CHECK(printed(deep) == "foo; os_name == \"nt\"");
  std::string deeper = "foo; " + std::string(65, '(') + "os_name == 'nt'" + std::string(65, ')');
  CHECK(refusal(deeper).find("nested deeper than 64") != std::string::npos);
  // Far deeper nesting fails at the limit instead of recursing.
  CHECK(refusal("foo; " + std::string(1'000'000, '(')).find("longer than") != std::string::npos);
  CHECK(refusal("foo; " + std::string(60'000, '(')).find("column 70:") == 0);

  std::string value(kMaxRequirementBytes - 40, 'x');
  parse_ok("foo; os_name == '" + value + "'");
  CHECK(refusal("foo; os_name == '" + value + std::string(100, 'x') + "'").find("longer than") != std::string::npos);

  // A long flat chain is one node, not a deep tree.
  std::string chain = "foo; os_name == 'a'";
  for (int i = 0; i < 2000; ++i) chain += i % 2 ? " and os_name == 'a'" : " or os_name == 'a'";
  Requirement r = parse_ok(chain);
  CHECK(r.marker->kind == MarkerExpr::Kind::Or);
  CHECK(r.marker->children.size() == 1001);
}

TEST_CASE("requirement: made conditional on an extra, as a tree") {
  Requirement r = require_for_extra(parse_ok("foo>=1; python_version < '3.10' or os_name == 'nt'"), "cu12");
  CHECK(r.to_string() == "foo>=1; (python_version < \"3.10\" or os_name == \"nt\") and extra == \"cu12\"");
  r = require_for_extra(parse_ok("foo; python_version < '3.10' and os_name == 'nt'"), "cu13");
  CHECK(r.marker->children.size() == 3);
  CHECK(r.to_string() == "foo; python_version < \"3.10\" and os_name == \"nt\" and extra == \"cu13\"");
  CHECK(require_for_extra(parse_ok("foo[x]"), "cu12").to_string() == "foo[x]; extra == \"cu12\"");
  CHECK(require_for_extra(parse_ok("foo @ https://h/f.whl"), "cu12").to_string() ==
        "foo @ https://h/f.whl ; extra == \"cu12\"");

  // The hostile marker of a requirement is refused before it could be wrapped.
  refusal("foo; python_version >= \"0\") or (python_version < \"0\"");
  // The original tree is shared, not changed.
  Requirement base = parse_ok("foo; os_name == 'a' and os_name == 'b'");
  require_for_extra(base, "cu12");
  CHECK(base.marker->children.size() == 2);
}

TEST_CASE("requirement: markers on their own, and combined") {
  std::string error;
  MarkerPtr m = parse_marker("os_name == 'a' or os_name == 'b'", error);
  REQUIRE(m);
  MarkerPtr both = marker_and(m, marker_compare("extra", "==", "cu12"));
  CHECK(marker_to_string(*both) == "(os_name == \"a\" or os_name == \"b\") and extra == \"cu12\"");
  CHECK(marker_to_string(*marker_or(both, m)) ==
        "(os_name == \"a\" or os_name == \"b\") and extra == \"cu12\" or os_name == \"a\" or os_name == \"b\"");
  CHECK(marker_and(nullptr, m) == m);
  CHECK_FALSE(parse_marker("os_name == 'a' )", error));
  CHECK(error.find("column 16") == 0);
}

TEST_CASE("requirement: markers packaging parses but pip cannot evaluate are refused") {
  // pip evaluates every marker of a wheel it installs and stops with a traceback on these.
  std::string error;
  CHECK_FALSE(parse_requirement("x; 'cu12' not in extras", error));
  CHECK(error.find("lock files") != std::string::npos);
  CHECK_FALSE(parse_requirement("x; dependency_groups == 'a'", error));
  CHECK_FALSE(parse_requirement("x; 'a' == 'b'", error));
  CHECK(error.find("two quoted strings") != std::string::npos);
  CHECK_FALSE(parse_requirement("x; python_version ~= '3'", error));  // "~=3" is no specifier
  CHECK_FALSE(parse_requirement("x; os_name ~= '1.0' or os_name ~= os_name", error));
  CHECK(parse_requirement("x; python_version ~= '3.9'", error));
  CHECK(parse_requirement("x; '3.9' ~= python_version", error));  // the version comes from the environment
  // "~=" and "===" only on the variables packaging compares as versions (26.3's
  // MARKERS_REQUIRING_VERSION), with a valid specifier; each case as packaging 26.3 evaluates it.
  CHECK_FALSE(parse_requirement("x; platform_version ~= '3.11'", error));  // a string variable
  CHECK(error.find("'~=' on platform_version, which is no version") != std::string::npos);
  CHECK_FALSE(parse_requirement("x; os_name === 'posix'", error));
  CHECK_FALSE(parse_requirement("x; platform_machine === 'x86_64'", error));
  CHECK_FALSE(parse_requirement("x; python_version === 'x y'", error));  // "===x y" is no specifier
  CHECK(error.find("with no valid specifier") != std::string::npos);
  CHECK_FALSE(parse_requirement("x; python_version ~= python_full_version", error));  // "~=python_full_version"
  CHECK(parse_requirement("x; python_version === python_full_version", error));       // "===python_full_version" is one
  CHECK(parse_requirement("x; python_version === '3.11'", error));
  CHECK(parse_requirement("x; platform_release ~= '1.0'", error));
  CHECK(parse_requirement("x; platform_release === '6.1'", error));
  CHECK(parse_requirement("x; '6.1' === platform_release", error));
  CHECK_FALSE(parse_requirement("x; '1.0' ~= platform_release", error));  // a kernel release is rarely a version
}
