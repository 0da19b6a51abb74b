#include "merger/write.hpp"

#include "merger/zip/member_stream.hpp"
#include "wheel_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace wm;
using namespace wm::test;

namespace {

const DosTime kTime = dos_time_from_epoch(1700000000);

std::string problems_text(const Problems& problems) {
  std::string out;
  for (const Problem& p : problems) out += describe(p) + "\n";
  return out;
}

// The two builds written into `dir`, read, and their merge planned.
struct Planned {
  std::vector<Wheel> inputs;
  MergePlan plan;
  explicit Planned(const TempDir& dir) {
    Problems problems;
    for (int major : {12, 13}) {
      auto w = read_wheel(WheelInput{cuda_build(major).write(dir.path / "in"), {}}, problems);
      REQUIRE_MESSAGE(w, problems_text(problems));
      inputs.push_back(std::move(*w));
    }
    auto p = plan_merge(inputs, {}, problems);
    REQUIRE_MESSAGE(p, problems_text(problems));
    plan = std::move(*p);
  }
};

}  // namespace

TEST_CASE("write: the written archive holds the plan's members, in its order, with its sizes and bytes") {
  TempDir dir;
  Planned p(dir);
  const fs::path out = dir.sub("out");
  Problems problems;
  auto written = write_wheel(p.plan, p.inputs, out.string(), kTime, problems);
  REQUIRE_MESSAGE(written, problems_text(problems));
  CHECK(problems.empty());
  CHECK(*written == (out / p.plan.filename).string());
  CHECK(listing(out) == std::vector<std::string>{p.plan.filename});

  auto zip = read_zip(*written, p.plan.filename, problems);
  REQUIRE_MESSAGE(zip, problems_text(problems));
  REQUIRE(zip->entries.size() == p.plan.members.size());
  size_t generated = 0;
  for (size_t i = 0; i < p.plan.members.size(); ++i) {
    const PlannedMember& m = p.plan.members[i];
    const ZipEntry& e = zip->entries[i];
    CAPTURE(m.path);
    CHECK(e.name == m.path);
    CHECK(e.uncompressed_size == m.size);
    CHECK(e.executable() == m.executable);
    std::string bytes = member_content(*zip, e, "out.whl");
    CHECK(bytes.size() == m.size);
    if (!m.input) {
      ++generated;
      CHECK(bytes == m.content);
    } else {
      // A copied member: the input member's bytes.
      const Wheel& in = p.inputs[*m.input];
      CHECK(bytes == member_content(in.zip, in.zip.entries[m.entry], "out.whl"));
    }
    if (m.sha256) CHECK(sha256_b64(bytes) == base64url_nopad(*m.sha256));
  }
  // The loader and its rules module, the patched __init__.py, WHEEL, METADATA and RECORD.
  CHECK(generated == 6);
  CHECK(zip->entries.back().name == p.plan.dist_info + "/RECORD");
}

TEST_CASE("write: the plan is what was written, as check_written sees it") {
  TempDir dir;
  Planned p(dir);
  Problems problems;
  auto written = write_wheel(p.plan, p.inputs, dir.sub("out").string(), kTime, problems);
  REQUIRE_MESSAGE(written, problems_text(problems));
  check_written(*written, "out.whl", p.plan, problems);
  CHECK_MESSAGE(problems.empty(), problems_text(problems));

  SUBCASE("a member more than the archive holds") {
    MergePlan other = p.plan;
    other.members.push_back(other.members.front());
    check_written(*written, "out.whl", other, problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::other);
    CHECK(problems[0].what == "output check failed: member count");
  }
  SUBCASE("members in another order") {
    MergePlan other = p.plan;
    std::swap(other.members[0], other.members[1]);
    check_written(*written, "out.whl", other, problems);
    REQUIRE(problems.size() >= 2);
    CHECK(problems[0].what == "output check failed: member");
    CHECK(problems[0].member == other.members[0].path);
  }
  SUBCASE("a member of another size") {
    MergePlan other = p.plan;
    other.members[0].size += 1;
    check_written(*written, "out.whl", other, problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "output check failed: member");
  }
  SUBCASE("a loader the plan names but did not write") {
    MergePlan other = p.plan;
    other.loader_packages.push_back("pkg2");
    check_written(*written, "out.whl", other, problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].member == "pkg2/_wheelmerge.py");
    CHECK(problems[0].what == "output check failed: loader manifest malformed");
  }
  SUBCASE("a generated member whose bytes differ from the plan's") {
    MergePlan other = p.plan;
    auto wheel = std::find_if(other.members.begin(), other.members.end(),
                              [&](const PlannedMember& m) { return m.path == other.dist_info + "/WHEEL"; });
    REQUIRE(wheel != other.members.end());
    std::string changed(wheel->content);
    changed.back() = changed.back() == 'x' ? 'y' : 'x';  // same size
    wheel->content = other.text->contents.emplace_back(std::move(changed));
    check_written(*written, "out.whl", other, problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].member == other.dist_info + "/WHEEL");
    CHECK(problems[0].what == "output check failed: content");
  }
  SUBCASE("a file that is no zip archive") {
    const fs::path junk = dir.path / "junk.whl";
    write_file_bytes(junk, "not a zip archive");
    check_written(junk.string(), "junk.whl", p.plan, problems);
    REQUIRE_FALSE(problems.empty());
    CHECK(problems[0].what.starts_with("output check failed: "));
  }
}

TEST_CASE("write: an output directory that does not exist is created") {
  TempDir dir;
  Planned p(dir);
  const fs::path out = dir.path / "a" / "b";
  Problems problems;
  auto written = write_wheel(p.plan, p.inputs, out.string(), kTime, problems);
  REQUIRE_MESSAGE(written, problems_text(problems));
  CHECK(listing(out) == std::vector<std::string>{p.plan.filename});
}

TEST_CASE("write: an output directory that cannot be made is a problem, and nothing is left") {
  TempDir dir;
  Planned p(dir);
  const fs::path file = dir.path / "file";
  write_file_bytes(file, "a file, not a directory");
  const std::vector<std::string> before = listing(dir.path);
  Problems problems;
  CHECK_FALSE(write_wheel(p.plan, p.inputs, (file / "out").string(), kTime, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::other);
  CHECK(problems[0].what == "cannot create the output directory");
  CHECK(listing(dir.path) == before);
  CHECK(read_file_bytes(file) == "a file, not a directory");
}

TEST_CASE("write: the output never replaces an input") {
  TempDir dir;
  Planned p(dir);
  // An input that has the output's name, in the output directory.
  const fs::path in_dir = dir.path / "in";
  const fs::path clash = in_dir / p.plan.filename;
  fs::copy_file(p.inputs[0].path, clash);
  p.inputs[0].path = clash.string();
  const std::string bytes = read_file_bytes(clash);
  Problems problems;
  CHECK_FALSE(write_wheel(p.plan, p.inputs, in_dir.string(), kTime, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "the output would replace an input");
  CHECK(read_file_bytes(clash) == bytes);
  CHECK(listing(in_dir).size() == 3);  // the two builds and the copy, nothing else
}

TEST_CASE("write: the timestamp given is every entry's") {
  TempDir dir;
  Planned p(dir);
  Problems problems;
  auto a = write_wheel(p.plan, p.inputs, dir.sub("a").string(), kTime, problems);
  auto b = write_wheel(p.plan, p.inputs, dir.sub("b").string(), kTime, problems);
  auto c = write_wheel(p.plan, p.inputs, dir.sub("c").string(), dos_time_from_epoch(1800000000), problems);
  REQUIRE_MESSAGE((a && b && c), problems_text(problems));
  CHECK(read_file_bytes(*a) == read_file_bytes(*b));
  CHECK(read_file_bytes(*a) != read_file_bytes(*c));
  CHECK(read_file_bytes(*a).size() == read_file_bytes(*c).size());
}
