#include "merger/format/elf.hpp"

#include <doctest/doctest.h>

#include <link.h>

#include <algorithm>
#include <fstream>
#include <iterator>

using namespace wm;

namespace {
// Feeds a real file through the scanner in odd-sized chunks, as streaming would.
std::optional<ElfInfo> scan(const std::string& path, size_t chunk) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> data{std::istreambuf_iterator<char>(in), {}};
  REQUIRE(!data.empty());
  ElfScanner s;
  for (size_t at = 0; at < data.size(); at += chunk)
    s.feed(std::span<const uint8_t>(data).subspan(at, std::min(chunk, data.size() - at)));
  std::vector<uint8_t> strings, versions;
  if (auto r = s.missing_strings()) strings.assign(data.begin() + r->offset, data.begin() + r->offset + r->size);
  if (auto r = s.missing_versions()) versions.assign(data.begin() + r->offset, data.begin() + r->offset + r->size);
  return s.finish(strings, nullptr, versions);
}

// Whether this executable is linked dynamically: it names a program interpreter (PT_INTERP).
// A static executable (static-pie too) has none and loads no shared library.
bool dynamically_linked() {
  bool interpreter = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* found) {
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_INTERP) *static_cast<bool*>(found) = true;
        return 1;  // the executable itself comes first
      },
      &interpreter);
  return interpreter;
}
}  // namespace

TEST_CASE("a system shared library's SONAME and needs") {
  for (size_t chunk : {size_t{1} << 20, size_t{4093}}) {
    auto info = scan("/lib/x86_64-linux-gnu/libz.so.1", chunk);
    REQUIRE(info);
    CHECK(info->shared_object);
    CHECK(info->soname == "libz.so.1");
    CHECK(std::find(info->needed.begin(), info->needed.end(), "libc.so.6") != info->needed.end());
  }
}

TEST_CASE("an executable without SONAME, needing libraries when linked dynamically and none when static") {
  auto info = scan("/proc/self/exe", 65536);
  REQUIRE(info);
  CHECK(info->soname.empty());
  if (dynamically_linked())
    CHECK_FALSE(info->needed.empty());
  else
    CHECK(info->needed.empty());
}

TEST_CASE("not ELF") {
  CHECK_FALSE(ElfScanner::has_magic(std::vector<uint8_t>{'P', 'K', 3, 4}));
  ElfScanner s;
  std::vector<uint8_t> junk(100, 0x7F);
  s.feed(junk);
  CHECK_FALSE(s.finish());
}

namespace {
void put(std::vector<uint8_t>& b, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A 64-bit little-endian shared object: the null section, `count - 2` PROGBITS sections named
// ".s", `.shstrtab` last, the section header table at the end. `extended_count` /
// `extended_names` write the gABI's extended numbering: e_shnum 0 with the count in section
// 0's sh_size, e_shstrndx SHN_XINDEX with the index in section 0's sh_link.
std::vector<uint8_t> elf_with_sections(size_t count, bool extended_count, bool extended_names) {
  std::vector<uint8_t> b(64, 0);
  const std::string names = std::string("\0.s\0.shstrtab\0", 14);
  const size_t names_at = b.size();
  b.insert(b.end(), names.begin(), names.end());
  while (b.size() % 8) b.push_back(0);
  const size_t table = b.size();
  b.resize(table + count * 64, 0);
  for (size_t i = 1; i < count; ++i) {
    const size_t at = table + i * 64;
    const bool last = i == count - 1;
    put(b, at, last ? 4 : 1, 4);      // sh_name
    put(b, at + 4, last ? 3 : 1, 4);  // sh_type
    put(b, at + 24, last ? names_at : 64, 8);
    put(b, at + 32, last ? names.size() : 0, 8);
  }
  const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
  std::copy(std::begin(ident), std::end(ident), b.begin());
  put(b, 16, 3, 2);   // ET_DYN
  put(b, 18, 62, 2);  // x86-64
  put(b, 40, table, 8);
  put(b, 52, 64, 2);
  put(b, 58, 64, 2);
  put(b, 60, extended_count ? 0 : count, 2);
  put(b, 62, extended_names ? 0xffff : count - 1, 2);
  if (extended_count) put(b, table + 32, count, 8);
  if (extended_names) put(b, table + 40, count - 1, 4);
  return b;
}

ElfSectionScanner sections_of(const std::vector<uint8_t>& file, size_t chunk, uint64_t window = 256 << 10) {
  ElfSectionScanner s(file.size(), window);
  for (size_t at = 0; at < file.size(); at += chunk)
    s.feed(std::span<const uint8_t>(file).subspan(at, std::min(chunk, file.size() - at)));
  return s;
}
}  // namespace

TEST_CASE("section header table: extended numbering read as readelf reads it, in any chunking") {
  for (size_t count : std::initializer_list<size_t>{3, 70000}) {  // 70000: more than e_shnum can hold, as readelf needs
    const auto plain = elf_with_sections(count, false, false);
    const auto both = elf_with_sections(count, true, true);
    for (size_t chunk : std::initializer_list<size_t>{1, 7, 64, 4096, size_t{1} << 30}) {
      if (count > 0xff00 && chunk < 64) continue;  // a 4 MiB table byte by byte: slow, not different
      CAPTURE(count);
      CAPTURE(chunk);
      // Past 0xff00 sections e_shnum and e_shstrndx cannot hold the numbers: both are extended.
      std::vector<std::vector<uint8_t>> files = {both};
      if (count < 0xff00) files = {elf_with_sections(count, true, false), elf_with_sections(count, false, true), both};
      for (const auto& file : files) {
        auto s = sections_of(file, chunk);
        REQUIRE(s.state() == ElfSectionScanner::State::read);
        CHECK(s.sections().size() == count);
        CHECK(s.names_index() == count - 1);
        CHECK(s.sections()[count - 1].type == 3);
      }
      if (count <= 0xff00) {
        auto s = sections_of(plain, chunk);
        REQUIRE(s.state() == ElfSectionScanner::State::read);
        CHECK(s.sections().size() == count);
      }
    }
  }
}

TEST_CASE(
    "section header table: no table, reserved or absurd numbers are told apart, bounded before holding anything") {
  using State = ElfSectionScanner::State;
  auto file = elf_with_sections(4, true, true);
  // e_shnum 0 and section 0's sh_size 0: no sections (the gABI), as readelf says.
  const size_t table = file.size() - 4 * 64;
  auto no_count = file;
  put(no_count, table + 32, 0, 8);
  CHECK(sections_of(no_count, 4096).state() == State::no_table);
  auto no_offset = file;
  put(no_offset, 40, 0, 8);
  CHECK(sections_of(no_offset, 4096).state() == State::no_table);

  auto absurd = file;
  put(absurd, table + 32, uint64_t{1} << 40, 8);
  auto s = sections_of(absurd, 4096);
  CHECK(s.state() == State::unreadable);
  CHECK(s.why_not() == "it has 1099511627776 sections (section 0's sh_size), more than the 262144 read");
  auto past_end = file;
  put(past_end, table + 32, 5, 8);
  s = sections_of(past_end, 4096);
  CHECK(s.state() == State::unreadable);
  CHECK(s.why_not().find("section 0's sh_size") != std::string::npos);
  CHECK(s.why_not().find("lies past its end") != std::string::npos);

  auto names_out = file;
  put(names_out, table + 40, 4, 4);
  s = sections_of(names_out, 4096);
  CHECK(s.state() == State::unreadable);
  CHECK(s.why_not() == "its section names index 4 is not below its 4 sections");
  auto reserved = elf_with_sections(4, false, false);
  put(reserved, 62, 0xff00, 2);
  s = sections_of(reserved, 4096);
  CHECK(s.state() == State::unreadable);
  CHECK(s.why_not() == "its section names index is 0xff00, a reserved index");
  auto truncated = elf_with_sections(4, false, false);
  truncated.resize(truncated.size() - 10);
  s = sections_of(truncated, 4096);
  CHECK(s.state() == State::unreadable);
  CHECK(s.why_not().find("lies past its end") != std::string::npos);
  auto wide = elf_with_sections(4, false, false);
  put(wide, 58, 40, 2);
  CHECK(sections_of(wide, 4096).why_not() == "its section header entries are 40 bytes, not 64");
  auto elf32 = elf_with_sections(4, false, false);
  elf32[4] = 1;
  CHECK(sections_of(elf32, 4096).state() == State::not_elf64);
}

TEST_CASE("the header: machine, class and byte order of a whole ELF header only") {
  auto libz = scan("/lib/x86_64-linux-gnu/libz.so.1", 4093);
  REQUIRE(libz);
  CHECK(libz->header == ElfHeader{62, 2, 1});
  auto header_of = [](std::vector<uint8_t> bytes) {
    ElfScanner s;
    s.feed(bytes);
    return s.header();
  };
  std::vector<uint8_t> big(64, 0);
  const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 2, 1};
  std::copy(std::begin(ident), std::end(ident), big.begin());
  big[18] = 0;
  big[19] = 22;  // S/390, big-endian
  big[23] = 1;   // e_version 1, big-endian
  CHECK(header_of(big) == ElfHeader{22, 2, 2});
  auto wrong_version = big;
  wrong_version[23] = 2;
  CHECK_FALSE(header_of(wrong_version));
  auto short_header = big;
  short_header.resize(60);  // a 64-bit header is 64 bytes
  CHECK_FALSE(header_of(short_header));
  // A placeholder that only starts with the magic (examples/wmdemo's stand-in for a cubin):
  // readelf reads no file header in it, and neither does this.
  std::vector<uint8_t> placeholder = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0x33, 13, 0, 0, 0};
  const std::string body = "wmdemo scale kernel, sm_80, built for CUDA 13\n";
  placeholder.insert(placeholder.end(), body.begin(), body.end());
  CHECK_FALSE(header_of(placeholder));
}

TEST_CASE("the versions a library needs, as readelf -V lists them") {
  for (size_t chunk : {size_t{1} << 20, size_t{4093}}) {
    auto info = scan("/lib/x86_64-linux-gnu/libz.so.1", chunk);
    REQUIRE(info);
    CHECK(info->versions_read);
    CHECK(std::find(info->version_needs.begin(), info->version_needs.end(),
                    ElfVersionNeed{"libc.so.6", "GLIBC_2.2.5"}) != info->version_needs.end());
  }
}

TEST_CASE("PE machine and Mach-O CPU types from a file's first bytes") {
  std::vector<uint8_t> pe(0x100, 0);
  pe[0] = 'M', pe[1] = 'Z', pe[0x3C] = 0x80;
  pe[0x80] = 'P', pe[0x81] = 'E', pe[0x84] = 0x64, pe[0x85] = 0xAA;
  CHECK(pe_machine(pe) == uint16_t{0xAA64});
  CHECK_FALSE(pe_machine(std::span<const uint8_t>(pe).first(0x85)));  // the machine cut off
  pe[0x80] = 'N';
  CHECK_FALSE(pe_machine(pe));

  auto be = [](std::vector<uint8_t>& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
  };
  // Thin, 64-bit, written little-endian: 0xfeedfacf, then cputype.
  std::vector<uint8_t> thin = {0xCF, 0xFA, 0xED, 0xFE, 0x0C, 0x00, 0x00, 0x01};
  CHECK(macho_cpu_types(thin) == std::vector<uint32_t>{0x100000C});
  thin[4] = 0x99;  // no CPU type Mach-O has
  CHECK_FALSE(macho_cpu_types(thin));
  // Fat: the big-endian header, then one 20-byte fat_arch per slice.
  std::vector<uint8_t> fat;
  be(fat, 0xCAFEBABE), be(fat, 2);
  for (uint32_t cpu : {0x1000007u, 0x100000Cu}) {
    be(fat, cpu);
    for (int i = 0; i < 4; ++i) be(fat, 0);
  }
  CHECK(macho_cpu_types(fat) == std::vector<uint32_t>{0x1000007, 0x100000C});
  CHECK_FALSE(macho_cpu_types(std::span<const uint8_t>(fat).first(fat.size() - 1)));  // a table cut off
  // A Java class file: the same magic, its version where the count is (52: more than any fat file has).
  std::vector<uint8_t> java;
  be(java, 0xCAFEBABE), be(java, 52);
  java.resize(2048);
  CHECK_FALSE(macho_cpu_types(java));
  CHECK_FALSE(macho_cpu_types(std::vector<uint8_t>{0xCA, 0xFE}));
}

namespace {

// A PE32+ image with one section (.rdata, raw at 0x400, RVA 0x1000) holding the import directory
// at its start and the DLL names after `gap` bytes; `far` DLL names are put past kPeAfter.
// With `delayed`, those DLLs are named by a delay-load directory after the import directory,
// as RVAs (attributes 1) or, with `addresses`, as addresses (attributes 0, image base 0x180000000).
std::vector<uint8_t> pe_image(const std::vector<std::string>& names, size_t gap = 0, bool far = false,
                              const std::vector<std::string>& delayed = {}, bool addresses = false) {
  auto put = [](std::vector<uint8_t>& b, size_t at, uint64_t v, size_t n) {
    if (b.size() < at + n) b.resize(at + n, 0);
    for (size_t i = 0; i < n; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  std::vector<uint8_t> b(0x400, 0);
  b[0] = 'M';
  b[1] = 'Z';
  put(b, 0x3C, 0x80, 4);
  b[0x80] = 'P';
  b[0x81] = 'E';
  put(b, 0x84, 0x8664, 2);  // machine
  put(b, 0x86, 1, 2);       // one section
  put(b, 0x94, 240, 2);     // optional header size
  const size_t opt = 0x98;
  put(b, opt, 0x20B, 2);
  put(b, opt + 108, 16, 4);  // data directories
  const uint32_t rva = 0x1000, raw = 0x400;
  const size_t directory = 20 * (names.size() + 1);
  put(b, opt + 120, rva, 4);  // the import directory
  put(b, opt + 124, directory, 4);
  const uint64_t base = 0x180000000;
  put(b, opt + 24, base, 8);  // ImageBase
  const size_t delay_at = directory, delay_size = delayed.empty() ? 0 : 32 * (delayed.size() + 1);
  if (!delayed.empty()) {
    put(b, opt + 112 + 8 * 13, rva + delay_at, 4);  // the delay-load directory
    put(b, opt + 112 + 8 * 13 + 4, delay_size, 4);
  }
  std::vector<uint8_t> section(directory + delay_size + gap, 0);
  for (size_t i = 0; i < names.size(); ++i) {
    put(section, 20 * i + 12, rva + section.size(), 4);  // Name
    section.insert(section.end(), names[i].begin(), names[i].end());
    section.push_back(0);
    if (far && i == 0) section.resize(section.size() + PeImportScanner::kPeAfter + 64, 0);
  }
  for (size_t i = 0; i < delayed.size(); ++i) {
    put(section, delay_at + 32 * i, addresses ? 0 : 1, 4);  // Attributes
    put(section, delay_at + 32 * i + 4, (addresses ? base : 0) + rva + section.size(), 4);
    section.insert(section.end(), delayed[i].begin(), delayed[i].end());
    section.push_back(0);
  }
  const size_t table = opt + 240;
  put(b, table, 0x61746164722E, 8);  // ".rdata"
  put(b, table + 8, section.size(), 4);
  put(b, table + 12, rva, 4);
  put(b, table + 16, section.size(), 4);
  put(b, table + 20, raw, 4);
  b.insert(b.end(), section.begin(), section.end());
  return b;
}

// The imports of `image` fed in `chunk`-byte pieces, the missing ranges given from the image.
std::optional<std::vector<std::string>> pe_imports(const std::vector<uint8_t>& image, size_t chunk, int* passes,
                                                   std::string& why) {
  PeImportScanner s(image.size());
  for (size_t at = 0; at < image.size(); at += chunk)
    s.feed(std::span<const uint8_t>(image).subspan(at, std::min(chunk, image.size() - at)));
  *passes = 0;
  for (auto missing = s.missing(); !missing.empty() && *passes < 2; missing = s.missing(), ++*passes)
    for (const ByteRange& r : missing)
      s.add(r, std::vector<uint8_t>(image.begin() + static_cast<ptrdiff_t>(r.offset),
                                    image.begin() + static_cast<ptrdiff_t>(r.offset + r.size)));
  return s.imports(why);
}

}  // namespace

TEST_CASE("PE imports: the DLL names of the import directory, in any chunking, far names in one more pass") {
  const std::vector<std::string> names = {"cudart64_12.dll", "KERNEL32.dll", "python312.dll"};
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    for (bool far : {false, true}) {
      CAPTURE(chunk);
      CAPTURE(far);
      int passes = -1;
      std::string why;
      auto imports = pe_imports(pe_image(names, 64, far), chunk, &passes, why);
      REQUIRE_MESSAGE(imports, why);
      CHECK(*imports == names);
      CHECK(passes == (far ? 1 : 0));
    }
  }
}

TEST_CASE("PE imports: delay-loaded DLLs follow the imported ones, named by RVA or by address") {
  for (bool addresses : {false, true}) {
    int passes = -1;
    std::string why;
    auto imports =
        pe_imports(pe_image({"KERNEL32.dll"}, 0, false, {"cublas64_13.dll", "nvcuda.dll"}, addresses), 7, &passes, why);
    REQUIRE_MESSAGE(imports, why);
    CHECK(*imports == std::vector<std::string>{"KERNEL32.dll", "cublas64_13.dll", "nvcuda.dll"});
    CHECK(passes == 0);
  }
}

TEST_CASE("PE imports: what cannot be read is said, never guessed") {
  int passes = 0;
  std::string why;
  std::vector<uint8_t> image = pe_image({"a.dll"});
  image[0x98] = 0x0B;  // the optional header magic 0x20b made 0x30b
  image[0x99] = 0x03;
  CHECK_FALSE(pe_imports(image, 4096, &passes, why));
  CHECK(why.find("magic 0x30b") != std::string::npos);
  image = pe_image({"a.dll"});
  image[0x98 + 120 + 1] = 0x90;  // the directory's RVA in no section
  why.clear();
  CHECK_FALSE(pe_imports(image, 4096, &passes, why));
  CHECK(why.find("lies in no section") != std::string::npos);
  image = pe_image({std::string(300, 'x')});  // a name longer than kMaxPeName
  why.clear();
  CHECK_FALSE(pe_imports(image, 4096, &passes, why));
  CHECK(why.find("no printable name") != std::string::npos);
  std::string none;
  auto empty = pe_imports(pe_image({}), 4096, &passes, none);
  REQUIRE(empty);
  CHECK(empty->empty());
}
