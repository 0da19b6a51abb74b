// ElfScanner over arbitrary bytes, fed in chunks as a member streams by (the first byte picks
// the chunk size), then asked for the string table it still misses, which is cut from the
// input as read_wheel's second ranged read would, then finished. Properties: no crash, and the
// result does not depend on how the bytes were chunked, where the scanner can know the dynamic
// segment's place before its bytes go by (program headers first, as every linker writes them).
// The header (machine, class, byte order) is the same in any chunking, and finish() gives it.
// The same bytes through ElfSectionScanner (the section header table, extended numbering
// included): no crash, the same state, reason, sections and names index in any chunking, the
// names index below the count, and never more sections than kMaxElfSections or the file holds.
// Bytes with the MZ magic go through PeImportScanner, its missing ranges cut from the input as
// read_wheel's further passes would: no crash, the imports (or that they are unreadable) the
// same in any chunking, each name bounded.
#include "fuzz_common.hpp"
#include "merger/format/elf.hpp"

#include <array>

namespace {
std::optional<wm::ElfInfo> scan(std::span<const uint8_t> file, size_t chunk) {
  wm::ElfScanner scanner;
  wm_fuzz::in_chunks(file, chunk, [&](std::span<const uint8_t> part) { scanner.feed(part); });
  // The ranges the scanner still misses, cut from the input as read_wheel's second pass would.
  auto cut = [&](std::optional<wm::ByteRange> range) {
    std::vector<uint8_t> bytes;
    if (range && range->offset < file.size()) {
      auto from = file.subspan(range->offset, std::min<uint64_t>(range->size, file.size() - range->offset));
      bytes.assign(from.begin(), from.end());
    }
    return bytes;
  };
  const std::vector<uint8_t> strings = cut(scanner.missing_strings()), versions = cut(scanner.missing_versions());
  auto info = scanner.finish(strings, nullptr, versions);
  if (info) FUZZ_CHECK(info->version_needs.size() <= wm::kMaxElfVersionNeeds, "more version needs than the limit");
  return info;
}
std::optional<wm::ElfHeader> header_of(std::span<const uint8_t> file, size_t chunk) {
  wm::ElfScanner scanner;
  wm_fuzz::in_chunks(file, chunk, [&](std::span<const uint8_t> part) { scanner.feed(part); });
  return scanner.header();
}
uint64_t le(std::span<const uint8_t> b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{b[at + i]} << (8 * i);
  return v;
}

// Whether a scan in chunks of `chunk` bytes locates the dynamic segment before its first byte
// goes by: the program headers end, rounded up to a chunk, at or before the segment's offset.
// Computed here independently of the scanner; false whenever the headers are not plainly sane.
bool dynamic_after_headers(std::span<const uint8_t> f, size_t chunk) {
  if (f.size() < 64 || f[5] != 1 || (f[4] != 1 && f[4] != 2)) return false;
  const bool is64 = f[4] == 2;
  const uint64_t phoff = is64 ? le(f, 32, 8) : le(f, 28, 4);
  const uint64_t entsize = le(f, is64 ? 54 : 42, 2), phnum = le(f, is64 ? 56 : 44, 2);
  if (entsize < (is64 ? 56u : 32u) || phoff > f.size() || entsize * phnum > f.size() - phoff) return false;
  const uint64_t phend = phoff + entsize * phnum;
  std::optional<uint64_t> dynamic;
  for (uint64_t i = 0; i < phnum; ++i) {
    size_t at = phoff + i * entsize;
    uint64_t type = le(f, at, 4);
    uint64_t offset = is64 ? le(f, at + 8, 8) : le(f, at + 4, 4);
    uint64_t filesz = is64 ? le(f, at + 32, 8) : le(f, at + 16, 4);
    if (type == 2 && filesz <= (4u << 20)) dynamic = offset;
  }
  if (!dynamic) return true;
  const uint64_t located = (std::max<uint64_t>(64, phend) + chunk - 1) / chunk * chunk;
  return located <= *dynamic;
}

struct SectionRead {
  wm::ElfSectionScanner::State state;
  std::string why;
  std::vector<std::array<uint64_t, 5>> sections;
  uint64_t names = 0;
  bool operator==(const SectionRead&) const = default;
};

SectionRead sections_of(std::span<const uint8_t> file, size_t chunk) {
  wm::ElfSectionScanner scanner(file.size(), 1024);
  wm_fuzz::in_chunks(file, chunk, [&](std::span<const uint8_t> part) { scanner.feed(part); });
  SectionRead r{scanner.state(), scanner.why_not(), {}, scanner.names_index()};
  for (const auto& s : scanner.sections()) r.sections.push_back({s.name, s.type, s.offset, s.size, s.link});
  return r;
}

std::optional<std::vector<std::string>> pe_imports(std::span<const uint8_t> file, size_t chunk) {
  wm::PeImportScanner scanner(file.size());
  wm_fuzz::in_chunks(file, chunk, [&](std::span<const uint8_t> part) { scanner.feed(part); });
  for (int pass = 0; pass < 2; ++pass)
    for (const wm::ByteRange& r : scanner.missing()) {
      FUZZ_CHECK(r.offset <= file.size() && r.size <= file.size() - r.offset, "a missing range past the file");
      scanner.add(r, std::vector<uint8_t>(file.begin() + static_cast<ptrdiff_t>(r.offset),
                                          file.begin() + static_cast<ptrdiff_t>(r.offset + r.size)));
    }
  std::string why;
  return scanner.imports(why);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = wm_fuzz::chunk_size(data[0]);
  std::span<const uint8_t> file(data + 1, size - 1);
  if (wm::is_pe_image(file)) {  // read_wheel reads the imports of what has a PE signature
    const auto whole = pe_imports(file, 1 << 20);
    FUZZ_CHECK(whole == pe_imports(file, chunk), "the imports depend on the chunk size");
    for (const std::string& name : whole.value_or(std::vector<std::string>()))
      FUZZ_CHECK(!name.empty() && name.size() <= wm::PeImportScanner::kMaxPeName, "an import name out of bounds");
    return 0;
  }
  if (!wm::ElfScanner::has_magic(file)) return 0;  // read_wheel scans only files with the magic
  const SectionRead sections = sections_of(file, 1 << 20);
  FUZZ_CHECK(sections == sections_of(file, chunk), "the section table read depends on the chunk size");
  if (sections.state == wm::ElfSectionScanner::State::read) {
    FUZZ_CHECK(!sections.sections.empty() && sections.names < sections.sections.size(), "a names index past the table");
    FUZZ_CHECK(sections.sections.size() <= wm::kMaxElfSections && sections.sections.size() * 64 <= file.size(),
               "more sections than the file holds");
  }
  FUZZ_CHECK((sections.state == wm::ElfSectionScanner::State::unreadable) == !sections.why.empty(),
             "an unreadable table without a reason, or a reason for a readable one");
  const auto header = header_of(file, 1 << 20);
  FUZZ_CHECK(header == header_of(file, chunk), "the header depends on the chunk size");
  if (header) FUZZ_CHECK(file.size() >= (header->elf_class == 2 ? 64u : 52u), "a header longer than the file");
  auto whole = scan(file, 1 << 20);
  auto chunked = scan(file, chunk);
  if (whole) FUZZ_CHECK(whole->header == header.value_or(wm::ElfHeader{}), "finish() and header() disagree");
  if (!dynamic_after_headers(file, chunk)) return 0;
  FUZZ_CHECK(whole.has_value() == chunked.has_value(), "the result depends on the chunk size");
  if (whole) {
    FUZZ_CHECK(whole->shared_object == chunked->shared_object && whole->soname == chunked->soname &&
                   whole->needed == chunked->needed && whole->version_needs == chunked->version_needs &&
                   whole->versions_read == chunked->versions_read,
               "the result depends on the chunk size");
  }
  return 0;
}
