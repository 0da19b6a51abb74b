#include "merger/format/elf.hpp"

#include "merger/base/bytes.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

namespace wm {

namespace {
constexpr size_t kPrefix = 4 << 20;
// What a real library has is far below these; past them the file is not one we order by
// (150,000 DT_NEEDED entries naming one 1 MiB string would otherwise be 150 GB of names).
constexpr size_t kMaxNeeded = kMaxElfNeeded;
constexpr uint32_t kPtLoad = 1, kPtDynamic = 2;
constexpr int64_t kDtNeeded = 1, kDtStrtab = 5, kDtStrsz = 10, kDtSoname = 14;
constexpr int64_t kDtVerneed = 0x6ffffffe, kDtVerneednum = 0x6fffffff;
}  // namespace

// A program header, as ElfScanner::Layout keeps it (a member of that class's layout, so not of
// an unnamed namespace: the class has external linkage).
namespace elf_layout {
struct Segment {
  uint32_t type;
  uint64_t offset, vaddr, filesz;
};
}  // namespace elf_layout

struct ElfScanner::Layout {
  bool is64;
  uint16_t type;
  std::vector<elf_layout::Segment> segments;
};

namespace {
// Where a PE image's "PE\0\0" signature is (the MZ header's e_lfanew), when `head` holds one.
std::optional<uint32_t> pe_signature_at(std::span<const uint8_t> head) {
  if (head.size() < 64 || head[0] != 'M' || head[1] != 'Z') return std::nullopt;
  const uint32_t at = ByteView(head.data(), head.size()).u32(0x3C);
  if (at < 64 || at > head.size() - 4 || head[at] != 'P' || head[at + 1] != 'E' || head[at + 2] != 0 ||
      head[at + 3] != 0)
    return std::nullopt;
  return at;
}
}  // namespace

bool is_pe_image(std::span<const uint8_t> head) { return pe_signature_at(head).has_value(); }

std::optional<uint16_t> pe_machine(std::span<const uint8_t> head) {
  auto at = pe_signature_at(head);
  if (!at || head.size() - *at < 6) return std::nullopt;
  return ByteView(head.data(), head.size()).u16(*at + 4);
}

namespace {
constexpr uint32_t kCpuX86 = 7, kCpuX86_64 = 0x1000007, kCpuArm = 12, kCpuArm64 = 0x100000C, kCpuArm64_32 = 0x200000C,
                   kCpuPpc = 18, kCpuPpc64 = 0x1000012;
bool known_cpu(uint32_t cpu) {
  for (uint32_t k : {kCpuX86, kCpuX86_64, kCpuArm, kCpuArm64, kCpuArm64_32, kCpuPpc, kCpuPpc64})
    if (cpu == k) return true;
  return false;
}
uint32_t be32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}
}  // namespace

std::optional<std::vector<uint32_t>> macho_cpu_types(std::span<const uint8_t> head) {
  if (head.size() < 8) return std::nullopt;
  const uint32_t magic = be32(head, 0);
  if (magic == 0xCFFAEDFE || magic == 0xCEFAEDFE || magic == 0xFEEDFACF || magic == 0xFEEDFACE) {
    // Thin: mach_header(_64) in the file's byte order (0xfeedfacf written little-endian reads
    // 0xcffaedfe here).
    const bool little = magic == 0xCFFAEDFE || magic == 0xCEFAEDFE;
    const uint32_t cpu = little ? ByteView(head.data(), head.size()).u32(4) : be32(head, 4);
    if (!known_cpu(cpu)) return std::nullopt;
    return std::vector<uint32_t>{cpu};
  }
  if (magic != 0xCAFEBABE && magic != 0xCAFEBABF) return std::nullopt;
  const uint32_t slices = be32(head, 4);
  const size_t entry = magic == 0xCAFEBABE ? 20 : 32;
  if (slices == 0 || slices > kMaxMachoSlices || head.size() < 8 + slices * entry) return std::nullopt;
  std::vector<uint32_t> cpus;
  for (uint32_t i = 0; i < slices; ++i) {
    const uint32_t cpu = be32(head, 8 + i * entry);
    if (!known_cpu(cpu)) return std::nullopt;
    cpus.push_back(cpu);
  }
  return cpus;
}

bool ElfScanner::has_magic(std::span<const uint8_t> head) {
  return head.size() >= 4 && head[0] == 0x7F && head[1] == 'E' && head[2] == 'L' && head[3] == 'F';
}

std::optional<ElfScanner::Layout> ElfScanner::layout() const {
  ByteView p(prefix_);
  if (p.size() < 16 || !has_magic(prefix_) || prefix_[5] != 1) return std::nullopt;  // little-endian only
  Layout l;
  l.is64 = prefix_[4] == 2;
  if (p.size() < (l.is64 ? 64u : 52u)) return std::nullopt;  // the ELF header itself
  l.type = p.u16(16);
  uint64_t phoff = l.is64 ? p.u64(32) : p.u32(28);
  uint16_t phentsize = p.u16(l.is64 ? 54 : 42), phnum = p.u16(l.is64 ? 56 : 44);
  // Compared without sums that could wrap around.
  if (phentsize < (l.is64 ? 56 : 32) || phoff > p.size() || uint64_t{phentsize} * phnum > p.size() - phoff)
    return std::nullopt;
  for (uint16_t i = 0; i < phnum; ++i) {
    size_t at = phoff + size_t{i} * phentsize;
    if (l.is64)
      l.segments.push_back({p.u32(at), p.u64(at + 8), p.u64(at + 16), p.u64(at + 32)});
    else
      l.segments.push_back({p.u32(at), p.u32(at + 4), p.u32(at + 8), p.u32(at + 16)});
  }
  return l;
}

void ElfScanner::feed(std::span<const uint8_t> chunk) {
  const uint64_t start = seen_;
  seen_ += chunk.size();
  if (prefix_.size() < kPrefix) {
    size_t take = std::min(kPrefix - prefix_.size(), chunk.size());
    prefix_.insert(prefix_.end(), chunk.begin(), chunk.begin() + take);
  }
  if (!dynamic_located_ && prefix_.size() >= 64) {
    if (auto l = layout()) {
      dynamic_located_ = true;
      for (const elf_layout::Segment& s : l->segments)
        if (s.type == kPtDynamic && s.filesz <= kPrefix && s.offset <= UINT64_MAX - s.filesz)
          dynamic_range_ = ByteRange{s.offset, s.filesz};
    } else if (prefix_.size() == kPrefix || seen_ > kPrefix) {
      dynamic_located_ = true;  // not readable; finish() will say so
    }
  }
  if (dynamic_range_) {
    // Copy the part of this chunk that overlaps the dynamic segment.
    uint64_t lo = std::max(start, dynamic_range_->offset);
    uint64_t hi = std::min(seen_, dynamic_range_->offset + dynamic_range_->size);
    if (lo < hi) {
      dynamic_.resize(dynamic_range_->size);
      std::copy(chunk.begin() + (lo - start), chunk.begin() + (hi - start),
                dynamic_.begin() + (lo - dynamic_range_->offset));
    }
  }
}

namespace {
struct DynamicFields {
  uint64_t strtab_vaddr = 0, strsz = 0;
  std::optional<uint64_t> verneed_vaddr;
  uint64_t verneednum = 0;
  std::optional<uint64_t> soname;
  std::vector<uint64_t> needed;
  bool too_many = false;  // more DT_NEEDED entries than kMaxNeeded
};

DynamicFields read_dynamic(const std::vector<uint8_t>& dyn, bool is64) {
  DynamicFields f;
  ByteView d(dyn);
  size_t step = is64 ? 16 : 8;
  for (size_t at = 0; at + step <= d.size(); at += step) {
    int64_t tag = is64 ? static_cast<int64_t>(d.u64(at)) : static_cast<int32_t>(d.u32(at));
    uint64_t val = is64 ? d.u64(at + 8) : d.u32(at + 4);
    if (tag == 0) break;
    if (tag == kDtNeeded) {
      if (f.needed.size() == kMaxNeeded) {
        f.too_many = true;
        break;
      }
      f.needed.push_back(val);
    }
    if (tag == kDtSoname) f.soname = val;
    if (tag == kDtStrtab) f.strtab_vaddr = val;
    if (tag == kDtStrsz) f.strsz = val;
    if (tag == kDtVerneed) f.verneed_vaddr = val;
    if (tag == kDtVerneednum) f.verneednum = val;
  }
  return f;
}

// The file bytes a virtual address maps to: its offset in the file and how many bytes of its
// PT_LOAD segment follow it there.
std::optional<ByteRange> file_range(const std::vector<elf_layout::Segment>& segments, uint64_t vaddr) {
  for (const elf_layout::Segment& s : segments)
    if (s.type == kPtLoad && vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz &&
        s.offset <= UINT64_MAX - (vaddr - s.vaddr))
      return ByteRange{vaddr - s.vaddr + s.offset, s.filesz - (vaddr - s.vaddr)};
  return std::nullopt;
}

std::optional<uint64_t> file_offset(const std::vector<elf_layout::Segment>& segments, uint64_t vaddr) {
  const auto range = file_range(segments, vaddr);
  return range ? std::optional<uint64_t>(range->offset) : std::nullopt;
}

// [offset, offset + size) lies inside `limit` bytes, computed without wrapping around.
bool within(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

// Where the version needs lie in the file: from DT_VERNEED's offset, to the end of its PT_LOAD
// segment's file bytes, at most kMaxElfVersionBytes (the table's size is not recorded).
std::optional<ByteRange> versions_range(const std::vector<elf_layout::Segment>& segments, const DynamicFields& f) {
  if (!f.verneed_vaddr || f.verneednum == 0) return std::nullopt;
  auto range = file_range(segments, *f.verneed_vaddr);
  if (range) range->size = std::min(range->size, kMaxElfVersionBytes);
  return range;
}
}  // namespace

std::optional<ByteRange> ElfScanner::missing_versions() const {
  auto l = layout();
  if (!l || !dynamic_range_ || dynamic_.size() != dynamic_range_->size) return std::nullopt;
  const auto range = versions_range(l->segments, read_dynamic(dynamic_, l->is64));
  if (!range || within(range->offset, range->size, prefix_.size())) return std::nullopt;
  return range;
}

std::optional<ByteRange> ElfScanner::missing_strings() const {
  auto l = layout();
  if (!l || !dynamic_range_ || dynamic_.size() != dynamic_range_->size) return std::nullopt;
  DynamicFields f = read_dynamic(dynamic_, l->is64);
  auto off = file_offset(l->segments, f.strtab_vaddr);
  if (!off || within(*off, f.strsz, prefix_.size()) || f.strsz > kMaxElfStringBytes) return std::nullopt;
  return ByteRange{*off, f.strsz};
}

namespace {
// The entries of .gnu.version_r in `bytes` (Elf32/64_Verneed and _Vernaux have one layout):
// `count` files, each with vn_cnt versions; offsets go forward from each entry, so the walk
// ends. False when an entry lies past the bytes or names no string, and with `beyond_limits`
// set when more than kMaxElfNeeded files or kMaxElfVersionNeeds versions.
template <typename StringAt>
bool read_version_needs(std::span<const uint8_t> bytes, uint64_t count, const StringAt& string_at,
                        std::vector<ElfVersionNeed>& out, std::string& beyond_limits) {
  if (count > kMaxElfNeeded) {
    beyond_limits = "more than " + std::to_string(kMaxElfNeeded) + " DT_VERNEEDNUM entries";
    return false;
  }
  ByteView b(bytes.data(), bytes.size());
  uint64_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (!within(at, 16, b.size())) return false;
    const uint16_t versions = b.u16(at + 2);
    const auto file = string_at(b.u32(at + 4));
    if (!file) return false;
    uint64_t aux = at + b.u32(at + 8);
    for (uint16_t j = 0; j < versions; ++j) {
      if (!within(aux, 16, b.size())) return false;
      const auto version = string_at(b.u32(aux + 8));
      if (!version) return false;
      if (out.size() == kMaxElfVersionNeeds) {
        beyond_limits = "more than " + std::to_string(kMaxElfVersionNeeds) + " symbol versions needed";
        return false;
      }
      out.push_back({*file, *version});
      const uint32_t next = b.u32(aux + 12);
      if (next == 0) break;
      aux += next;
    }
    const uint32_t next = b.u32(at + 12);
    if (next == 0) break;
    at += next;
  }
  return true;
}
}  // namespace

std::optional<ElfHeader> ElfScanner::header() const {
  if (prefix_.size() < 52 || !has_magic(prefix_)) return std::nullopt;
  const uint8_t elf_class = prefix_[4], data = prefix_[5];
  if ((elf_class != 1 && elf_class != 2) || (data != 1 && data != 2)) return std::nullopt;
  // A whole header of its class, of the one version ELF has (EI_VERSION and e_version both 1):
  // what readelf reads as a file header, not a file that only starts with the magic.
  auto u16 = [&](size_t at) {
    return static_cast<uint16_t>(data == 1 ? prefix_[at] | prefix_[at + 1] << 8 : prefix_[at] << 8 | prefix_[at + 1]);
  };
  const uint32_t version = data == 1 ? uint32_t{u16(20)} | uint32_t{u16(22)} << 16 : uint32_t{u16(20)} << 16 | u16(22);
  if (prefix_.size() < (elf_class == 2 ? 64u : 52u) || prefix_[6] != 1 || version != 1) return std::nullopt;
  return ElfHeader{u16(18), elf_class, data};
}

std::optional<ElfInfo> ElfScanner::finish(std::span<const uint8_t> strings, std::string* beyond_limits,
                                          std::span<const uint8_t> versions) const {
  auto l = layout();
  if (!l) return std::nullopt;
  ElfInfo info;
  info.header = header().value_or(ElfHeader{});
  info.shared_object = l->type == 3;
  if (!dynamic_range_) return info;  // static or no dynamic section: nothing to order by
  if (dynamic_.size() != dynamic_range_->size) return std::nullopt;
  DynamicFields f = read_dynamic(dynamic_, l->is64);
  if (f.too_many) {
    if (beyond_limits) *beyond_limits = "more than " + std::to_string(kMaxNeeded) + " DT_NEEDED entries";
    return std::nullopt;
  }
  auto off = file_offset(l->segments, f.strtab_vaddr);
  if (!off) return std::nullopt;
  std::span<const uint8_t> table;
  if (within(*off, f.strsz, prefix_.size()))
    table = std::span<const uint8_t>(prefix_).subspan(*off, f.strsz);
  else if (strings.size() == f.strsz)
    table = strings;
  else
    return std::nullopt;
  auto string_at = [&](uint64_t index) -> std::optional<std::string> {
    if (index >= table.size()) return std::nullopt;
    auto begin = table.begin() + static_cast<ptrdiff_t>(index);
    auto limit = table.size() - index > kMaxElfNameBytes ? begin + kMaxElfNameBytes : table.end();
    auto end = std::find(begin, limit, uint8_t{0});
    if (end == limit) {  // unterminated, or longer than any file name
      if (beyond_limits && limit != table.end())
        *beyond_limits = "a name longer than " + std::to_string(kMaxElfNameBytes) + " bytes";
      return std::nullopt;
    }
    return std::string(begin, end);
  };
  if (f.soname) {
    auto s = string_at(*f.soname);
    if (!s) return std::nullopt;
    info.soname = *s;
  }
  for (uint64_t n : f.needed) {
    auto s = string_at(n);
    if (!s) return std::nullopt;
    info.needed.push_back(*s);
  }
  if (const auto range = versions_range(l->segments, f)) {
    std::span<const uint8_t> bytes;
    if (within(range->offset, range->size, prefix_.size()))
      bytes = std::span<const uint8_t>(prefix_).subspan(range->offset, range->size);
    else if (versions.size() == range->size)
      bytes = versions;
    std::string beyond;
    info.versions_read = read_version_needs(bytes, f.verneednum, string_at, info.version_needs, beyond);
    if (!beyond.empty()) {
      if (beyond_limits) *beyond_limits = beyond;
      return std::nullopt;
    }
  }
  return info;
}

namespace {
constexpr uint16_t kShnXindex = 0xffff, kShnLoreserve = 0xff00;
constexpr uint64_t kSectionEntry = 64;
}  // namespace

void ElfSectionScanner::locate() {
  ByteView h(head_);
  if (head_[4] != 2 || head_[5] != 1) {
    state_ = State::not_elf64;
    why_ = "it is not a 64-bit little-endian ELF file";
    return;
  }
  machine_ = h.u16(18);
  table_offset_ = h.u64(40);
  const uint16_t entry_size = h.u16(58), shnum = h.u16(60), shstrndx = h.u16(62);
  if (table_offset_ == 0) {
    state_ = State::no_table;  // readelf: "There are no sections in this file"
    return;
  }
  state_ = State::unreadable;
  if (entry_size != kSectionEntry) {
    why_ = fmt::format("its section header entries are {} bytes, not 64", entry_size);
    return;
  }
  count_pending_ = shnum == 0;              // the count is section 0's sh_size
  names_pending_ = shstrndx == kShnXindex;  // the names' index is section 0's sh_link
  if (!names_pending_ && shstrndx >= kShnLoreserve) {
    why_ = fmt::format("its section names index is {:#x}, a reserved index", shstrndx);
    return;
  }
  count_ = count_pending_ ? 1 : shnum;  // section 0 first, to read the rest from it
  names_index_ = shstrndx;
  if (table_offset_ > file_size_ || count_ * kSectionEntry > file_size_ - table_offset_) {
    why_ = fmt::format("its section header table ({} entries at byte {}) lies past its end ({} bytes)", shnum,
                       table_offset_, file_size_);
    return;
  }
  if (!count_pending_ && !names_pending_ && names_index_ >= count_) {
    why_ = fmt::format("its section names index {} is not below its {} sections", names_index_, count_);
    return;
  }
  const uint64_t before = std::min(table_offset_, window_before_);
  window_ = ByteRange{table_offset_ - before, before + count_ * kSectionEntry};
}

bool ElfSectionScanner::resolve_extended() {
  if (!count_pending_ && !names_pending_) return false;
  const uint64_t at = table_offset_ - window_->offset;
  if (bytes_.size() < at + kSectionEntry) return false;
  ByteView zero(bytes_.data() + at, kSectionEntry);
  const uint64_t size = zero.u64(32);
  const uint32_t link = zero.u32(40);
  if (names_pending_) {
    names_pending_ = false;
    names_index_ = link;
  }
  if (!count_pending_) {
    if (names_index_ >= count_) {
      window_.reset();
      why_ = fmt::format("its section names index {} (section 0's sh_link) is not below its {} sections", names_index_,
                         count_);
    }
    return false;
  }
  count_pending_ = false;
  // Bounded before the window grows: the table must fit the file, and no real library has this many.
  if (size == 0) {
    window_.reset();
    state_ = State::no_table;  // the gABI: e_shnum 0 and section 0's sh_size 0, no sections
    return false;
  }
  if (size > kMaxElfSections || size * kSectionEntry > file_size_ - table_offset_) {
    window_.reset();
    why_ =
        size > kMaxElfSections
            ? fmt::format("it has {} sections (section 0's sh_size), more than the {} read", size, kMaxElfSections)
            : fmt::format(
                  "its section header table ({} entries, section 0's sh_size, at byte {}) lies past its end ({} bytes)",
                  size, table_offset_, file_size_);
    return false;
  }
  count_ = size;
  if (names_index_ >= count_) {
    window_.reset();
    why_ = fmt::format("its section names index {} is not below its {} sections", names_index_, count_);
    return false;
  }
  window_->size = (table_offset_ - window_->offset) + count_ * kSectionEntry;
  return true;
}

void ElfSectionScanner::feed(std::span<const uint8_t> chunk) {
  if (head_.size() < 64) {
    const size_t n = std::min(64 - head_.size(), chunk.size());
    head_.insert(head_.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(n));
    if (head_.size() == 64) {
      locate();
      if (window_) {
        bytes_.reserve(window_->size);
        if (window_->offset < head_.size()) {  // a window starting inside the ELF header
          const uint64_t upto = std::min<uint64_t>(head_.size(), window_->offset + window_->size);
          bytes_.insert(bytes_.end(), head_.begin() + static_cast<ptrdiff_t>(window_->offset),
                        head_.begin() + static_cast<ptrdiff_t>(upto));
          if (resolve_extended()) bytes_.reserve(window_->size);
        }
      }
    }
  }
  // The window's bytes in order; it grows once, when section 0 gives the count.
  while (window_) {
    const uint64_t want = window_->offset + bytes_.size(), end = window_->offset + window_->size;
    if (want >= end || want >= seen_ + chunk.size()) break;
    if (want < seen_) {  // went by before the header said where the table is
      bytes_lost_ = true;
      break;
    }
    const uint64_t take = std::min<uint64_t>(end - want, seen_ + chunk.size() - want);
    const auto from = chunk.begin() + static_cast<ptrdiff_t>(want - seen_);
    bytes_.insert(bytes_.end(), from, from + static_cast<ptrdiff_t>(take));
    if (resolve_extended()) bytes_.reserve(window_->size);
  }
  seen_ += chunk.size();
}

ElfSectionScanner::State ElfSectionScanner::state() const {
  if (state_ != State::unreadable) return state_;
  if (!window_ || bytes_lost_ || bytes_.size() != window_->size || count_pending_ || names_pending_)
    return State::unreadable;
  return State::read;
}

std::string ElfSectionScanner::why_not() const {
  if (state() != State::unreadable) return {};
  if (!why_.empty()) return why_;
  if (bytes_lost_) return "its section header table went by before its header was read";
  return fmt::format("its section header table (at byte {}) lies past its end ({} bytes)", table_offset_, seen_);
}

std::vector<ElfSectionScanner::Section> ElfSectionScanner::sections() const {
  std::vector<Section> out;
  if (state() != State::read) return out;
  out.reserve(count_);
  ByteView t(bytes_.data() + (table_offset_ - window_->offset), count_ * kSectionEntry);
  for (uint64_t i = 0; i < count_; ++i) {
    const size_t at = i * kSectionEntry;
    out.push_back({t.u32(at), t.u32(at + 4), t.u64(at + 24), t.u64(at + 32), t.u32(at + 40)});
  }
  return out;
}

std::optional<std::span<const uint8_t>> ElfSectionScanner::kept(uint64_t offset, uint64_t size) const {
  if (!window_ || offset < window_->offset || offset - window_->offset > bytes_.size() ||
      size > bytes_.size() - (offset - window_->offset))
    return std::nullopt;
  return std::span<const uint8_t>(bytes_).subspan(offset - window_->offset, size);
}

}  // namespace wm

namespace wm {

namespace {
constexpr size_t kPeSectionEntry = 40, kPeImportDescriptor = 20, kPeDelayDescriptor = 32;
}  // namespace

void PeImportScanner::feed(std::span<const uint8_t> chunk) {
  const uint64_t pos = seen_;
  seen_ += chunk.size();
  size_t consumed = 0;
  if (head_.size() < kPeHead) {
    consumed = static_cast<size_t>(std::min<uint64_t>(kPeHead - head_.size(), chunk.size()));
    head_.insert(head_.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(consumed));
    if (head_.size() == kPeHead || seen_ >= size_) {  // the headers are in: where the names will be
      std::string why;
      if (auto l = layout(why); l && l->directory.size > 0) {
        uint64_t start = 0, end = size_;  // the directory's section in the file
        for (const auto& s : l->sections)
          if (l->directory.offset >= s[2] && l->directory.offset < uint64_t{s[2]} + s[3]) {
            start = s[2];
            end = uint64_t{s[2]} + s[3];
          }
        const uint64_t lo = l->directory.offset - std::min(kPeBefore, l->directory.offset - start);
        const uint64_t hi = std::min({end, size_, l->directory.offset + l->directory.size + kPeAfter});
        window_ = {lo, hi > lo ? hi - lo : 0};
        if (window_.size > 0 && lo < head_.size())
          kept_.assign(head_.begin() + static_cast<ptrdiff_t>(lo),
                       head_.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(head_.size(), hi)));
      }
    }
  }
  const uint64_t at = pos + consumed, window_end = window_.offset + window_.size;
  const uint64_t lo = std::max(at, window_.offset + kept_.size()), hi = std::min(seen_, window_end);
  if (window_.size > 0 && lo < hi && lo == window_.offset + kept_.size())
    kept_.insert(kept_.end(), chunk.begin() + static_cast<ptrdiff_t>(lo - pos),
                 chunk.begin() + static_cast<ptrdiff_t>(hi - pos));
}

std::optional<PeImportScanner::Layout> PeImportScanner::layout(std::string& why) const {
  const auto sig = pe_signature_at(head_);
  if (!sig) {
    why = "no PE signature where the MZ header points";
    return std::nullopt;
  }
  const ByteView v(head_);
  const uint64_t coff = *sig + 4, opt = coff + 20;
  if (opt + 2 > head_.size()) {
    why = "its COFF header is cut short";
    return std::nullopt;
  }
  const uint16_t sections = v.u16(coff + 2), opt_size = v.u16(coff + 16), magic = v.u16(opt);
  if (magic != 0x10B && magic != 0x20B) {
    why = fmt::format("an optional header of magic {:#x} (0x10b PE32 and 0x20b PE32+ are known)", magic);
    return std::nullopt;
  }
  const uint64_t table = opt + opt_size, count_at = opt + (magic == 0x20B ? 108 : 92);
  if (table + uint64_t{sections} * kPeSectionEntry > head_.size() || count_at + 4 > table) {
    why = fmt::format("its headers and {} sections lie past the first {} bytes", sections, kPeHead);
    return std::nullopt;
  }
  Layout l;
  for (uint64_t s = table; s < table + uint64_t{sections} * kPeSectionEntry; s += kPeSectionEntry)
    l.sections.push_back({v.u32(s + 12), v.u32(s + 8), v.u32(s + 20), v.u32(s + 16)});
  l.image_base = magic == 0x20B ? v.u64(opt + 24) : v.u32(opt + 28);
  // Data directory N (8 bytes each after the count): 1 the imports, 13 the delay-load imports.
  auto directory = [&](size_t n, uint64_t descriptor, const char* what, ByteRange& out) {
    const uint64_t at = count_at + 4 + 8 * n;
    if (v.u32(count_at) <= n || at + 8 > table || v.u32(at) == 0) return true;  // none
    const auto offset = offset_of(l, v.u32(at));
    if (!offset) {
      why = fmt::format("its {} directory (RVA {:#x}) lies in no section of the file", what, v.u32(at));
      return false;
    }
    out = {*offset, std::min({std::max<uint64_t>(v.u32(at + 4), descriptor), (kMaxPeImports + 1) * descriptor,
                              size_ - std::min(size_, *offset)})};
    return true;
  };
  if (!directory(1, kPeImportDescriptor, "import", l.directory) ||
      !directory(13, kPeDelayDescriptor, "delay-load import", l.delayed))
    return std::nullopt;
  return l;
}

std::optional<uint64_t> PeImportScanner::offset_of(const Layout& l, uint32_t rva) const {
  for (const auto& [address, virtual_size, raw, raw_size] : l.sections)
    if (rva >= address && rva - address < std::min(raw_size, std::max(virtual_size, raw_size)) &&
        uint64_t{raw} + (rva - address) < size_)
      return uint64_t{raw} + (rva - address);
  return std::nullopt;
}

std::span<const uint8_t> PeImportScanner::from(uint64_t offset) const {
  auto tail = [&](uint64_t start, std::span<const uint8_t> have) {
    return offset >= start && offset - start < have.size() ? have.subspan(static_cast<size_t>(offset - start))
                                                           : std::span<const uint8_t>();
  };
  std::span<const uint8_t> best = tail(0, head_);
  if (auto b = tail(window_.offset, kept_); b.size() > best.size()) best = b;
  // The added ranges, sorted by offset, are at most kMaxPeName bytes but the directory: those
  // that can hold `offset` start at most that far before it.
  auto it = std::upper_bound(added_.begin(), added_.end(), offset,
                             [](uint64_t o, const auto& a) { return o < a.first.offset; });
  for (size_t looked = 0; it != added_.begin() && looked <= kMaxPeName; ++looked) {
    --it;
    if (auto b = tail(it->first.offset, it->second); b.size() > best.size()) best = b;
  }
  return best;
}

std::optional<std::span<const uint8_t>> PeImportScanner::bytes(uint64_t offset, uint64_t size) const {
  const std::span<const uint8_t> have = from(offset);
  if (have.size() < size) return std::nullopt;
  return have.first(static_cast<size_t>(size));
}

void PeImportScanner::add(const ByteRange& range, std::vector<uint8_t> data) {
  auto at = std::upper_bound(added_.begin(), added_.end(), range.offset,
                             [](uint64_t o, const auto& a) { return o < a.first.offset; });
  added_.insert(at, {range, std::move(data)});
}

std::optional<std::vector<uint64_t>> PeImportScanner::name_offsets(const Layout& l, std::string& why) const {
  std::vector<uint64_t> out;
  // Each directory's descriptors up to the all-zero one: `stride` bytes, the name's RVA at `name`
  // (a delay-load descriptor whose attributes lack bit 0 gives an address instead).
  auto read = [&](const ByteRange& range, size_t stride, size_t name, bool delayed) {
    if (range.size == 0) return true;
    const auto table = bytes(range.offset, range.size);
    if (!table) return false;
    const ByteView v(table->data(), table->size());
    for (size_t d = 0; d + stride <= table->size(); d += stride) {
      if (std::all_of(table->begin() + static_cast<ptrdiff_t>(d), table->begin() + static_cast<ptrdiff_t>(d + stride),
                      [](uint8_t b) { return b == 0; }))
        return true;
      if (out.size() == kMaxPeImports) {
        why = fmt::format("more than {} imported DLLs", kMaxPeImports);
        return false;
      }
      const uint32_t rva =
          delayed && !(v.u32(d) & 1) ? static_cast<uint32_t>(v.u32(d + name) - l.image_base) : v.u32(d + name);
      const auto at = offset_of(l, rva);
      if (!at) {
        why =
            fmt::format("the name of imported DLL {} (RVA {:#x}) lies in no section of the file", out.size() + 1, rva);
        return false;
      }
      out.push_back(*at);
    }
    return true;
  };
  if (!read(l.directory, kPeImportDescriptor, 12, false) || !read(l.delayed, kPeDelayDescriptor, 4, true))
    return std::nullopt;
  return out;
}

std::vector<ByteRange> PeImportScanner::missing() const {
  std::string why;
  const auto l = layout(why);
  if (!l) return {};
  const auto names = name_offsets(*l, why);
  if (!names) {  // the directories whose bytes are not there yet
    std::vector<ByteRange> out;
    if (!why.empty()) return out;
    for (const ByteRange& d : {l->directory, l->delayed})
      if (d.size > 0 && !bytes(d.offset, d.size)) out.push_back(d);
    return out;
  }
  std::vector<ByteRange> out;
  for (uint64_t at : *names) {
    const uint64_t most = std::min<uint64_t>(kMaxPeName, size_ - at);
    const std::span<const uint8_t> have = from(at);
    const auto head = have.first(static_cast<size_t>(std::min<uint64_t>(have.size(), most)));
    if (std::find(head.begin(), head.end(), 0) == head.end() && head.size() < most) out.push_back({at, most});
  }
  std::sort(out.begin(), out.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  out.erase(
      std::unique(out.begin(), out.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset == b.offset; }),
      out.end());
  return out;
}

std::optional<std::vector<std::string>> PeImportScanner::imports(std::string& why) const {
  const auto l = layout(why);
  if (!l) return std::nullopt;
  std::vector<std::string> out;
  const auto names = name_offsets(*l, why);
  if (!names) {
    if (why.empty()) why = "its import directory was not read";
    return std::nullopt;
  }
  for (uint64_t at : *names) {
    const std::span<const uint8_t> have = from(at);
    const auto head = have.first(std::min(have.size(), kMaxPeName));
    const auto nul = std::find(head.begin(), head.end(), 0);
    std::string name(head.begin(), nul);
    if (name.empty() || nul == head.end() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7F; })) {
      why = fmt::format("imported DLL {}'s name is no printable name of at most {} bytes", out.size() + 1, kMaxPeName);
      return std::nullopt;
    }
    out.push_back(std::move(name));
  }
  return out;
}

}  // namespace wm
