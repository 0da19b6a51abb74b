#include "merger/loader.hpp"

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
const std::string kBody(kLoaderImport.substr(0, kLoaderImport.size() - 1));  // without its "\n"
}  // namespace

TEST_CASE("the import goes first in a plain module") {
  CHECK(inject("") == kLine);
  CHECK(inject("import os\n") == kLine + "import os\n");
  CHECK(inject("x = 1") == kLine + "x = 1");
  CHECK(inject("\n\n") == "\n\n" + kLine);
  CHECK(inject("# c") == "# c\n" + kLine);
  CHECK(inject("\\\nimport os\n") == kLine + "\\\nimport os\n");
}

TEST_CASE("the import goes after the docstring and __future__ imports") {
  CHECK(inject("\"\"\"Doc.\n\nMore.\n\"\"\"\nimport os\n") == "\"\"\"Doc.\n\nMore.\n\"\"\"\n" + kLine + "import os\n");
  CHECK(inject("# comment\n'''doc'''  # trailing\n\nfrom __future__ import annotations\nimport os\n") ==
        "# comment\n'''doc'''  # trailing\n\nfrom __future__ import annotations\n" + kLine + "import os\n");
  CHECK(inject("r\"\"\"a \\\"\"\" b\"\"\"\nfrom __future__ import (\n    annotations,\n)\nx = 1\n") ==
        "r\"\"\"a \\\"\"\" b\"\"\"\nfrom __future__ import (\n    annotations,\n)\n" + kLine + "x = 1\n");
  CHECK(inject("\"doc\"") == "\"doc\"\n" + kLine);
  // Comments after the prologue stay with the body.
  CHECK(inject("from __future__ import annotations\n# about os\nimport os\n") ==
        "from __future__ import annotations\n" + kLine + "# about os\nimport os\n");
}

TEST_CASE("a string that is not the first statement is no docstring") {
  CHECK(inject("import os\n\"\"\"not a docstring\"\"\"\n") == kLine + "import os\n\"\"\"not a docstring\"\"\"\n");
}

TEST_CASE("leading comments, blank lines and form feeds stay before the import") {
  CHECK(inject("#!/usr/bin/env python\n\n# c\n\f\n   \nimport os\n") ==
        "#!/usr/bin/env python\n\n# c\n\f\n   \n" + kLine + "import os\n");
  CHECK(inject("# c \\\nimport os\n") == "# c \\\n" + kLine + "import os\n");  // no continuation in a comment
  CHECK(inject("\f\"doc\"\nx = 1\n") == "\f\"doc\"\n" + kLine + "x = 1\n");
}

TEST_CASE("a UTF-8 byte order mark stays first") {
  const std::string bom = "\xEF\xBB\xBF";
  CHECK(inject(bom) == bom + kLine);
  CHECK(inject(bom + "import os\n") == bom + kLine + "import os\n");
  CHECK(inject(bom + "\"\"\"Doc.\"\"\"\nimport os\n") == bom + "\"\"\"Doc.\"\"\"\n" + kLine + "import os\n");
  CHECK(inject(bom + "# -*- coding: utf-8 -*-\nx = 1\n") == bom + "# -*- coding: utf-8 -*-\n" + kLine + "x = 1\n");
}

TEST_CASE("encoding cookies: UTF-8, ASCII and Latin-1 are read, others refused") {
  CHECK(inject("# coding: latin-1\n\"caf\xE9\"\nx = 1\n") == "# coding: latin-1\n\"caf\xE9\"\n" + kLine + "x = 1\n");
  CHECK(inject("#!/usr/bin/env python\n# vim: set fileencoding=iso-8859-1 :\nx = 1\n") ==
        "#!/usr/bin/env python\n# vim: set fileencoding=iso-8859-1 :\n" + kLine + "x = 1\n");
  CHECK(inject("# coding=utf8\n\"caf\xC3\xA9\"\n") == "# coding=utf8\n\"caf\xC3\xA9\"\n" + kLine);
  CHECK(inject("# coding: ascii\nx = 1\n") == "# coding: ascii\n" + kLine + "x = 1\n");
  // A cookie-only file keeps its cookie on line 1.
  CHECK(inject("# coding: latin-1") == "# coding: latin-1\n" + kLine);
  // After a line of code, line 2 holds no cookie.
  CHECK(inject("x = 1\n# coding: cp1252\n") == kLine + "x = 1\n# coding: cp1252\n");
  std::string why;
  CHECK_FALSE(inject_loader_import("# coding: cp1252\nx = 1\n", why));
  CHECK(
      why ==
      "line 1 declares the source encoding 'cp1252'; only UTF-8, ASCII and Latin-1 sources can take the loader import");
  CHECK_FALSE(inject_loader_import("#!python\n# coding: shift_jis\nx = 1\n", why));
  CHECK(why.starts_with("line 2 declares the source encoding 'shift_jis'"));
  CHECK_FALSE(inject_loader_import("\xEF\xBB\xBF# coding: latin-1\nx = 1\n", why));
  CHECK(why.find("byte order mark") != std::string::npos);
  CHECK_FALSE(inject_loader_import("\xEF\xBB\xBF# coding: utf8\nx = 1\n", why));  // as CPython: only utf-8 spellings
  CHECK(inject("\xEF\xBB\xBF# coding: UTF_8\nx = 1\n") == "\xEF\xBB\xBF# coding: UTF_8\n" + kLine + "x = 1\n");
}

TEST_CASE("bytes not valid in the source's encoding are refused") {
  std::string why;
  CHECK_FALSE(inject_loader_import("\"doc\"\nx = 1  # \xFF\n", why));
  CHECK(why == "line 2 holds bytes that are not valid UTF-8, the source's encoding");
  CHECK_FALSE(inject_loader_import("x = '\xED\xA0\x80'\n", why));      // a surrogate
  CHECK_FALSE(inject_loader_import("x = '\xC0\xAF'\n", why));          // an overlong form
  CHECK_FALSE(inject_loader_import("x = '\xF4\x90\x80\x80'\n", why));  // above U+10FFFF
  CHECK_FALSE(inject_loader_import("x = '\xE2\x82'\n", why));          // cut short
  CHECK_FALSE(inject_loader_import("# coding: ascii\n# caf\xE9\n", why));
  CHECK(why == "line 2 holds bytes that are not valid ASCII, the source's encoding");
  CHECK_FALSE(inject_loader_import(std::string_view("x = 1\n\0\n", 8), why));
  CHECK(why.starts_with("line 2 holds a NUL byte"));
  CHECK(inject("x = '\xF0\x9F\x98\x80'\n") == kLine + "x = '\xF0\x9F\x98\x80'\n");
}

TEST_CASE("the inserted line ends as the file's lines do there") {
  CHECK(inject("\"doc\"\r\nimport os\r\n") == "\"doc\"\r\n" + kBody + "\r\nimport os\r\n");
  CHECK(inject("\"doc\"\rimport os\r") == "\"doc\"\r" + kBody + "\rimport os\r");
  CHECK(inject("import os\r\n") == kBody + "\r\nimport os\r\n");
  CHECK(inject("\"doc\"\r\nfrom __future__ import annotations") ==
        "\"doc\"\r\nfrom __future__ import annotations\r\n" + kBody + "\r\n");
  CHECK(inject("\"doc\"\nfrom __future__ import annotations\rx = 1\r\n") ==
        "\"doc\"\nfrom __future__ import annotations\r" + kBody + "\rx = 1\r\n");
}

TEST_CASE("backslash continuations, before any line ending") {
  CHECK(inject("\"\"\"Doc.\"\"\"\r\nfrom __future__ import \\\r\n    annotations\r\nimport os\r\n") ==
        "\"\"\"Doc.\"\"\"\r\nfrom __future__ import \\\r\n    annotations\r\n" + kBody + "\r\nimport os\r\n");
  CHECK(inject("from\\\r __future__ import annotations\rx = 1\r") ==
        "from\\\r __future__ import annotations\r" + kBody + "\rx = 1\r");
  CHECK(inject("\"doc\" \\\n\"more\"\nx = 1\n") == "\"doc\" \\\n\"more\"\n" + kLine + "x = 1\n");
  CHECK(inject("'a\\\r\nb'\nx = 1\n") == "'a\\\r\nb'\n" + kLine + "x = 1\n");  // inside a string
  std::string why;
  CHECK_FALSE(inject_loader_import("\"doc\" \\\n", why));
  CHECK(why == "line 2: a backslash continues the last line past the end of the file");
  CHECK_FALSE(inject_loader_import("\"doc\" \\ x\n", why));
  CHECK(why == "line 1: a backslash outside a string does not end the line");
}

TEST_CASE("every docstring form") {
  for (std::string doc : {"'doc'",
                          "\"doc\"",
                          "u'doc'",
                          "U\"doc\"",
                          "r'doc'",
                          "R'''doc'''",
                          "\"a\" \"b\"",
                          "'a' r'b' u'c'",
                          "(\"doc\")",
                          "((\"doc\"))",
                          "(\"a\"\n \"b\")",
                          "(\n  # c (\n  \"doc\"  # )\n)",
                          "\"\"\"tri \"quoted\" \\\"\"\" doc\"\"\"",
                          "'''has # and ( and \\\\'''",
                          "'it\\'s (' # \"",
                          "\"doc\"  # it's a ( comment",
                          "\"doc\";",
                          "\"doc\" ;  # c",
                          "'''a\\\nb'''",
                          "r'\\''",
                          "\"\"\"'''\"\"\"",
                          "'''multi\nline\n'''"}) {
    CAPTURE(doc);
    CHECK(inject(doc + "\nimport os\n") == doc + "\n" + kLine + "import os\n");
    CHECK(inject(doc + "\nfrom __future__ import annotations\nimport os\n") ==
          doc + "\nfrom __future__ import annotations\n" + kLine + "import os\n");
  }
}

TEST_CASE("bytes and f-strings are no docstring but the first statement") {
  for (std::string first : {"b'x'", "rB\"x\"", "f'x'", "F\"{1}\"", "rf'{x}'", "f\"{\"a\"}\"", "'doc' f'x'", "t'x'"}) {
    CAPTURE(first);
    CHECK(inject(first + "\nx = 1\n") == kLine + first + "\nx = 1\n");
  }
}

TEST_CASE("every future import form") {
  for (std::string future : {"from __future__ import annotations", "from __future__ import annotations, division",
                             "from __future__ import (annotations,\n    division)  # c",
                             "from __future__ import (\n    annotations,  # why (\n    division,\n)",
                             "from __future__ import annotations as _a", "from __future__ import \\\n    annotations",
                             "from  __future__  import  generator_stop\nfrom __future__ import annotations",
                             "from __future__ import annotations; from __future__ import division",
                             "from __future__ import annotations;", "from\\\n __future__ import annotations"}) {
    CAPTURE(future);
    CHECK(inject(future + "\nimport os\n") == future + "\n" + kLine + "import os\n");
    CHECK(inject("'''doc'''\n\n" + future + "\n\nimport os\n") ==
          "'''doc'''\n\n" + future + "\n" + kLine + "\nimport os\n");
  }
  CHECK(inject("'doc'; from __future__ import annotations\nx = 1\n") ==
        "'doc'; from __future__ import annotations\n" + kLine + "x = 1\n");
  // Not future statements: the import goes before them.
  CHECK(inject("from __future__.x import y\n") == kLine + "from __future__.x import y\n");
  CHECK(inject("from . import x\n") == kLine + "from . import x\n");
  CHECK(inject("'doc'\n'not a docstring'\nfrom __future__ import x\n") ==
        "'doc'\n" + kLine + "'not a docstring'\nfrom __future__ import x\n");
}

TEST_CASE("a line shared by the prologue and another statement is refused") {
  std::string why;
  CHECK_FALSE(inject_loader_import("\"\"\"doc\"\"\"; import os\n", why));
  CHECK(why ==
        "line 1: the docstring or a from __future__ import shares its line with another statement after ';', "
        "so no line can go between them");
  CHECK_FALSE(inject_loader_import("'doc'\nfrom __future__ import annotations; import os\n", why));
  CHECK(why.starts_with("line 2: "));
}

TEST_CASE("a first statement that starts like a docstring but goes on is refused") {
  std::string why;
  for (std::string_view source :
       {"\"a\" + \"b\"\n", "'''doc'''.strip()\n", "\"%s\" % 1\n", "(\"a\",)\n", "'a' ('b')\n"}) {
    CAPTURE(source);
    CHECK_FALSE(inject_loader_import(source, why));
    CHECK(why.find("goes on into an expression") != std::string::npos);
  }
  CHECK(inject("(x)\n") == kLine + "(x)\n");
}

TEST_CASE("imports of __future__ that Python versions read differently are refused") {
  std::string why;
  CHECK_FALSE(inject_loader_import("from .__future__ import annotations\n", why));
  CHECK(why.find("relative import of __future__") != std::string::npos);
  CHECK_FALSE(inject_loader_import("from __\xEF\xBD\x86uture__ import annotations\n", why));
  CHECK(why.find("not ASCII") != std::string::npos);
}

TEST_CASE("what cannot be tokenized is refused, saying where") {
  std::string why;
  CHECK_FALSE(inject_loader_import("\"\"\"never closed\n", why));
  CHECK(why == "line 1: a string literal is never closed");
  CHECK_FALSE(inject_loader_import("# c\n'not closed\nx = 1\n", why));
  CHECK(why == "line 2: a string literal is not closed on its line");
  CHECK_FALSE(inject_loader_import("(\"doc\"\n", why));
  CHECK(why.find("never closed") != std::string::npos);
  CHECK_FALSE(inject_loader_import(std::string(201, '(') + "'a'" + std::string(201, ')') + "\n", why));
  CHECK(why == "line 1: parentheses are nested deeper than Python allows");
  CHECK_FALSE(inject_loader_import("from __future__ import 'x'\n", why));
  CHECK(why == "line 1: ''x'' in a from __future__ import");
}

TEST_CASE("parentheses: 200 deep are read, a ')' without its '(' is refused, an open one is refused at the end") {
  const std::string deep = std::string(200, '(') + "'doc'" + std::string(200, ')') + "\n";
  CHECK(inject(deep + "x = 1\n") == deep + kLine + "x = 1\n");
  std::string why;
  CHECK_FALSE(inject_loader_import(")\n", why));
  CHECK(why == "line 1: a ')' closes no '('");
  CHECK_FALSE(inject_loader_import("(\"doc\"\n# c\n\n", why));  // line endings inside count
  CHECK(why == "line 4: a '(' is never closed before the end of the file");
}

TEST_CASE("names, numbers and prefixed strings as the first statement") {
  CHECK(inject("1\n'doc'\n") == kLine + "1\n'doc'\n");
  CHECK(inject("x1_\xC3\xA9 = 'a'\n") == kLine + "x1_\xC3\xA9 = 'a'\n");
  CHECK(inject("rb = 1\n") == kLine + "rb = 1\n");              // a prefix without its quote is a name
  CHECK(inject("Rb'x'\n'doc'\n") == kLine + "Rb'x'\n'doc'\n");  // bytes: no docstring
  CHECK(inject("bu'x'\n") == kLine + "bu'x'\n");                // no prefix: the name bu, then a string
  CHECK(inject("ur'doc'\nx = 1\n") == kLine + "ur'doc'\nx = 1\n");
}

TEST_CASE("the rendered loader carries the manifest as Python literals, and it can be read back") {
  LoaderManifest m;
  m.wheelmerge = "1.0";
  m.package = "pkg";
  m.distribution = "pkg.Name_x";
  const VariantLabel cu12 = VariantLabel::cuda(12), cu13 = VariantLabel::cuda(13);
  m.variants = {cu12, cu13};
  m.cuda_bindings = false;
  m.extras = {{cu12, {"ctk-cu12"}}};
  m.builds[cu12].files = {{"k\"q\\x\xC3\xA9\xF0\x9F\x98\x80", "x.cu12"}};
  m.builds[cu12].build_info = {{"a", std::string(200, 'z')}};
  m.builds[cu13].gpu_code = {{"x.cu13.so", {"sm_90a", "compute_120"}}};
  std::string rendered = render_loader(m);
  CHECK(rendered.find(R"(_GPU_CODE: dict[str, dict[str, tuple[str, ...]]] = {)"
                      "\n    \"cu12\": {},\n    \"cu13\": {\"x.cu13.so\": (\"sm_90a\", \"compute_120\")},\n}\n") !=
        std::string::npos);
  CHECK(rendered.find("_SOURCES: tuple[str, ...] = (\"runtime\", \"driver\")\n") != std::string::npos);
  CHECK(rendered.find("_VARIANT_VARS = (\"WHEELMERGE_VARIANT_PKG_NAME_X\", \"WHEELMERGE_VARIANT\")\n") !=
        std::string::npos);
  CHECK(rendered.find(R"("k\x22q\\x\xe9\U0001f600": "x.cu12")") != std::string::npos);
  CHECK(rendered.find("#:") == std::string::npos);  // every template directive is replaced
  std::string why;
  auto back = manifest_of_loader(rendered, why);
  REQUIRE_MESSAGE(back, why);
  CHECK(back->to_json() == m.to_json());
  CHECK(render_loader(*back) == rendered);
  CHECK_FALSE(manifest_of_loader("print('hello')\n"));
  CHECK(claims_to_be_loader(rendered));
  CHECK_FALSE(claims_to_be_loader("print('hello')\n"));
  // A second assignment inside the block, or one constant missing, is not read.
  std::string twice = rendered;
  twice.insert(twice.find("_PACKAGE = "), "_PACKAGE = \"other\"\n");
  CHECK_FALSE(manifest_of_loader(twice, why));
  std::string crlf = rendered;
  for (size_t at = 0; (at = crlf.find('\n', at)) != std::string::npos; at += 2) crlf.replace(at, 1, "\r\n");
  CHECK_FALSE(manifest_of_loader(crlf, why));
  CHECK(claims_to_be_loader(crlf));
}

TEST_CASE("the rules module differs per selector and holds no template directive") {
  std::string cuda = render_rules(Selector::cuda, "pkg"), torch = render_rules(Selector::torch, "pkg"),
              cpu = render_rules(Selector::cpu, "pkg");
  CHECK(cuda.starts_with("\"\"\"The rest of the build selection of package pkg (written by wheelmerge)."));
  CHECK(render_rules(Selector::cuda, "a.b") != cuda);  // no two packages of a wheel share the file
  // A directory name cannot end the docstring: quotes and backslashes are escaped.
  std::string odd = render_rules(Selector::cuda, "x\"\"\"+__import__('os')\\");
  CHECK(odd.starts_with(R"("""The rest of the build selection of package x\x22\x22\x22+__import__('os')\\ (written)"));
  CHECK(cuda != torch);
  CHECK(torch != cpu);
  for (const std::string& rules : {cuda, torch, cpu}) {
    CHECK(rules.find("#:") == std::string::npos);
    CHECK(rules.find("def report(") != std::string::npos);
  }
  CHECK(cuda.find("def _gpus(") != std::string::npos);
  CHECK(torch.find("def _gpus(") == std::string::npos);
}
