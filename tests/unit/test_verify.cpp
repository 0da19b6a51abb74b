#include "merger/verify.hpp"
#include "merger/version.hpp"

#include "labels.hpp"
#include "merger/format/manifest.hpp"
#include "merger/loader.hpp"
#include "merger/wheel.hpp"
#include "wheel_builder.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>

using namespace wm;
using namespace wm::test_labels;
using namespace wm::test;

namespace {

const std::string kCu12 = "_core.cu12.cpython-311-x86_64-linux-gnu.so";
const std::string kCu13 = "_core.cu13.cpython-311-x86_64-linux-gnu.so";
const std::string kOriginal = "_core.cpython-311-x86_64-linux-gnu.so";

// The manifest the planner writes for one package with one extension module per build.
LoaderManifest manifest(const std::string& package = "pkg") {
  LoaderManifest m;
  m.package = package;
  m.distribution = "pkg";
  m.variants = {"cu12"_label, "cu13"_label};
  m.wheelmerge = std::string(kVersion);
  m.extras = {{"cu12"_label, {"cu12"}}, {"cu13"_label, {"cu13"}}};
  for (const auto& [label, stored] : {std::pair{"cu12"_label, kCu12}, std::pair{"cu13"_label, kCu13}}) {
    m.builds[label].modules = {{package + "._core", stored}};
    m.builds[label].files = {{kOriginal, stored}};
  }
  return m;
}

LoaderFiles loader(const LoaderManifest& m, const std::string& dir = "pkg") {
  return {dir + "/_wheelmerge.py", render_loader(m), "\"\"\"Doc.\"\"\"\n" + std::string(kLoaderImport) + "import os\n",
          render_rules(m.selector, m.package)};
}

std::set<std::string> paths(const std::string& dir = "pkg") {
  return {dir + "/__init__.py",         dir + "/_wheelmerge.py",    dir + "/" + kCu12,        dir + "/" + kCu13,
          "pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/RECORD", "pkg-1.0.dist-info/WHEEL"};
}

// The one problem check_loaders finds, which must say `what`.
Problem only_problem(const std::vector<LoaderFiles>& loaders, const std::set<std::string>& files) {
  Problems problems;
  check_loaders("m.whl", loaders, files, problems);
  std::string all;
  for (const Problem& p : problems) all += describe(p) + "\n";
  REQUIRE_MESSAGE(problems.size() == 1, all);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].file == "m.whl");
  return problems[0];
}

}  // namespace

TEST_CASE("verify: a loader whose manifest matches the files passes") {
  Problems problems;
  auto found = check_loaders("m.whl", {loader(manifest())}, paths(), problems);
  CHECK(problems.empty());
  REQUIRE(found.size() == 1);
  CHECK(found[0].loader_path == "pkg/_wheelmerge.py");
  CHECK(found[0].manifest.to_json() == manifest().to_json());
}

TEST_CASE("verify: the import line may end in CRLF and follow a BOM") {
  LoaderFiles l = loader(manifest());
  std::string line(kLoaderImport.substr(0, kLoaderImport.size() - 1));
  for (std::string init : {"\"Doc.\"\r\n" + line + "\r\nimport os\r\n", "\xEF\xBB\xBF" + line + "\n"}) {
    l.init_source = init;
    Problems problems;
    check_loaders("m.whl", {l}, paths(), problems);
    CHECK(problems.empty());
  }
}

TEST_CASE("verify: a build's manifest entry naming another build's file") {
  for (const char* section : {"modules", "files", "preload"}) {
    CAPTURE(section);
    LoaderManifest m = manifest();
    BuildFiles& cu12 = m.builds["cu12"_label];
    if (std::string_view(section) == "modules") cu12.modules["pkg._core"] = kCu13;
    if (std::string_view(section) == "files") cu12.files[kOriginal] = kCu13;
    if (std::string_view(section) == "preload") cu12.preload = {kCu13};
    Problems problems;
    check_loaders("m.whl", {loader(m)}, paths(), problems);
    const auto found = std::find_if(problems.begin(), problems.end(), [&](const Problem& p) {
      return p.what == fmt::format("manifest {} of cu12 names a file of build cu13", section);
    });
    REQUIRE_MESSAGE(found != problems.end(), problems.size());
    CHECK(found->found == "pkg/" + kCu13);
  }
}

TEST_CASE("verify: no loaders, no problems") {
  Problems problems;
  // Without a loader nothing says which names are labels: labelled-looking names pass.
  CHECK(check_loaders("m.whl", {}, paths(), problems).empty());
  CHECK(problems.empty());
}

TEST_CASE("verify: a manifest path to a member the wheel lacks") {
  std::set<std::string> files = paths();
  files.erase("pkg/" + kCu13);
  Problems problems;
  auto found = check_loaders("m.whl", {loader(manifest())}, files, problems);
  CHECK(found.size() == 1);  // parsed, so returned
  // Named twice: as cu13's module and as cu13's variant file.
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].what == "manifest modules of cu13 names a file the wheel lacks");
  CHECK(problems[1].what == "manifest files of cu13 names a file the wheel lacks");
  for (const Problem& p : problems) {
    CHECK(p.kind == ProblemKind::invalid_input);
    CHECK(p.member == "pkg/_wheelmerge.py");
    CHECK(p.expected == "pkg/" + kCu13);
    CHECK(p.found == "no such member");
  }
  // Listed only as a module, it is one problem.
  LoaderManifest m = manifest();
  m.builds["cu13"_label].files.clear();
  Problem p = only_problem({loader(m)}, files);
  CHECK(p.what == "manifest modules of cu13 names a file the wheel lacks");
}

TEST_CASE("verify: a preload path the wheel lacks, resolved against the package") {
  LoaderManifest m = manifest();
  m.builds["cu12"_label].preload = {"../pkg.libs/libx.cu12.so"};
  Problem p = only_problem({loader(m)}, paths());
  CHECK(p.what == "manifest preload of cu12 names a file the wheel lacks");
  CHECK(p.expected == "pkg.libs/libx.cu12.so");
  // With the library there it passes.
  std::set<std::string> files = paths();
  files.insert("pkg.libs/libx.cu12.so");
  Problems problems;
  check_loaders("m.whl", {loader(m)}, files, problems);
  CHECK(problems.empty());
}

TEST_CASE("verify: a manifest path that leaves the wheel") {
  LoaderManifest m = manifest();
  m.builds["cu13"_label].files["escape"] = "../../outside.so";
  Problem p = only_problem({loader(m)}, paths());
  CHECK(p.member == "pkg/_wheelmerge.py");
  CHECK(p.what == "manifest files of cu13 names a path outside the wheel");
  CHECK(p.found == "../../outside.so");
}

TEST_CASE("verify: an absolute manifest path is outside the wheel too") {
  LoaderManifest m = manifest();
  m.builds["cu12"_label].modules["pkg.abs"] = "/etc/passwd";
  Problem p = only_problem({loader(m)}, paths());
  CHECK(p.what == "manifest modules of cu12 names a path outside the wheel");
}

TEST_CASE("verify: an __init__.py that does not import its loader") {
  for (std::string init : {std::string(), std::string("import os\n"),
                           // Commented out, indented, or not ended by a newline: no import line.
                           "# " + std::string(kLoaderImport), "  " + std::string(kLoaderImport),
                           std::string(kLoaderImport.substr(0, kLoaderImport.size() - 1)),
                           // Text that never runs: inside the docstring, inside a string after
                           // it, after other statements (behind a branch, or an exit before it).
                           "\"\"\"Doc.\n" + std::string(kLoaderImport) + "\"\"\"\n",
                           "'''Doc'''\nx = '''\n" + std::string(kLoaderImport) + "'''\n",
                           "if False:\n    pass\n" + std::string(kLoaderImport),
                           "import sys\nif sys.flags.optimize:\n  raise SystemExit\n" + std::string(kLoaderImport)}) {
    CAPTURE(init);
    LoaderFiles l = loader(manifest());
    l.init_source = init;
    Problem p = only_problem({l}, paths());
    CHECK(p.member == "pkg/__init__.py");
    CHECK(p.what == "package does not import its loader");
  }
}

TEST_CASE("verify: the import line where wheelmerge puts it is accepted, whatever precedes it there") {
  for (std::string init : {std::string(kLoaderImport), "# coding: utf-8\n" + std::string(kLoaderImport),
                           "\"\"\"Doc.\"\"\"\n" + std::string(kLoaderImport) + "import os\n",
                           "'Doc'\nfrom __future__ import annotations\n" + std::string(kLoaderImport) + "\n# end\n"}) {
    CAPTURE(init);
    std::string why;
    CHECK(executes_loader_import(init));
    // What the injector writes is what verify accepts.
    const size_t at = init.find(kLoaderImport);
    const std::string body = init.substr(0, at) + init.substr(at + kLoaderImport.size());
    auto injected = inject_loader_import(body, why);
    REQUIRE(injected);
    CHECK(*injected == init);
  }
}

TEST_CASE("verify: two loaders that disagree on the variants") {
  LoaderManifest other = manifest("pkg2");
  other.variants = {"cu12"_label};
  other.builds.erase("cu13"_label);
  other.extras = {{"cu12"_label, {"cu12"}}};
  std::set<std::string> files = paths();
  files.merge(paths("pkg2"));
  files.erase("pkg2/" + kCu13);
  // "pkg2/_core.cu13..." is gone, so nothing is left unlisted.
  Problem p = only_problem({loader(manifest()), loader(other, "pkg2")}, files);
  CHECK(p.member == "pkg2/_wheelmerge.py");
  CHECK(p.what == "loaders disagree on the variants");
  CHECK(p.expected == "[\"cu12\",\"cu13\"]");
  CHECK(p.found == "[\"cu12\"]");
}

TEST_CASE("verify: two loaders that agree pass, and are returned in the given order") {
  std::set<std::string> files = paths();
  files.merge(paths("pkg2"));
  Problems problems;
  auto found = check_loaders("m.whl", {loader(manifest()), loader(manifest("pkg2"), "pkg2")}, files, problems);
  CHECK(problems.empty());
  REQUIRE(found.size() == 2);
  CHECK(found[0].loader_path == "pkg/_wheelmerge.py");
  CHECK(found[1].loader_path == "pkg2/_wheelmerge.py");
}

TEST_CASE("verify: a labelled file that no manifest lists") {
  for (std::string stray :
       {"pkg/extra.cu12.so", "pkg/kernels/k.cu13.cubin", "other/data.cu12", "pkg/.hidden.cu13.bin"}) {
    CAPTURE(stray);
    std::set<std::string> files = paths();
    files.insert(stray);
    Problem p = only_problem({loader(manifest())}, files);
    CHECK(p.member == stray);
    CHECK(p.what == "variant file no loader lists");
  }
  // Names whose stem is the label, names with labels no loader has, and dist-info files are
  // not variant files.
  std::set<std::string> files = paths();
  files.insert({"pkg/cu12.py", "pkg/data.cu11.bin", "pkg/.cu12", "pkg-1.0.dist-info/sboms/x.cu12.json"});
  Problems problems;
  check_loaders("m.whl", {loader(manifest())}, files, problems);
  CHECK(problems.empty());
}

TEST_CASE("verify: a malformed manifest") {
  const std::string json = manifest().to_json();
  auto malformed = [&](const std::string& source) {
    LoaderFiles l = loader(manifest());
    l.loader_source = source;
    // The loader is not returned, so nothing checks its variants' files.
    Problems problems;
    auto found = check_loaders("m.whl", {l}, paths(), problems);
    CHECK(found.empty());
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].member == "pkg/_wheelmerge.py");
    CHECK(problems[0].what == "loader manifest malformed");
    return problems[0].found;
  };
  CHECK(malformed("print('no manifest here')\n") == "no manifest block");
  CHECK(malformed("") == "no manifest block");
  std::string source = render_loader(manifest());
  std::string twice = source;
  twice.insert(twice.find("_PACKAGE = "), "_PACKAGE = \"json\"\n");
  CHECK(malformed(twice) == "the manifest block does not assign _SELECTOR = where expected");
  std::string bad_label = source;
  bad_label.replace(bad_label.find("(\"cu12\", \"cu13\")"), 16, "(\"cu12\", \"gpu\")");
  CHECK(malformed(bad_label).find("is not a variant label") != std::string::npos);
}

TEST_CASE("verify: a loader or rules module other than what wheelmerge writes") {
  LoaderFiles l = loader(manifest());
  l.loader_source += "import os\n";
  Problems problems;
  CHECK(check_loaders("m.whl", {l}, paths(), problems).empty());
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what.starts_with("loader is not the one wheelmerge"));
  l = loader(manifest());
  l.rules_source = render_rules(Selector::cpu, "pkg");
  problems.clear();
  check_loaders("m.whl", {l}, paths(), problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what.starts_with("rules module is not the one"));
  l.rules_source.reset();
  problems.clear();
  check_loaders("m.whl", {l}, paths(), problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "loader's rules module is missing");
}

TEST_CASE("verify: find_loaders reads the loaders of a wheel, and skips modules of that name that are no loader") {
  TempDir dir;
  WheelBuilder b("pkg-1.0-cp311-cp311-linux_x86_64.whl",
                 {{"pkg/__init__.py", std::string(kLoaderImport)},
                  {"pkg/_wheelmerge.py", render_loader(manifest())},
                  {"pkg/_wheelmerge_rules.py", render_rules(Selector::cuda, "pkg")},
                  {"pkg/" + kCu12, "12"},
                  {"pkg/" + kCu13, "13"},
                  {"other/__init__.py", ""},
                  {"other/_wheelmerge.py", "# a module of the same name, written by someone else\n"}});
  Problems problems;
  auto w = read_wheel(WheelInput{b.write(dir.path), {}}, problems);
  REQUIRE(w);
  auto found = find_loaders(*w, problems);
  CHECK(problems.empty());
  REQUIRE(found.size() == 1);
  CHECK(found[0].loader_path == "pkg/_wheelmerge.py");
  CHECK(found[0].manifest.variants == std::vector<VariantLabel>{"cu12"_label, "cu13"_label});

  // Without one of the files its manifest names, the same wheel fails.
  b.files.erase("pkg/" + kCu13);
  auto broken = read_wheel(WheelInput{b.write(dir.path / "broken"), {}}, problems);
  REQUIRE(broken);
  find_loaders(*broken, problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].file == b.filename);
  CHECK(problems[0].what == "manifest modules of cu13 names a file the wheel lacks");
  CHECK(problems[1].what == "manifest files of cu13 names a file the wheel lacks");
}

TEST_CASE("verify: a manifest naming another package, or a module outside its own, is refused") {
  {
    Problem p = only_problem({loader(manifest("json"), "pkg")}, paths());
    CHECK(p.member == "pkg/_wheelmerge.py");
    CHECK(p.what == "loader manifest names another package");
    CHECK(p.expected == "pkg");
    CHECK(p.found == "json");
  }
  {
    LoaderManifest m = manifest();
    m.builds["cu12"_label].modules = {{"json", kCu12}};  // would take over `import json`
    Problem p = only_problem({loader(m)}, paths());
    CHECK(p.what == "manifest modules of cu12 names a module outside the package");
    CHECK(p.found == "json");
  }
  {  // "pkgx" starts like "pkg" but is another package
    LoaderManifest m = manifest();
    m.builds["cu13"_label].modules = {{"pkgx._core", kCu13}};
    CHECK(only_problem({loader(m)}, paths()).found == "pkgx._core");
  }
  // A package under .data/platlib is named as it installs.
  const std::string dir = "pkg-1.0.data/platlib/pkg";
  Problems problems;
  check_loaders("m.whl", {loader(manifest(), dir)}, paths(dir), problems);
  CHECK(problems.empty());
}
