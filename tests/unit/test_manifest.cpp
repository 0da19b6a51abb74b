#include "merger/manifest.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <utility>

#include <chrono>

using namespace wm;

namespace {

LoaderManifest sample() {
  LoaderManifest m;
  m.package = "pkg";
  m.distribution = "d\xC3\xA9mo";  // "démo"
  m.variants = {"cu12", "cu13"};
  m.driver_fallback = true;
  m.extras = {"cu13"};
  BuildFiles& b12 = m.builds["cu12"];
  b12.modules = {{"pkg._core", "_core.cu12.so"}};
  b12.files = {{"_core.so", "_core.cu12.so"}};
  b12.preload = {"../pkg.libs/libx.cu12.so"};
  b12.build_info = {{"cuda", "12.8"}};
  m.builds["cu13"];
  return m;
}

const std::string kSampleJson =
    R"({"build_info":{"cu12":{"cuda":"12.8"},"cu13":{}},"distribution":"d\u00e9mo","driver_fallback":1,)"
    R"("extras":["cu13"],"files":{"cu12":{"_core.so":"_core.cu12.so"},"cu13":{}},"format":1,)"
    R"("modules":{"cu12":{"pkg._core":"_core.cu12.so"},"cu13":{}},"package":"pkg",)"
    R"("preload":{"cu12":["../pkg.libs/libx.cu12.so"],"cu13":[]},"selector":"cuda","variants":["cu12","cu13"]})";

void check_same(const LoaderManifest& a, const LoaderManifest& b) {
  CHECK(a.package == b.package);
  CHECK(a.distribution == b.distribution);
  CHECK(a.variants == b.variants);
  CHECK(a.driver_fallback == b.driver_fallback);
  CHECK(a.extras == b.extras);
  REQUIRE(a.builds.size() == b.builds.size());
  for (const auto& [label, build] : a.builds) {
    CAPTURE(label);
    REQUIRE(b.builds.count(label) == 1);
    const BuildFiles& other = b.builds.at(label);
    CHECK(build.modules == other.modules);
    CHECK(build.files == other.files);
    CHECK(build.preload == other.preload);
    CHECK(build.build_info == other.build_info);
  }
}

// Why `json` is refused ("" when it is accepted).
std::string refusal(const std::string& json) {
  std::string why;
  auto m = LoaderManifest::parse(json, why);
  if (m) return "";
  CHECK_FALSE(why.empty());
  return why;
}

// A valid manifest's text with `key`'s value replaced by `value` (raw JSON).
std::string with(const std::string& key, const std::string& value) {
  const std::string base =
      R"({"format":1,"package":"pkg","distribution":"demo","variants":["cu12","cu13"],"driver_fallback":0,)"
      R"("extras":[],"modules":{"cu12":{"pkg._core":"_core.cu12.so"}},"files":{},"preload":{"cu13":[]},)"
      R"("build_info":{"cu12":{"cuda":"12.8"}}})";
  const std::string needle = "\"" + key + "\":";
  size_t at = base.find(needle);
  REQUIRE(at != std::string::npos);
  size_t begin = at + needle.size();
  // The value ends at the comma or brace that closes it at depth 0.
  int depth = 0;
  size_t end = begin;
  for (; end < base.size(); ++end) {
    char c = base[end];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) break;
  }
  return base.substr(0, begin) + value + base.substr(end);
}

std::string without(const std::string& key) {
  std::string json = with(key, "0");
  std::string field = ",\"" + key + "\":0";
  size_t at = json.find(field);
  if (at == std::string::npos) at = json.find(field = "\"" + key + "\":0,");  // the first key
  REQUIRE(at != std::string::npos);
  return json.erase(at, field.size());
}

}  // namespace

TEST_CASE("manifest: to_json is compact, sorted and ASCII") {
  CHECK(sample().to_json() == kSampleJson);
  LoaderManifest emoji = sample();
  emoji.distribution = "\xF0\x9F\x98\x80";  // U+1F600, outside the BMP: a surrogate pair
  CHECK(emoji.to_json().find(R"("distribution":"\ud83d\ude00")") != std::string::npos);
  for (char c : emoji.to_json()) CHECK(static_cast<unsigned char>(c) < 0x80);
}

TEST_CASE("manifest: parse reads back what to_json writes") {
  std::string why;
  auto parsed = LoaderManifest::parse(sample().to_json(), why);
  REQUIRE_MESSAGE(parsed, why);
  check_same(*parsed, sample());
  CHECK(parsed->to_json() == kSampleJson);

  LoaderManifest plain;
  plain.package = "a.b";
  plain.distribution = "x";
  plain.variants = {"cu9"};
  plain.builds["cu9"].files = {{"k.cubin", "k.cu9.cubin"}};
  auto again = LoaderManifest::parse(plain.to_json(), why);
  REQUIRE_MESSAGE(again, why);
  check_same(*again, plain);
  CHECK_FALSE(again->driver_fallback);
}

TEST_CASE("manifest: the test's base manifest is accepted, build_info and extras may be missing") {
  std::string why;
  auto m = LoaderManifest::parse(with("package", "\"pkg\""), why);
  REQUIRE_MESSAGE(m, why);
  CHECK(m->builds.size() == 2);  // every listed build has an entry, cu13 without files
  CHECK(m->builds.at("cu12").modules.at("pkg._core") == "_core.cu12.so");
  CHECK(m->builds.at("cu12").build_info.at("cuda") == "12.8");
  CHECK(m->builds.at("cu13").modules.empty());

  auto no_info = LoaderManifest::parse(without("build_info"), why);
  REQUIRE_MESSAGE(no_info, why);
  CHECK(no_info->builds.at("cu12").build_info.empty());
  CHECK(no_info->builds.at("cu12").modules.size() == 1);

  auto no_extras = LoaderManifest::parse(without("extras"), why);
  REQUIRE_MESSAGE(no_extras, why);
  CHECK(no_extras->extras.empty());
}

TEST_CASE("manifest: parse refuses what is not JSON or not of format 1") {
  CHECK(refusal("") == "not a JSON object");
  CHECK(refusal("{") == "not a JSON object");
  CHECK(refusal("not json") == "not a JSON object");
  CHECK(refusal("[1, 2]") == "not a JSON object");
  CHECK(refusal("\"text\"") == "not a JSON object");
  CHECK(refusal(with("format", "2")) == "format is not 1");
  CHECK(refusal(with("format", "\"1\"")) == "format is not 1");
  CHECK(refusal(with("format", "1.5")) == "format is not 1");
  CHECK(refusal(without("format")) == "format is not 1");
}

TEST_CASE("manifest: parse refuses a missing or mistyped package, distribution or flag") {
  CHECK(refusal(with("package", "1")) == "package is not a string");
  CHECK(refusal(without("package")) == "package is not a string");
  CHECK(refusal(with("distribution", "null")) == "distribution is not a string");
  CHECK(refusal(with("driver_fallback", "2")) == "driver_fallback is not 0 or 1");
  CHECK(refusal(with("driver_fallback", "-1")) == "driver_fallback is not 0 or 1");
  CHECK(refusal(with("driver_fallback", "true")) == "driver_fallback is not 0 or 1");
  CHECK(refusal(without("driver_fallback")) == "driver_fallback is not 0 or 1");
  CHECK(refusal(with("driver_fallback", "1")) == "");
}

TEST_CASE("manifest: parse refuses variants that are no labels, or listed twice") {
  CHECK(refusal(with("variants", "[12, 13]")) == "variants is not a list of labels");
  CHECK(refusal(with("variants", "\"cu12\"")) == "variants is not a list of labels");
  CHECK(refusal(without("variants")) == "variants is not a list of labels");
  CHECK(refusal(with("variants", R"(["cu12","gpu"])")) == R"(variant "gpu" is not a variant label)");
  CHECK(refusal(with("variants", R"(["cu12","cu012"])")) == R"(variant "cu012" is not a variant label)");
  CHECK(refusal(with("variants", R"(["cu12","cu13","cu12"])")) == "variant cu12 is listed twice");
  CHECK(refusal(with("extras", "[1]")) == "extras is not a list of labels");
  CHECK(refusal(with("variants", "[]")) == "variants is not a list of labels");
  CHECK(refusal(with("extras", R"(["nope"])")) == "extras names a build the manifest does not list: nope");
  CHECK(refusal(with("package", R"("")")) == "package is empty");
}

TEST_CASE("manifest: the selector defaults to cuda and must fit every label") {
  std::string why;
  auto old = LoaderManifest::parse(with("package", "\"pkg\""), why);  // written before selectors existed
  REQUIRE_MESSAGE(old, why);
  CHECK(old->selector == "cuda");
  const std::string cpu = with("variants", R"(["x86_64_v1","x86_64_v3"])");
  // The base's sections name cu12 and cu13: replace them with the CPU levels' own.
  std::string cpu_manifest = cpu;
  for (auto [from, to] : {std::pair{"\"cu12\"", "\"x86_64_v1\""}, std::pair{"\"cu13\"", "\"x86_64_v3\""}})
    for (size_t at; (at = cpu_manifest.find(from)) != std::string::npos;) cpu_manifest.replace(at, std::strlen(from), to);
  cpu_manifest.insert(1, R"("selector":"cpu",)");
  auto levels = LoaderManifest::parse(cpu_manifest, why);
  REQUIRE_MESSAGE(levels, why);
  CHECK(levels->selector == "cpu");
  CHECK(levels->variants == std::vector<std::string>{"x86_64_v1", "x86_64_v3"});
  CHECK(LoaderManifest::parse(levels->to_json(), why)->to_json() == levels->to_json());

  CHECK(refusal(R"({"selector":"torch",)" + with("package", "\"pkg\"").substr(1)) == "variant cu12 is no label of selector torch");
  CHECK(refusal(R"({"selector":"rocm",)" + with("package", "\"pkg\"").substr(1)) == "selector is not one of cuda, torch, cpu");
  CHECK(refusal(R"({"selector":1,)" + with("package", "\"pkg\"").substr(1)) == "selector is not one of cuda, torch, cpu");
  CHECK(refusal(cpu) == "variant x86_64_v1 is no label of selector cuda");
}

TEST_CASE("manifest: to_json writes every build's sections, files or not") {
  LoaderManifest m;
  m.package = "pkg";
  m.distribution = "demo";
  m.variants = {"cu12", "cu13"};
  std::string why;
  auto back = LoaderManifest::parse(m.to_json(), why);
  REQUIRE_MESSAGE(back, why);
  CHECK(back->builds.size() == 2);
}

TEST_CASE("manifest: parse refuses sections naming unlisted builds or holding no strings") {
  CHECK(refusal(with("modules", R"({"cu14":{}})")) == "modules has a build the manifest does not list: cu14");
  CHECK(refusal(with("files", R"({"cu12":{},"cu11":{}})")) == "files has a build the manifest does not list: cu11");
  CHECK(refusal(with("preload", R"({"cu14":[]})")) == "preload has a build the manifest does not list: cu14");
  CHECK(refusal(with("build_info", R"({"cu14":{}})")) == "build_info has a build the manifest does not list: cu14");
  CHECK(refusal(with("modules", "[]")) == "modules is not an object");
  CHECK(refusal(without("modules")) == "modules is missing");
  CHECK(refusal(without("files")) == "files is missing");
  CHECK(refusal(without("preload")) == "preload is missing");
  CHECK(refusal(with("modules", R"({"cu12":{"pkg._core":1}})")) == "modules of cu12 is not an object of strings");
  CHECK(refusal(with("files", R"({"cu13":{"a.so":null}})")) == "files of cu13 is not an object of strings");
  CHECK(refusal(with("files", R"({"cu13":["a.so"]})")) == "files of cu13 is not an object of strings");
  CHECK(refusal(with("preload", R"({"cu13":[1]})")) == "preload of cu13 is not a list of paths");
  CHECK(refusal(with("preload", R"({"cu13":"libx.so"})")) == "preload of cu13 is not a list of paths");
  CHECK(refusal(with("build_info", R"({"cu12":{"cuda":12.8}})")) == "build_info of cu12 is not an object of strings");
  CHECK(refusal(with("build_info", R"({"cu12":"12.8"})")) == "build_info of cu12 is not an object of strings");
}

TEST_CASE("manifest: manifest_archive_path resolves paths against the package directory") {
  CHECK(manifest_archive_path("pkg", "_core.cu12.so") == "pkg/_core.cu12.so");
  CHECK(manifest_archive_path("pkg", "kernels/k.cu12.cubin") == "pkg/kernels/k.cu12.cubin");
  CHECK(manifest_archive_path("pkg", "../pkg.libs/libx.so") == "pkg.libs/libx.so");
  CHECK(manifest_archive_path("pkg/sub", "../../top.so") == "top.so");
  CHECK(manifest_archive_path("a/b/c", "../x.so") == "a/b/x.so");
  CHECK(manifest_archive_path("demo-1.0.data/platlib/pkg", "../../../pkg.libs/x.so") == "pkg.libs/x.so");
  CHECK(manifest_archive_path("", "x.so") == "x.so");
}

TEST_CASE("manifest: manifest_archive_path refuses paths leaving the wheel or unsafe") {
  CHECK(manifest_archive_path("pkg", "../../x.so") == "");
  CHECK(manifest_archive_path("a/b/c", "../../../../x.so") == "");
  CHECK(manifest_archive_path("", "../x.so") == "");
  CHECK(manifest_archive_path("pkg", "../") == "");
  CHECK(manifest_archive_path("pkg", "..") == "");
  CHECK(manifest_archive_path("pkg", "") == "");
  CHECK(manifest_archive_path("pkg", "sub/../../../x.so") == "");  // ".." only as a prefix
  CHECK(manifest_archive_path("pkg", "sub/../x.so") == "");
  CHECK(manifest_archive_path("pkg", "./x.so") == "");
  CHECK(manifest_archive_path("pkg", "/etc/passwd") == "");
  CHECK(manifest_archive_path("pkg", "..//x.so") == "");
  CHECK(manifest_archive_path("pkg", "a\\b.so") == "");
  CHECK(manifest_archive_path("pkg", "C:/x.so") == "");
  CHECK(manifest_archive_path("pkg", "a\nb.so") == "");
  CHECK(manifest_archive_path("pkg", "dir/") == "");
  CHECK(manifest_archive_path("pkg", "a//b.so") == "");
  CHECK(manifest_archive_path("pkg", "\xFF.so") == "");  // not UTF-8
}

TEST_CASE("manifest: manifest_archive_path is linear in a long run of ../") {
  std::string ups;
  for (int i = 0; i < 100000; ++i) ups += "../";
  std::string deep = "a";
  for (int i = 1; i < 100000; ++i) deep += "/a";
  auto start = std::chrono::steady_clock::now();
  CHECK(manifest_archive_path("pkg", ups + "x.so") == "");
  CHECK(manifest_archive_path("pkg", ups) == "");
  CHECK(manifest_archive_path(deep, ups + "x.so") == "x.so");  // as many ../ as there are directories
  CHECK(manifest_archive_path(deep, ups + "../x.so") == "");   // one more
  CHECK(manifest_archive_path(deep + "/b", ups + "x.so") == "a/x.so");
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);
}
