#include "merger/format/manifest.hpp"

#include <nlohmann/json.hpp>
#include <optional>

#include <doctest/doctest.h>

#include <cstring>
#include <utility>

#include <chrono>

using namespace wm;

namespace {

LoaderManifest sample() {
  LoaderManifest m;
  m.wheelmerge = "1.2.3";
  m.package = "pkg";
  m.distribution = "d\xC3\xA9mo";  // "démo"
  m.variants = {VariantLabel::cuda(12), VariantLabel::cuda(13)};
  m.driver_fallback = true;
  m.extras = {{VariantLabel::cuda(13), {"cu13"}}};
  BuildFiles& b12 = m.builds[VariantLabel::cuda(12)];
  b12.modules = {{"pkg._core", "_core.cu12.so"}};
  b12.files = {{"_core.so", "_core.cu12.so"}};
  b12.preload = {"../pkg.libs/libx.cu12.so"};
  b12.build_info = {{"cuda", "12.8"}};
  b12.gpu_code = {{"_core.cu12.so", {"sm_80", "sm_90a", "compute_90"}}};
  m.builds[VariantLabel::cuda(13)];
  return m;
}

const std::string kSampleJson =
    R"({"build_info":{"cu12":{"cuda":"12.8"},"cu13":{}},"distribution":"d\u00e9mo",)"
    R"("extras":{"cu12":[],"cu13":["cu13"]},"files":{"cu12":{"_core.so":"_core.cu12.so"},"cu13":{}},"format":3,)"
    R"("gpu_code":{"cu12":{"_core.cu12.so":["sm_80","sm_90a","compute_90"]},"cu13":{}},)"
    R"("modules":{"cu12":{"pkg._core":"_core.cu12.so"},"cu13":{}},"package":"pkg",)"
    R"("preload":{"cu12":["../pkg.libs/libx.cu12.so"],"cu13":[]},"selector":"cuda",)"
    R"("sources":["cuda-bindings","runtime","driver"],"variants":["cu12","cu13"],"wheelmerge":"1.2.3"})";

void check_same(const LoaderManifest& a, const LoaderManifest& b) {
  CHECK(a.to_json() == b.to_json());
  CHECK(a.cuda_bindings == b.cuda_bindings);
  CHECK(a.driver_fallback == b.driver_fallback);
  CHECK(a.extras == b.extras);
}

// Why `json` is refused ("" when it is accepted).
std::string refusal(const std::string& json) {
  std::string why;
  auto m = LoaderManifest::parse(json, why);
  if (m) return "";
  CHECK_FALSE(why.empty());
  return why;
}

// The sample's JSON with `key`'s value replaced by `value` (raw JSON; none: the key removed).
std::string with(const std::string& key, const std::optional<std::string>& value) {
  auto j = nlohmann::json::parse(kSampleJson);
  if (value)
    j[key] = nlohmann::json::parse(*value);
  else
    j.erase(key);
  return j.dump();
}

}  // namespace

TEST_CASE("manifest: to_json is compact, sorted and ASCII") {
  CHECK(sample().to_json() == kSampleJson);
  LoaderManifest emoji = sample();
  emoji.distribution = "\xF0\x9F\x98\x80";  // U+1F600, outside the BMP: a surrogate pair
  CHECK(emoji.to_json().find(R"("distribution":"\ud83d\ude00")") != std::string::npos);
  for (char c : emoji.to_json()) CHECK(static_cast<unsigned char>(c) < 0x80);
}

TEST_CASE("manifest: parse reads back what to_json writes, for each order of sources") {
  std::string why;
  auto parsed = LoaderManifest::parse(sample().to_json(), why);
  REQUIRE_MESSAGE(parsed, why);
  check_same(*parsed, sample());
  for (auto [bindings, fallback] : {std::pair{true, false}, std::pair{false, true}}) {
    LoaderManifest m = sample();
    m.cuda_bindings = bindings;
    m.driver_fallback = fallback;
    auto again = LoaderManifest::parse(m.to_json(), why);
    REQUIRE_MESSAGE(again, why);
    check_same(*again, m);
  }
  CHECK(LoaderManifest::parse(with("sources", R"(["runtime","driver"])"), why)->cuda_bindings == false);
}

TEST_CASE("manifest: parse refuses what is not JSON, not of format 3, or has other keys") {
  CHECK(refusal("") == "not a JSON object");
  CHECK(refusal("[1, 2]") == "not a JSON object");
  CHECK(refusal(with("format", "2")) == "format is not 3");
  CHECK(refusal(with("format", "\"3\"")) == "format is not 3");
  CHECK(refusal(with("format", std::nullopt)) == "format is not 3");
  CHECK(refusal(with("driver_fallback", "1")) == R"(it has an unknown key "driver_fallback")");
  CHECK(refusal(with("package", "1")) == "package is not a string");
  CHECK(refusal(with("wheelmerge", std::nullopt)) == "wheelmerge is not a string");
  CHECK(refusal(with("package", R"("")")) == "package is empty");
  // The version is written into a comment line of the loader: a line break would start code.
  CHECK(refusal(with("wheelmerge", R"("1.0\nimport os")")) == R"(wheelmerge is not a version: "1.0\nimport os")");
  CHECK(refusal(with("wheelmerge", R"("1.0.dev3+g1a2b")")) == "");
}

TEST_CASE("manifest: parse refuses sources in an order no loader knows") {
  CHECK(refusal(with("sources", R"(["driver"])")) == R"(sources ["driver"] is none of the orders a loader knows)");
  CHECK(refusal(with("sources", R"(["cuda-bindings","driver"])")) != "");
  CHECK(refusal(with("sources", R"([])")) != "");
  CHECK(refusal(with("sources", "1")) == "sources is not a list");
  CHECK(refusal(with("sources", R"(["cuda-bindings"])")) == "");
}

TEST_CASE("manifest: parse refuses variants that are no labels, or listed twice") {
  CHECK(refusal(with("variants", "[12, 13]")) == "variants is not a list of labels");
  CHECK(refusal(with("variants", "[]")) == "variants is not a list of labels");
  CHECK(refusal(with("variants", R"(["cu12","gpu"])")) == R"(variant "gpu" is not a variant label)");
  CHECK(refusal(with("variants", R"(["cu12","cu13","cu12"])")) == "variant cu12 is listed twice");
  CHECK(refusal(with("selector", R"("torch")")) == "variant cu12 is no label of selector torch");
  CHECK(refusal(with("selector", R"("rocm")")) == "selector is not one of cuda, torch, cpu");
  CHECK(refusal(with("selector", R"("CUDA")")) == "selector is not one of cuda, torch, cpu");
  CHECK(refusal(with("selector", "1")) == "selector is not a string");
  CHECK(refusal(with("selector", std::nullopt)) == "selector is not a string");
  // The fields before it are checked first, as they always were.
  auto j = nlohmann::json::parse(with("selector", R"("rocm")"));
  j["package"] = "";
  CHECK(refusal(j.dump()) == "package is empty");
}

TEST_CASE("manifest: parse reads the selector and the labels as the types they are") {
  std::string why;
  auto cpu = LoaderManifest::parse(with("selector", R"("cpu")"), why);
  CHECK_FALSE(cpu);  // cu12 is no cpu label
  auto j = nlohmann::json::parse(kSampleJson);
  j["selector"] = "cpu";
  j["sources"] = nlohmann::json::array();
  j["variants"] = {"x86_64_v2", "x86_64_v3"};
  for (const char* section : {"extras", "modules", "files", "preload", "build_info", "gpu_code"})
    j[section] = {{"x86_64_v2", j[section]["cu13"]}, {"x86_64_v3", j[section]["cu12"]}};
  auto m = LoaderManifest::parse(j.dump(), why);
  REQUIRE_MESSAGE(m, why);
  CHECK(m->selector == Selector::cpu);
  CHECK(m->variants == std::vector<VariantLabel>{VariantLabel::cpu(2), VariantLabel::cpu(3)});
  CHECK(m->builds.at(VariantLabel::cpu(3)).build_info.at("cuda") == "12.8");
  CHECK(m->extras.at(VariantLabel::cpu(2)) == std::vector<std::string>{"cu13"});
  CHECK(m->sources().empty());
  CHECK(m->to_json() == j.dump(-1, ' ', /*ensure_ascii=*/true));
}

TEST_CASE("manifest: its maps by label keep the order of the labels' text, as its JSON does") {
  LoaderManifest m = sample();
  m.variants = {VariantLabel::cuda(9), VariantLabel::cuda(12)};
  m.builds.clear();
  m.builds[VariantLabel::cuda(9)].build_info = {{"n", "9"}};
  m.builds[VariantLabel::cuda(12)].build_info = {{"n", "12"}};
  m.extras.clear();
  std::vector<std::string> order;
  for (const auto& [label, build] : m.builds) order.push_back(label.str());
  CHECK(order == std::vector<std::string>{"cu12", "cu9"});
  std::string why;
  auto back = LoaderManifest::parse(m.to_json(), why);
  REQUIRE_MESSAGE(back, why);
  CHECK(back->variants == m.variants);  // selection order, as written
  CHECK(back->to_json() == m.to_json());
}

TEST_CASE("manifest: parse refuses sections naming unlisted builds, lacking one, or holding no strings") {
  CHECK(refusal(with("modules", R"({"cu12":{},"cu13":{},"cu11":{}})")) ==
        "modules has a build the manifest does not list: cu11");
  CHECK(refusal(with("files", R"({"cu12":{}})")) == "files lacks the build cu13");
  CHECK(refusal(with("preload", R"({"cu12":[1],"cu13":[]})")) == "preload of cu12 is not a list of strings");
  CHECK(refusal(with("extras", R"({"cu12":"cu12","cu13":[]})")) == "extras of cu12 is not a list of strings");
  CHECK(refusal(with("build_info", R"({"cu12":{"a":1},"cu13":{}})")) ==
        "build_info of cu12 is not an object of strings");
  // GPU code as nvcc spells it, in GpuCode's order, each once, a file with none left out.
  for (const char* code : {R"(["sm_9"])", R"(["sm_090"])", R"(["sm_90b"])", R"(["compute_"])", R"(["gfx90a"])",
                           R"(["sm_90","sm_80"])", R"(["sm_90","sm_90"])", R"(["compute_80","sm_90"])", "[]", "1"})
    CHECK(refusal(with("gpu_code", std::string(R"({"cu12":{"a.so":)") + code + R"(},"cu13":{}})")) ==
          "gpu_code of cu12 is not an object of GPU code lists");
  CHECK(refusal(with("gpu_code", R"({"cu12":{"a.so":["sm_80","sm_90a","sm_100f","compute_80"]},"cu13":{}})")) == "");
  CHECK(refusal(with("extras", "[]")) == "extras is not an object");
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
