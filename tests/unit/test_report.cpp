#include "merger/report.hpp"

#include "merger/loader.hpp"
#include "merger/merge.hpp"
#include "merger/zip/member_stream.hpp"
#include "wheel_builder.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace wm;
using namespace wm::test;

namespace {

std::string problems_text(const Problems& problems) {
  std::string out;
  for (const Problem& p : problems) out += describe(p) + "\n";
  return out;
}

// The cu12 and cu13 builds and their merge, in `dir`.
struct Merged {
  std::string cu12, cu13, output;
  explicit Merged(const TempDir& dir) {
    cu12 = cuda_build(12).write(dir.path / "in");
    cu13 = cuda_build(13).write(dir.path / "in");
    Problems problems;
    auto result = merge_wheels({{cu12, ""}, {cu13, ""}}, {}, (dir.path / "out").string(),
                               dos_time_from_epoch(1700000000), problems);
    REQUIRE_MESSAGE(result, problems_text(problems));
    output = result->output;
  }
};

const std::string kCu12 = "pkg/_core.cu12.cpython-311-x86_64-linux-gnu.so";
const std::string kCu13 = "pkg/_core.cu13.cpython-311-x86_64-linux-gnu.so";

}  // namespace

TEST_CASE("report: verify finds a merged wheel valid, with its loader") {
  TempDir dir;
  Merged m(dir);
  Problems problems;
  auto report = verify_wheel(m.output, problems);
  REQUIRE_MESSAGE(report, problems_text(problems));
  CHECK(problems.empty());
  CHECK(report->file == m.output);
  CHECK(report->merged());
  CHECK(report->loaders == std::vector<std::string>{"pkg/_wheelmerge.py"});
  CHECK(report->files == 9);  // with the loader and its rules module
  CHECK(report->warnings.empty());
}

TEST_CASE("report: verify finds an input valid and not merged") {
  TempDir dir;
  Merged m(dir);
  Problems problems;
  auto report = verify_wheel(m.cu12, problems);
  REQUIRE_MESSAGE(report, problems_text(problems));
  CHECK_FALSE(report->merged());
  CHECK(report->loaders.empty());
  CHECK(report->files == cuda_build(12).members().size());
}

TEST_CASE("report: verify refuses an invalid wheel, and a merged wheel whose loader is wrong") {
  TempDir dir;
  WheelBuilder bad = cuda_build(12);
  bad.unrecorded = {"pkg/util.py"};
  Problems problems;
  CHECK_FALSE(verify_wheel(bad.write(dir.path / "bad"), problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "file not listed in RECORD");

  // A merged wheel rebuilt without its cu13 extension module: valid as a wheel, but its
  // loader names a file it lacks.
  Merged m(dir);
  WheelBuilder rebuilt("pkg-1.0-cp311-cp311-linux_x86_64.whl");
  Problems read_problems;
  auto merged = read_wheel(WheelInput{m.output, {}}, read_problems);
  REQUIRE(merged);
  for (const WheelFile& f : merged->files) {
    if (f.path.find(".dist-info/") != std::string::npos || f.path == kCu13) continue;
    auto bytes = read_member(merged->zip, merged->zip.entries[f.entry], f.size, merged->display, read_problems);
    REQUIRE(bytes);
    rebuilt.files[std::string(f.path)] = std::move(*bytes);
  }
  const std::string path = rebuilt.write(dir.path / "rebuilt");
  problems.clear();
  CHECK_FALSE(verify_wheel(path, problems));
  REQUIRE(problems.size() == 2);  // cu13's module and variant file
  CHECK(problems[0].member == "pkg/_wheelmerge.py");
  CHECK(problems[0].what == "manifest modules of cu13 names a file the wheel lacks");
  CHECK(problems[1].what == "manifest files of cu13 names a file the wheel lacks");
  problems.clear();
  CHECK_FALSE(inspect_wheel(path, problems));
  CHECK(problems.size() == 2);
}

TEST_CASE("report: inspect shows a merged wheel's variants, loaders and files") {
  TempDir dir;
  Merged m(dir);
  Problems problems;
  auto r = inspect_wheel(m.output, problems);
  REQUIRE_MESSAGE(r, problems_text(problems));
  CHECK(problems.empty());
  CHECK(r->merged());
  CHECK(r->file == m.output);
  CHECK(r->name == "pkg");
  CHECK(r->version == "1.0");
  CHECK(r->tags == std::vector<std::string>{"cp311-cp311-linux_x86_64"});
  CHECK(r->root_is_purelib == "false");
  CHECK(r->generator.starts_with("wheelmerge "));
  CHECK(r->warnings.empty());
  CHECK(r->variants == std::vector<std::string>{"cu12", "cu13"});
  REQUIRE(r->loaders.size() == 1);
  CHECK(r->loaders[0].path == "pkg/_wheelmerge.py");
  CHECK(r->loaders[0].manifest.package == "pkg");
  CHECK(label_strings(r->loaders[0].manifest.variants) == r->variants);
  CHECK(r->loaders[0].manifest.builds.at(VariantLabel::cuda(12)).files ==
        std::map<std::string, std::string>{
            {"_core.cpython-311-x86_64-linux-gnu.so", "_core.cu12.cpython-311-x86_64-linux-gnu.so"}});

  // Every file, in archive order, labelled files with their build.
  REQUIRE(r->files.size() == 9);
  CHECK(r->files.back().path == "pkg-1.0.dist-info/RECORD");
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_label;
  for (const InspectReport::File& f : r->files) {
    CAPTURE(f.path);
    total += f.size;
    CHECK(f.compressed_size > 0);
    if (f.path == kCu12) {
      CHECK(f.variant == std::optional<std::string>("cu12"));
      CHECK(f.size == cuda_build(12).files.at(kCoreModule).size());
    } else if (f.path == kCu13) {
      CHECK(f.variant == std::optional<std::string>("cu13"));
    } else {
      CHECK_FALSE(f.variant);
    }
    if (f.variant) by_label[*f.variant] += f.size;
  }
  CHECK(r->variant_bytes == by_label);
  CHECK(r->variant_bytes.size() == 2);
  uint64_t variant_total = std::accumulate(r->variant_bytes.begin(), r->variant_bytes.end(), uint64_t{0},
                                           [](uint64_t sum, const auto& kv) { return sum + kv.second; });
  CHECK(r->shared_bytes + variant_total == total);
  CHECK(r->shared_bytes > 0);
}

TEST_CASE("report: inspect shows an input as not merged, every file shared") {
  TempDir dir;
  Merged m(dir);
  Problems problems;
  auto r = inspect_wheel(m.cu13, problems);
  REQUIRE_MESSAGE(r, problems_text(problems));
  CHECK_FALSE(r->merged());
  CHECK(r->variants.empty());
  CHECK(r->loaders.empty());
  CHECK(r->variant_bytes.empty());
  CHECK(r->generator == "wheel_builder");
  uint64_t total = 0;
  for (const InspectReport::File& f : r->files) {
    CHECK_FALSE(f.variant);
    total += f.size;
  }
  CHECK(r->shared_bytes == total);
  CHECK(r->files.size() == cuda_build(13).members().size());
}

TEST_CASE("report: inspect and verify report warnings of the reader") {
  TempDir dir;
  WheelBuilder b = cuda_build(12);
  b.wheel = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n";
  const std::string path = b.write(dir.path);
  Problems problems;
  auto v = verify_wheel(path, problems);
  auto i = inspect_wheel(path, problems);
  REQUIRE_MESSAGE((v && i), problems_text(problems));
  CHECK(v->warnings.size() == 1);
  CHECK(i->warnings == v->warnings);
  CHECK(i->generator.empty());
}
