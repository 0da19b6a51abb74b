#include "merger/base/bytes.hpp"
#include "merger/base/text.hpp"
#include "merger/zip/member_stream.hpp"
#include "merger/zip/zip_archive.hpp"
#include "merger/zip/zip_writer.hpp"
#include "wheel_builder.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>

using namespace wm;
using wm::test::member_content;

namespace {

// A zip written by ZipWriter into a temporary file, removed at the end of the test.
struct TempZip {
  std::string path;
  TempZip() {
    char name[] = "/tmp/wm_unit_XXXXXX";
    int fd = mkstemp(name);
    path = name;
    File out(fd);
    ZipWriter w(out, dos_time_from_epoch(1700000000));
    REQUIRE(w.add_generated("pkg/__init__.py", as_bytes("print('hi')\n"), false));
    REQUIRE(w.add_generated("pkg/tool", as_bytes(std::string(5000, 'x')), true));
    REQUIRE(w.finish());
  }
  ~TempZip() { std::remove(path.c_str()); }
  std::vector<uint8_t> bytes() const {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  void rewrite(const std::vector<uint8_t>& data) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  std::optional<ZipArchive> read(Problems& problems) const { return read_zip(path, "t.whl", problems); }
};

// Offset of the central directory header of entry `index`.
size_t central_header(const std::vector<uint8_t>& data, size_t index) {
  for (size_t i = 0, seen = 0; i + 4 <= data.size(); ++i)
    if (ByteView(data).u32(i) == 0x02014b50 && seen++ == index) return i;
  FAIL("no such central header");
  return 0;
}

}  // namespace

TEST_CASE("what ZipWriter writes, read_zip reads back exactly") {
  TempZip z;
  Problems problems;
  auto zip = z.read(problems);
  REQUIRE(zip);
  REQUIRE(zip->entries.size() == 2);
  CHECK(zip->entries[0].name == "pkg/__init__.py");
  CHECK(zip->entries[0].method == kMethodDeflate);
  CHECK_FALSE(zip->entries[0].executable());
  CHECK(zip->entries[1].executable());
  CHECK((zip->entries[1].external_attributes >> 16) == 0100755);
  CHECK(member_content(*zip, zip->entries[0], "t.whl") == "print('hi')\n");
  CHECK(member_content(*zip, zip->entries[1], "t.whl") == std::string(5000, 'x'));
}

TEST_CASE("bytes outside the entries are refused") {
  TempZip z;
  auto data = z.bytes();
  Problems problems;
  SUBCASE("after the end record") {
    data.push_back(0);
    z.rewrite(data);
    CHECK_FALSE(z.read(problems));
    CHECK(problems.at(0).what == "truncated zip archive");
  }
  SUBCASE("before the first local header") {
    data.insert(data.begin(), 4, 0);
    z.rewrite(data);
    CHECK_FALSE(z.read(problems));
    CHECK(problems.at(0).what == "bytes before the first local header");
    CHECK(problems.at(0).found == "4 bytes in front of it");
  }
  SUBCASE("not a zip at all") {
    z.rewrite(std::vector<uint8_t>(100, 'a'));
    CHECK_FALSE(z.read(problems));
    CHECK(problems.at(0).what == "not a zip archive");
  }
}

TEST_CASE("central directory and local header must agree") {
  TempZip z;
  auto data = z.bytes();
  size_t at = central_header(data, 1);
  data[at + 16] ^= 0xFF;  // CRC-32
  z.rewrite(data);
  Problems problems;
  CHECK_FALSE(z.read(problems));
  REQUIRE(!problems.empty());
  CHECK(problems[0].member == "pkg/tool");
  CHECK(problems[0].what.find("CRC-32") != std::string::npos);
}

TEST_CASE("a declared size that lies stops inflating at the claim") {
  TempZip z;
  auto data = z.bytes();
  // Claim 10 bytes for the 5000-byte member, in both headers.
  size_t central = central_header(data, 1);
  uint64_t local = ByteView(data).u32(central + 42);
  for (size_t field : {central + 24, static_cast<size_t>(local + 22)}) {
    data[field] = 10;
    data[field + 1] = data[field + 2] = data[field + 3] = 0;
  }
  z.rewrite(data);
  Problems problems;
  auto zip = z.read(problems);
  REQUIRE(zip);
  size_t delivered = 0;
  auto problem = stream_member(
      *zip, zip->entries[1],
      [&](std::span<const uint8_t> c) {
        delivered += c.size();
        return true;
      },
      "t.whl", [&] { delivered = 0; });
  REQUIRE(problem);
  CHECK(problem->what == "more data than the declared uncompressed size");
  CHECK(delivered <= 10);
}

// 3 MiB of letters from a seeded generator: deflate shrinks it little, so it spans many buffers.
static std::string poorly_compressible_text(unsigned seed) {
  std::mt19937 random(seed);
  std::string text;
  for (int i = 0; i < 3 << 20; ++i) text += static_cast<char>('a' + random() % 40);
  return text;
}

// A temporary zip written by ZipWriter with these generated members, in order; its path.
static std::string generated_zip(const std::vector<std::pair<std::string, std::string>>& members) {
  char name[] = "/tmp/wm_unit_XXXXXX";
  int fd = mkstemp(name);
  File out(fd);
  ZipWriter w(out, dos_time_from_epoch(1700000000));
  for (const auto& [member, data] : members) REQUIRE(w.add_generated(member, as_bytes(data), false));
  REQUIRE(w.finish());
  return name;
}

TEST_CASE("a sink that stops early ends the pass at once, without a problem and without the end checks") {
  // 3 MB of poorly compressible text inflates in several chunks; its CRC-32 is wrong in both headers, which
  // only a pass to the end finds.
  const std::string big = poorly_compressible_text(11);
  const std::string path = generated_zip({{"big.txt", big}});
  std::vector<uint8_t> data;
  {
    std::ifstream in(path, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t central = central_header(data, 0);
  const size_t local = ByteView(data).u32(central + 42);
  data[central + 16] ^= 0xFF;
  data[local + 14] ^= 0xFF;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  Problems problems;
  auto zip = read_zip(path, "t.whl", problems);
  std::remove(path.c_str());
  REQUIRE(zip);
  size_t calls = 0, bytes = 0;
  auto whole = stream_member(
      *zip, zip->entries[0],
      [&](std::span<const uint8_t> c) {
        ++calls;
        bytes += c.size();
        return true;
      },
      "t.whl", [&] { calls = bytes = 0; });
  REQUIRE(whole);
  CHECK(whole->what == "CRC-32 mismatch");
  CHECK(calls > 1);
  CHECK(bytes == big.size());
  calls = bytes = 0;
  auto stopped = stream_member(
      *zip, zip->entries[0],
      [&](std::span<const uint8_t> c) {
        ++calls;
        bytes += c.size();
        return false;
      },
      "t.whl", [&] { calls = bytes = 0; });
  CHECK_FALSE(stopped);
  CHECK(calls == 1);
  CHECK(bytes < big.size());
}

TEST_CASE("unsafe names") {
  CHECK(unsafe_name_reason("pkg/mod.py").empty());
  CHECK(unsafe_name_reason("pkg/").empty());
  CHECK(unsafe_name_reason("") == "an empty name");
  CHECK(unsafe_name_reason("/etc/passwd") == "an absolute name");
  CHECK(unsafe_name_reason("C:/x") == "a name that starts with a drive letter");
  CHECK(unsafe_name_reason("a\\b") == "a backslash in the name");
  CHECK(unsafe_name_reason("a/../b") == "a '..' segment");
  CHECK(unsafe_name_reason("./a") == "a '.' segment");
  CHECK(unsafe_name_reason("a//b") == "an empty path segment");
  CHECK(unsafe_name_reason(std::string("a\x01", 2)) == "a control character in the name");
  CHECK(unsafe_name_reason("caf\xc3\xa9.py").empty());
  CHECK(unsafe_name_reason("caf\xe9.py") == "a name that is not valid UTF-8");
  CHECK(unsafe_name_reason("\xc0\xaf") == "a name that is not valid UTF-8");  // overlong '/'
}

TEST_CASE("SOURCE_DATE_EPOCH becomes a DOS timestamp in UTC, clamped to 1980") {
  DosTime t = dos_time_from_epoch(1700000000);  // 2023-11-14 22:13:20 UTC
  CHECK(t.date == ((2023 - 1980) << 9 | 11 << 5 | 14));
  CHECK(t.time == (22 << 11 | 13 << 5 | 10));
  DosTime early = dos_time_from_epoch(0);
  CHECK(early.date == DosTime{}.date);
  CHECK(early.time == 0);
}

TEST_CASE("zip: a generated member larger than the writer's buffer, its header rewritten with the compressed size") {
  // 3 MB of poorly compressible text deflates through many 256 KiB buffers; the local header,
  // written before the data, must end up with the sizes the central directory has (read_zip
  // compares them), and the member after it must start where the data ends.
  const std::string big = poorly_compressible_text(7);
  const std::string path = generated_zip({{"a/RECORD", big}, {"b.py", "x = 1\n"}});
  Problems problems;
  auto zip = read_zip(path, "gen.whl", problems);
  std::remove(path.c_str());
  REQUIRE_MESSAGE(zip, (problems.empty() ? "" : problems.front().what));
  REQUIRE(zip->entries.size() == 2);
  CHECK(zip->entries[0].compressed_size > (1u << 18));
  CHECK(zip->entries[0].compressed_size < big.size());
  CHECK(member_content(*zip, zip->entries[0], "t.whl") == big);
  CHECK(member_content(*zip, zip->entries[1], "t.whl") == "x = 1\n");
}

TEST_CASE("name clashes: case, normalisation, file and directory, one spelling per directory") {
  auto kinds = [](const std::vector<std::string>& names) {
    std::vector<NameClash::Kind> out;
    for (const NameClash& c : find_name_clashes(names)) out.push_back(c.kind);
    return out;
  };
  using K = NameClash::Kind;
  CHECK(kinds({"pkg/a.py", "pkg/b.py", "pkg/"}).empty());
  CHECK(kinds({"pkg/a.py", "pkg/a.py"}) == std::vector<K>{K::duplicate});
  CHECK(kinds({"pkg/A.py", "pkg/a.py"}) == std::vector<K>{K::case_only});
  CHECK(kinds({"pkg/caf\xc3\xa9.py", "pkg/cafe\xcc\x81.py"}) == std::vector<K>{K::normalization});
  CHECK(kinds({"pkg/x", "pkg/x/y.py"}) == std::vector<K>{K::file_and_directory});
  CHECK(kinds({"pkg/x", "pkg/x/"}) == std::vector<K>{K::file_and_directory});
  CHECK(kinds({"pkg/a.py", "PKG/"}) == std::vector<K>{K::case_only});  // one spelling per directory
  CHECK(kinds({"pkg/a.py", "PKG/b.py", "Pkg/c.py"}).size() == 1);      // reported once per directory
}

TEST_CASE("name clashes: the sorted finder agrees with a check of every pair") {
  // Random names over segments that differ in case and normalisation, some of them directory
  // entries: the finder reports a clash exactly where some pair of names clashes, and every
  // clash it reports is one.
  // "a-b" and "a.b" sort between a file "a" and the names under a directory "a/".
  const std::vector<std::string> segments = {"a",           "A",   "b", "a-b", "a.b", "caf\xc3\xa9", "cafe\xcc\x81",
                                             "CAF\xc3\x89", "x.py"};
  auto folded = [](std::string_view name) { return fold_case(std::string(name)); };
  // The directories of a name: every prefix before a '/'.
  auto dirs = [](std::string_view name) {
    std::vector<std::string_view> out;
    for (size_t at = name.find('/'); at != std::string_view::npos; at = name.find('/', at + 1))
      out.push_back(name.substr(0, at));
    return out;
  };
  auto pair_clashes = [&](std::string_view a, std::string_view b) {
    const bool a_dir = a.ends_with('/'), b_dir = b.ends_with('/');
    if (a == b) return true;
    if (!a_dir && !b_dir && folded(a) == folded(b)) return true;
    for (auto [file, other] : {std::pair(a, b), std::pair(b, a)})
      if (!file.ends_with('/') && folded(other).starts_with(folded(file) + "/")) return true;
    for (std::string_view da : dirs(a))
      for (std::string_view db : dirs(b))
        if (da != db && folded(da) == folded(db)) return true;
    return false;
  };
  std::mt19937 random(12345);
  int with_clash = 0;
  for (int round = 0; round < 1000; ++round) {
    std::vector<std::string> names;
    const int count = 2 + static_cast<int>(random() % 6);
    for (int n = 0; n < count; ++n) {
      std::string name;
      const int depth = 1 + static_cast<int>(random() % 3);
      for (int d = 0; d < depth; ++d) name += (d ? "/" : "") + segments[random() % segments.size()];
      if (random() % 4 == 0) name += "/";
      names.push_back(name);
    }
    bool expected = false;
    for (size_t i = 0; i < names.size(); ++i)
      for (size_t j = i + 1; j < names.size(); ++j) expected = expected || pair_clashes(names[i], names[j]);
    const auto clashes = find_name_clashes(names);
    std::string shown;
    for (const std::string& name : names) shown += name + " | ";
    CHECK_MESSAGE(clashes.empty() != expected, shown);
    with_clash += expected;
    for (const NameClash& c : clashes) {
      CHECK_MESSAGE(c.name != c.other, shown);
      CHECK_MESSAGE(pair_clashes(names[c.name], names[c.other]), shown);
    }
  }
  CHECK(with_clash > 250);  // both outcomes well represented
  CHECK(with_clash < 750);
}

TEST_CASE("name clashes are found in time linear in the names' length") {
  // 1,000 names 2,000 directories deep: every prefix folded separately would be quadratic.
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += "a/";
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back(deep + "f" + std::to_string(i));
  names.push_back(deep + "F1");
  auto clashes = find_name_clashes(names);
  REQUIRE(clashes.size() == 1);
  CHECK(clashes[0].kind == NameClash::Kind::case_only);
}

TEST_CASE("zip: a central directory larger than the reader's window, entries across its edges") {
  // 6,000 entries of ~250-byte names: a directory of ~1.8 MB, read a MiB at a time, so entries
  // straddle the windows' ends.
  char name[] = "/tmp/wm_unit_XXXXXX";
  int fd = mkstemp(name);
  const std::string path = name;
  std::vector<std::string> names;
  {
    File out(fd);
    ZipWriter w(out, dos_time_from_epoch(1700000000));
    for (int i = 0; i < 6000; ++i) {
      names.push_back("pkg/" + std::string(240, static_cast<char>('a' + i % 26)) + "_" + std::to_string(i) + ".py");
      REQUIRE(w.add_generated(names.back(), as_bytes(std::to_string(i)), false));
    }
    REQUIRE(w.finish());
  }
  Problems problems;
  auto zip = read_zip(path, "big.whl", problems);
  std::remove(path.c_str());
  REQUIRE_MESSAGE(zip, (problems.empty() ? "" : problems.front().what));
  REQUIRE(zip->entries.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(zip->entries[i].name == names[i]);
    CHECK(zip->entries[i].uncompressed_size == std::to_string(i).size());
  }
}

TEST_CASE("zip: names Windows cannot create as written") {
  for (const char* name :
       {"pkg/__init__.py::$DATA", "pkg/nul", "pkg/NUL.txt", "pkg/con .py", "pkg/Com9.py", "lpt\xc2\xb9.py", "pkg/a.",
        "pkg/a ", "pkg/dir./x.py", "pkg/a<b", "pkg/a\"b", "pkg/a*b", "pkg/a?b", "pkg/a|b"})
    CHECK_MESSAGE(!windows_name_reason(name).empty(), name);
  for (const char* name : {"pkg/__init__.py", "pkg/nullable.py", "pkg/console.py", "pkg/com10.py", "pkg/lpt0x.py",
                           "pkg/a.b.c", "pkg/sub/", "pkg/.hidden", "pkg/auxiliary/x.py"})
    CHECK_MESSAGE(windows_name_reason(name).empty(), name);
  CHECK(windows_name_reason("pkg/__init__.py::$DATA").find("NTFS alternate data stream") != std::string::npos);
}
