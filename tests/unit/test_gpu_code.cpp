// The fat binary walker on containers built here byte by byte (the layout nvcc 13 writes:
// tests/integration/merge/test_gpu_code.py checks real ones against cuobjdump), fed whole and in every
// chunking; and the sm_arch rule on code sets.
#include "merger/base/bytes.hpp"
#include "merger/gpu_code.hpp"
#include "merger/zip/zip_writer.hpp"

#include <doctest/doctest.h>

#include <stdlib.h>
#include <cstdio>
#include <random>

using namespace wm;

namespace {

struct Entry {
  uint16_t kind;  // 1 PTX, 2 ELF
  uint32_t arch;
  uint64_t flags = 0x11;
  size_t payload = 24;
  uint32_t header = 64;
};

std::vector<uint8_t> container(const std::vector<Entry>& entries) {
  std::vector<uint8_t> body;
  for (const Entry& e : entries) {
    const size_t start = body.size();
    put16(body, e.kind);
    put16(body, 0x0101);
    put32(body, e.header);
    put64(body, e.payload);
    put32(body, static_cast<uint32_t>(e.payload));  // payload size
    put32(body, 0);
    put32(body, 0);
    put32(body, e.arch);  // at 28
    put32(body, 0);
    put32(body, 0);
    put64(body, e.flags);  // at 40
    body.resize(start + e.header, 0);
    body.resize(body.size() + e.payload, 0xAB);
  }
  std::vector<uint8_t> out;
  put32(out, 0xBA55ED50);
  put16(out, 1);
  put16(out, 16);
  put64(out, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// Writes the `n` low bytes of `v` at `at`, little-endian.
void put(std::vector<uint8_t>& b, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

GpuCodeScan walk(const std::vector<uint8_t>& bytes, size_t chunk = SIZE_MAX) {
  FatbinWalker w(bytes.size());
  for (size_t at = 0; at < bytes.size(); at += std::min(chunk, bytes.size() - at))
    w.feed(std::span<const uint8_t>(bytes).subspan(at, std::min(chunk, bytes.size() - at)));
  return std::move(w).finish();
}

std::vector<std::string> names(const std::set<GpuCode>& code) {
  std::vector<std::string> out;
  for (const GpuCode& c : code) out.push_back(c.str());
  return out;
}

GpuCode sass(uint16_t arch, char suffix = 0) { return {GpuCode::Kind::sass, arch, suffix}; }
GpuCode ptx(uint16_t arch, char suffix = 0) { return {GpuCode::Kind::ptx, arch, suffix}; }

}  // namespace

TEST_CASE(
    "fat binaries: entries of two containers, arch-specific and family flags, longer entry headers, any chunking") {
  std::vector<uint8_t> bytes = container({{2, 75}, {2, 86}, {2, 90, 0x100011}, {2, 100, 0x1200011, 40, 112}});
  const std::vector<uint8_t> second = container({{1, 80, 0x8011, 17, 80}, {2, 120, 0x1000011, 8, 96}});
  bytes.resize(bytes.size() + 8, 0);  // padding between containers
  bytes.insert(bytes.end(), second.begin(), second.end());
  const std::vector<std::string> expected = {"sm_75", "sm_86", "sm_90a", "sm_100f", "sm_120", "compute_80"};
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{64}, size_t{100}, SIZE_MAX}) {
    CAPTURE(chunk);
    GpuCodeScan scan = walk(bytes, chunk);
    CHECK(scan.unreadable == "");
    CHECK(names(scan.code) == expected);
  }
}

TEST_CASE("fat binaries: what does not hold together is unreadable, not guessed") {
  const std::vector<uint8_t> good = container({{2, 90}, {1, 90}});
  CHECK(walk(good).unreadable.empty());
  SUBCASE("truncated inside an entry") {
    std::vector<uint8_t> cut(good.begin(), good.end() - 5);
    // The container still claims its old size: past the range.
    CHECK(walk(cut).unreadable.find("fat binary of") != std::string::npos);
  }
  SUBCASE("an entry past its container") {
    std::vector<uint8_t> bad = good;
    bad[16 + 8] = 0xFF;  // payload size of the first entry
    bad[16 + 9] = 0xFF;
    CHECK(walk(bad).unreadable.find("an entry of") != std::string::npos);
  }
  SUBCASE("an entry header shorter than its fields, or huge") {
    for (uint8_t size : {uint8_t{8}, uint8_t{0}}) {
      std::vector<uint8_t> bad = good;
      bad[16 + 4] = size;
      CHECK(walk(bad).unreadable.find("entry header") != std::string::npos);
    }
    std::vector<uint8_t> bad = good;
    bad[16 + 6] = 0x10;  // 1 MiB
    CHECK(walk(bad).unreadable.find("entry header") != std::string::npos);
  }
  SUBCASE("an unknown kind, an architecture no GPU has, both suffix flags") {
    CHECK(walk(container({{16, 90}})).unreadable.find("kind 16") != std::string::npos);
    CHECK(walk(container({{2, 0}})).unreadable.find("architecture 0") != std::string::npos);
    CHECK(walk(container({{2, 4000}})).unreadable.find("architecture 4000") != std::string::npos);
    CHECK(walk(container({{2, 90, 0x300011}})).unreadable.find("both") != std::string::npos);
  }
  SUBCASE("another version, a bad magic after the first container, trailing garbage") {
    std::vector<uint8_t> bad = good;
    bad[4] = 2;
    CHECK(walk(bad).unreadable.find("version 2") != std::string::npos);
    std::vector<uint8_t> two = good;
    two.insert(two.end(), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    CHECK(walk(two).unreadable.find("no fat binary header") != std::string::npos);
    std::vector<uint8_t> tail = good;
    tail.insert(tail.end(), {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});  // zero padding only
    CHECK(walk(tail).unreadable.empty());
    tail.back() = 1;
    CHECK(!walk(tail).unreadable.empty());
  }
  SUBCASE("a container larger than the range") {
    std::vector<uint8_t> bad = good;
    bad[15] = 0x7F;  // fat size near 2^63
    CHECK(walk(bad).unreadable.find("fat binary of") != std::string::npos);
  }
}

TEST_CASE("fat binaries: random bytes after a valid header never crash and are unreadable or read") {
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bytes = container({{2, 90}, {1, 80}});
    const size_t flips = 1 + random() % 4;
    for (size_t i = 0; i < flips; ++i) bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
    GpuCodeScan scan = walk(bytes, 1 + random() % 50);
    if (!scan.unreadable.empty()) continue;
    for (const GpuCode& c : scan.code) CHECK((c.arch >= 10 && c.arch <= 999));
  }
}

namespace {

std::optional<std::set<GpuCode>> recorded(const std::vector<uint8_t>& bytes, const std::vector<ByteRange>& ranges,
                                          size_t chunk = SIZE_MAX) {
  FatbinRecorder r(bytes.size());
  for (size_t at = 0; at < bytes.size(); at += std::min(chunk, bytes.size() - at))
    r.feed(std::span<const uint8_t>(bytes).subspan(at, std::min(chunk, bytes.size() - at)));
  return r.code_in(ranges);
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& bytes, const ByteRange& r) {
  return {bytes.begin() + static_cast<ptrdiff_t>(r.offset), bytes.begin() + static_cast<ptrdiff_t>(r.offset + r.size)};
}

}  // namespace

TEST_CASE("fat binary recorder: ranges learnt afterwards read as FatbinWalker reads them, in any chunking") {
  std::vector<uint8_t> bytes(24, 0x11);  // what comes before, 8-aligned
  const ByteRange none{0, 0};
  const std::vector<uint8_t> a = container({{2, 75}, {2, 90, 0x100011}}), b = container({{2, 120}, {1, 120}});
  const uint64_t start = bytes.size();
  bytes.insert(bytes.end(), a.begin(), a.end());
  bytes.resize(bytes.size() + 16, 0);  // two words of padding
  bytes.insert(bytes.end(), b.begin(), b.end());
  const ByteRange both{start, bytes.size() - start};
  bytes.resize(bytes.size() + 40, 0x22);
  const std::vector<std::string> expected = {"sm_75", "sm_90a", "sm_120", "compute_120"};
  REQUIRE(names(walk(slice(bytes, both)).code) == expected);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{8}, size_t{13}, size_t{64}, SIZE_MAX}) {
    CAPTURE(chunk);
    auto code = recorded(bytes, {both}, chunk);
    REQUIRE(code);
    CHECK(names(*code) == expected);
    CHECK(recorded(bytes, {none}, chunk) == std::set<GpuCode>{});
    CHECK(names(*recorded(bytes, {{start, a.size()}}, chunk)) == std::vector<std::string>{"sm_75", "sm_90a"});
    // Padding first, a range ending inside a fat binary or inside a word: walked by the caller.
    CHECK_FALSE(recorded(bytes, {{start + a.size(), both.size - a.size()}}, chunk));
    CHECK_FALSE(recorded(bytes, {{start, both.size - 8}}, chunk));
    CHECK_FALSE(recorded(bytes, {{start, a.size() + 4}}, chunk));
    CHECK_FALSE(recorded(bytes, {{0, start + a.size()}}, chunk));  // bytes that are no fat binary first
  }
}

TEST_CASE("fat binary recorder: whatever it puts together is what FatbinWalker reads, over random files") {
  std::mt19937 random(11);
  size_t together = 0, walked = 0;
  for (int round = 0; round < 4000; ++round) {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> starts, ends;
    const size_t parts = 1 + random() % 5;
    for (size_t i = 0; i < parts; ++i) {
      if (random() % 3 == 0) bytes.resize(bytes.size() + 8 * (random() % 3), random() % 4 ? 0 : 0x33);
      if (random() % 8 == 0) bytes.resize(bytes.size() + random() % 8, 0);  // off the 8-byte grid
      starts.push_back(bytes.size());
      const size_t payload = random() % 6 ? 8 * (random() % 5) : random() % 40;
      std::vector<uint8_t> c =
          container({{2, static_cast<uint32_t>(50 + random() % 70)}, {1, 80, 0x11, payload, random() % 2 ? 64u : 72u}});
      if (random() % 6 == 0) c[random() % c.size()] = static_cast<uint8_t>(random());
      bytes.insert(bytes.end(), c.begin(), c.end());
      ends.push_back(bytes.size());
    }
    bytes.resize(bytes.size() + random() % 24, 0);
    const size_t first = random() % starts.size(), last = first + random() % (starts.size() - first);
    const uint64_t end = random() % 4 ? ends[last] + 8 * (random() % 2) : first + random() % bytes.size();
    const ByteRange range{starts[first],
                          std::min<uint64_t>(std::max(end, starts[first]), bytes.size()) - starts[first]};
    auto code = recorded(bytes, {range}, 1 + random() % 97);
    GpuCodeScan truth = walk(slice(bytes, range));
    if (!code) {
      ++walked;
      continue;
    }
    ++together;
    CAPTURE(round);
    CHECK(truth.unreadable == "");
    CHECK(names(*code) == names(truth.code));
  }
  // Both ways are taken, so both are checked.
  CHECK(together > 500);
  CHECK(walked > 500);
}

TEST_CASE("fat binary recorder: past its bounds it puts nothing together, in linear time") {
  SUBCASE("more fat binaries open at once than it walks") {
    // Each container's payload is the next container: all open together when fed in small chunks.
    auto nested = [](size_t depth) {
      std::vector<uint8_t> bytes = container({{2, 90}});
      for (size_t i = 0; i < depth; ++i) {
        std::vector<uint8_t> outer = container({{2, 80, 0x11, bytes.size()}});
        std::copy(bytes.begin(), bytes.end(), outer.end() - static_cast<ptrdiff_t>(bytes.size()));
        bytes = outer;
      }
      return bytes;
    };
    const std::vector<uint8_t> within = nested(FatbinRecorder::kMaxOpenFatbins - 1);
    const std::vector<uint8_t> past = nested(FatbinRecorder::kMaxOpenFatbins);
    REQUIRE(walk(past).unreadable == "");
    CHECK(recorded(within, {{0, within.size()}}, 64) == walk(within).code);
    CHECK_FALSE(recorded(past, {{0, past.size()}}, 64));
    CHECK(recorded(past, {{0, past.size()}}) == walk(past).code);  // whole, each walk ends at once
  }
  SUBCASE("a header in every entry that starts a fat binary spanning the entries after it") {
    // Bytes 48..63 of each entry header, which the format leaves unused, hold a fat binary header
    // whose entries are the entries that follow: n entries would make n walks of n/2 entries.
    const size_t n = 4000;
    std::vector<Entry> entries(n, Entry{2, 90, 0x11, 0});
    std::vector<uint8_t> bytes = container(entries);
    for (size_t k = 0; k + 1 < n; ++k) {
      const size_t at = 16 + 64 * k + 48;
      put(bytes, at, 0xBA55ED50, 4);
      put(bytes, at + 4, 1, 2);
      put(bytes, at + 6, 16, 2);
      put(bytes, at + 8, bytes.size() - (at + 16), 8);
    }
    REQUIRE(names(walk(bytes).code) == std::vector<std::string>{"sm_90"});
    CHECK_FALSE(recorded(bytes, {{0, bytes.size()}}));
  }
}

namespace {

struct Section {
  std::string name;
  std::vector<uint8_t> data;
  uint32_t type = 1;               // PROGBITS
  std::optional<uint64_t> offset;  // where its header says it lies, when not where its data is
};

// A 64-bit little-endian shared object: the sections' data from byte 64 on, then `.shstrtab`, `gap` zero
// bytes and the section header table: the null section, the sections (in reverse with `reversed`),
// `.shstrtab` last.
std::vector<uint8_t> elf_file(const std::vector<Section>& sections, size_t gap = 0, bool reversed = false) {
  std::vector<uint8_t> b(64, 0);
  std::string names(1, '\0');
  std::vector<uint64_t> offsets, name_at;
  for (const Section& s : sections) {
    offsets.push_back(b.size());
    b.insert(b.end(), s.data.begin(), s.data.end());
    name_at.push_back(names.size());
    names += s.name + '\0';
  }
  const uint64_t own_name = names.size();
  names += std::string(".shstrtab") + '\0';
  const size_t names_at = b.size();
  b.insert(b.end(), names.begin(), names.end());
  b.resize(b.size() + gap, 0);
  while (b.size() % 8) b.push_back(0);
  const size_t table = b.size(), count = sections.size() + 2;
  b.resize(table + count * 64, 0);
  for (size_t i = 0; i < sections.size(); ++i) {
    const size_t at = table + (reversed ? sections.size() - i : i + 1) * 64;
    put(b, at, name_at[i], 4);
    put(b, at + 4, sections[i].type, 4);
    put(b, at + 24, sections[i].offset.value_or(offsets[i]), 8);
    put(b, at + 32, sections[i].data.size(), 8);
  }
  const size_t last = table + (count - 1) * 64;
  put(b, last, own_name, 4);
  put(b, last + 4, 3, 4);  // STRTAB
  put(b, last + 24, names_at, 8);
  put(b, last + 32, names.size(), 8);
  const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
  std::copy(std::begin(ident), std::end(ident), b.begin());
  put(b, 16, 3, 2);   // ET_DYN
  put(b, 18, 62, 2);  // x86-64
  put(b, 40, table, 8);
  put(b, 52, 64, 2);
  put(b, 58, 64, 2);
  put(b, 60, count, 2);
  put(b, 62, count - 1, 2);
  return b;
}

struct Scanned {
  std::optional<GpuCodeScan> scan;
  std::optional<Problem> problem;
};

// scan_gpu_code of `data`, the one member of a zip written here.
Scanned scan_member(const std::vector<uint8_t>& data, int* further_passes = nullptr) {
  char name[] = "/tmp/wm_unit_XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  const std::string path = name;
  {
    File out(fd);
    ZipWriter w(out, DosTime{});
    REQUIRE(w.add_generated("pkg/k.so", data, false));
    REQUIRE(w.finish());
  }
  Problems problems;
  auto zip = read_zip(path, "t.whl", problems);
  std::remove(path.c_str());
  REQUIRE(zip);
  Scanned out;
  out.scan = scan_gpu_code(*zip, zip->entries[0], "t.whl", out.problem, further_passes);
  return out;
}

}  // namespace

TEST_CASE("ELF files: every PROGBITS section named .nv_fatbin is read, in any table order, wherever the names lie") {
  const std::vector<uint8_t> a = container({{2, 80}, {1, 80}}), b = container({{2, 90, 0x100011}});
  const std::vector<uint8_t> other = container({{2, 75}});
  // Named otherwise, or NOBITS: no fat binary section, though their bytes are fat binaries.
  const std::vector<Section> sections = {
      {".nv_fatbin", a}, {".nv_fatbin2", other}, {".nv_fatbin", other, 8}, {".nv_fatbin", b}};
  // 300 KiB between the names and the table: past what the first pass keeps, so a second pass fetches them.
  for (size_t gap : {size_t{0}, size_t{300} << 10}) {
    for (bool reversed : {false, true}) {
      CAPTURE(gap);
      CAPTURE(reversed);
      Scanned s = scan_member(elf_file(sections, gap, reversed));
      CHECK_FALSE(s.problem);
      REQUIRE(s.scan);
      CHECK(s.scan->unreadable == "");
      CHECK(names(s.scan->code) == std::vector<std::string>{"sm_80", "sm_90a", "compute_80"});
    }
  }
  Scanned none = scan_member(elf_file({{".text", other}, {".nv_fatbin2", a}}));
  REQUIRE(none.scan);
  CHECK(none.scan->unreadable == "");
  CHECK(none.scan->code.empty());
}

TEST_CASE("ELF files: the pass that streams the member reads them; one more only for what it did not keep") {
  const std::vector<uint8_t> a = container({{2, 80}, {1, 80}}), b = container({{2, 90, 0x100011}});
  std::vector<uint8_t> padded = a;
  padded.resize(a.size() + 8, 0);
  padded.insert(padded.end(), b.begin(), b.end());
  auto passes = [](const std::vector<uint8_t>& file) {
    int further = -1;
    Scanned s = scan_member(file, &further);
    REQUIRE(s.scan);
    CHECK(s.scan->unreadable == "");
    CHECK(names(s.scan->code) == std::vector<std::string>{"sm_80", "sm_90a", "compute_80"});
    return further;
  };
  CHECK(passes(elf_file({{".nv_fatbin", padded}})) == 0);
  CHECK(passes(elf_file({{".nv_fatbin", a}, {".text", std::vector<uint8_t>(64, 1)}, {".nv_fatbin", b}})) == 0);
  CHECK(passes(elf_file({{".nv_fatbin", padded}}, 300 << 10)) == 0);  // names far before the table
  // Off the 8-byte grid: the recorder has nothing there, the section is walked.
  CHECK(passes(elf_file({{".pad", {1, 2, 3}}, {".nv_fatbin", padded}})) == 1);
  // More ".nv_fatbin" strings than are kept: the names are read.
  std::vector<uint8_t> strings;
  for (size_t i = 0; i <= GpuCodeScanner::NameHits::kMaxNameHits; ++i)
    strings.insert(strings.end(), {'.', 'n', 'v', '_', 'f', 'a', 't', 'b', 'i', 'n', 0});
  strings.resize((strings.size() + 7) / 8 * 8, 0);
  CHECK(passes(elf_file({{".strings", strings}, {".nv_fatbin", padded}})) == 1);
  CHECK(passes(elf_file({{".strings", strings}, {".pad", {1, 2, 3}}, {".nv_fatbin", padded}})) == 2);
}

TEST_CASE("ELF files: the name .nv_fatbin is found wherever chunks split it, each once") {
  std::vector<uint8_t> bytes(5, 'x');
  const std::string name(".nv_fatbin\0", 11);
  std::vector<uint64_t> expected;
  for (size_t gap : {0, 1, 10, 3}) {
    bytes.resize(bytes.size() + gap, '.');
    expected.push_back(bytes.size());
    bytes.insert(bytes.end(), name.begin(), name.end());
  }
  bytes.insert(bytes.end(), name.begin(), name.end() - 1);  // no NUL: no name
  for (size_t chunk = 1; chunk <= 24; ++chunk) {
    CAPTURE(chunk);
    GpuCodeScanner::NameHits hits;
    for (size_t at = 0; at < bytes.size(); at += chunk)
      hits.feed(std::span<const uint8_t>(bytes).subspan(at, std::min(chunk, bytes.size() - at)));
    CHECK(hits.at == expected);
  }
}

TEST_CASE("ELF files: .nv_fatbin sections outside the file, overlapping or unreadable give no code, saying why") {
  const std::vector<uint8_t> a = container({{2, 80}}), b = container({{2, 90}});
  auto unreadable = [](const std::vector<Section>& sections) {
    Scanned s = scan_member(elf_file(sections));
    CHECK_FALSE(s.problem);
    REQUIRE(s.scan);
    CHECK(s.scan->code.empty());
    return s.scan->unreadable;
  };
  CHECK(unreadable({{".nv_fatbin", a}, {".nv_fatbin", b, 1, uint64_t{1} << 40}}) ==
        "its .nv_fatbin section lies outside the file");
  CHECK(unreadable({{".nv_fatbin", a}, {".nv_fatbin", b, 1, 64 + 8}}) == "its .nv_fatbin sections overlap");
  std::vector<uint8_t> cut(b.begin(), b.end() - 8);  // the container claims more than its section holds
  CHECK(unreadable({{".nv_fatbin", a}, {".nv_fatbin", cut}}).starts_with(".nv_fatbin: a fat binary of"));
}

TEST_CASE("sm_arch: one value per major, the lowest minor every file covers") {
  using Files = std::vector<std::pair<std::string, std::set<GpuCode>>>;
  SUBCASE("SASS of a major covers its later minors; PTX compute_X0 every minor of X") {
    SmArch a =
        sm_arch_values(Files{{"a.so", {sass(75), sass(80), sass(86), sass(90), sass(100), sass(120), ptx(120)}}});
    CHECK(a.values == std::vector<std::string>{"120_real", "100_real", "90_real", "80_real", "75_real"});
    CHECK(a.notes.empty());
  }
  SUBCASE("files are intersected: a GPU gets the build only where every file has code for it") {
    SmArch a =
        sm_arch_values(Files{{"a.so", {sass(75), sass(86), sass(90)}}, {"b.so", {sass(80), sass(90), sass(120)}}});
    CHECK(a.values == std::vector<std::string>{"90_real", "86_real"});
  }
  SUBCASE("arch-specific code and PTX of a later minor add no value; only PTX names _virtual") {
    SmArch a = sm_arch_values(Files{{"a.so", {sass(90, 'a'), sass(100, 'f'), ptx(86), ptx(80)}}});
    CHECK(a.values == std::vector<std::string>{"100_real", "80_virtual"});
    // PTX of 8.0 would also run on majors 9, 11 and 12, which have no value.
    REQUIRE(a.notes.size() == 1);
    CHECK(a.notes[0].find("compute_80") != std::string::npos);
    CHECK(a.notes[0].find("major 9, 11, 12") != std::string::npos);
  }
  SUBCASE("a file with only arch-specific code leaves no value, and says so") {
    SmArch a = sm_arch_values(Files{{"a.so", {sass(90)}}, {"fa3.so", {sass(90, 'a')}}});
    CHECK(a.values.empty());
    CHECK(a.notes.size() == 2);
  }
  SUBCASE("majors outside the provider's catalog (5 to 12) give no value") {
    SmArch a = sm_arch_values(Files{{"a.so", {sass(35), sass(130), sass(50)}}});
    CHECK(a.values == std::vector<std::string>{"50_real"});
  }
  SUBCASE("SASS and PTX at the same minor: _real") {
    SmArch a = sm_arch_values(Files{{"a.so", {sass(90), ptx(90)}}, {"b.so", {ptx(90)}}});
    CHECK(a.values == std::vector<std::string>{"90_virtual"});
    SmArch b = sm_arch_values(Files{{"a.so", {sass(90), ptx(90)}}});
    CHECK(b.values == std::vector<std::string>{"90_real"});
  }
}

TEST_CASE("sm_arch claims: each value backed by the build's code, or refused") {
  using Files = std::vector<std::pair<std::string, std::set<GpuCode>>>;
  using Values = std::vector<std::string>;
  // sm_80 SASS and compute_90 PTX in every file: 8.0 .. 8.9 and 9.x run it.
  const SmArch code = sm_arch_values(Files{{"a.so", {sass(80), ptx(90)}}, {"b.so", {sass(80), sass(86), ptx(90)}}});
  REQUIRE(code.values == Values{"90_virtual", "80_real"});
  auto problem = [&](const Values& claimed) { return sm_arch_claim_problem(claimed, code, true); };
  SUBCASE("values the code backs, later minors of a backed major included") {
    CHECK_FALSE(problem(Values{"80_real", "86_real", "89_real", "90_virtual", "90_real", "95_real"}));
    CHECK_FALSE(problem(Values{}));
  }
  SUBCASE("a major or an earlier minor the code does not run on") {
    auto p = problem(Values{"80_real", "75_real"});
    REQUIRE(p);
    CHECK(p->found == "75_real");
    CHECK(p->what.find("GPUs 7.5 and later of major 7") != std::string::npos);
    CHECK(p->expected == "values the GPU code backs (90_virtual 80_real)");
    CHECK(problem(Values{"100_real"}));
    CHECK(problem(Values{"120_virtual"}));
  }
  SUBCASE("values of no form the provider matches") {
    for (const char* bad : {"86_virtual", "8_real", "86", "086_real", "130_real", "40_real", "86_real ", "x6_real"}) {
      auto p = problem(Values{bad});
      REQUIRE(p);
      CHECK(p->what == "nvidia :: sm_arch value of no form the provider matches");
    }
  }
  SUBCASE("no GPU code: any GPU runs the build; code no GPU runs whole: no claim backed") {
    CHECK_FALSE(sm_arch_claim_problem(Values{"120_real", "50_real"}, SmArch{}, false));
    const SmArch specific = sm_arch_values(Files{{"fa3.so", {sass(90, 'a')}}});
    REQUIRE(specific.values.empty());
    auto p = sm_arch_claim_problem(Values{"90_real"}, specific, true);
    REQUIRE(p);
    CHECK(p->expected == "values the GPU code backs (no GPU every file with GPU code runs on)");
  }
}
