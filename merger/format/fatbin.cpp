#include "merger/format/fatbin.hpp"

#include "merger/base/bytes.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wm {

namespace {
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr size_t kFatbinHeader = 16;
constexpr size_t kEntryHeader = 64;       // the fields read; an entry's header may be longer
constexpr size_t kMaxEntryHeader = 4096;  // 64 to 112 bytes in CUDA 12 and 13
constexpr size_t kMaxContainerHeader = 256;
constexpr uint64_t kArchSpecific = 0x100000, kFamily = 0x200000;
constexpr uint16_t kKindPtx = 1, kKindElf = 2;
}  // namespace

std::string GpuCode::str() const {
  std::string s = fmt::format("{}_{}", kind == Kind::sass ? "sm" : "compute", arch);
  if (suffix) s += suffix;
  return s;
}

bool FatbinWalker::has_magic(std::span<const uint8_t> head) {
  return head.size() >= 4 && ByteView(head.data(), 4).u32(0) == kFatbinMagic;
}

void FatbinWalker::fail(std::string why) {
  if (result_.unreadable.empty()) result_.unreadable = fmt::format("{} (at byte {})", why, seen_ - header_.size());
}

void FatbinWalker::feed(std::span<const uint8_t> chunk) {
  while (!chunk.empty() && result_.unreadable.empty()) {
    if (skip_ > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, chunk.size()));
      skip_ -= n;
      seen_ += n;
      chunk = chunk.subspan(n);
      continue;
    }
    size_t n = std::min(need_ - header_.size(), chunk.size());
    header_.insert(header_.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(n));
    seen_ += n;
    chunk = chunk.subspan(n);
    if (header_.size() == need_) take();
  }
}

// A complete header is in header_; decides what comes next.
void FatbinWalker::take() {
  const std::vector<uint8_t>& bytes = header_;
  ByteView h(bytes);
  const uint64_t at = seen_ - bytes.size();  // where this header starts in the range
  if (want_ == Want::container) {
    if (bytes.size() == 8) {
      if (std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; })) {
        header_.clear();  // padding between fat binaries
        return;
      }
      need_ = kFatbinHeader;  // the rest of the header
      return;
    }
    if (h.u32(0) != kFatbinMagic) return fail(fmt::format("no fat binary header (magic {:#010x})", h.u32(0)));
    const uint16_t version = h.u16(4), header_size = h.u16(6);
    const uint64_t fat_size = h.u64(8);
    if (version != 1) return fail(fmt::format("fat binary version {} (1 is known)", version));
    if (header_size < kFatbinHeader || header_size > kMaxContainerHeader || header_size > size_ - at)
      return fail(fmt::format("a fat binary header of {} bytes", header_size));
    if (fat_size > size_ - at - header_size)
      return fail(fmt::format("a fat binary of {} bytes where {} remain", fat_size, size_ - at - header_size));
    container_end_ = at + header_size + fat_size;
    skip_ = header_size - kFatbinHeader;
    want_ = fat_size == 0 ? Want::container : Want::entry;
    need_ = want_ == Want::container ? 8 : kEntryHeader;
    header_.clear();
    return;
  }
  // An entry: kind, its header's size, its payload's size, architecture, flags.
  const uint16_t kind = h.u16(0);
  const uint32_t header_size = h.u32(4), arch = h.u32(28);
  const uint64_t payload = h.u64(8), flags = h.u64(40);
  if (header_size < kEntryHeader || header_size > kMaxEntryHeader || header_size > container_end_ - at)
    return fail(fmt::format("an entry header of {} bytes", header_size));
  if (payload > container_end_ - at - header_size)
    return fail(fmt::format("an entry of {} bytes where its fat binary has {} left", payload,
                            container_end_ - at - header_size));
  if (kind != kKindPtx && kind != kKindElf)
    return fail(fmt::format("an entry of kind {} (1 PTX and 2 ELF are known)", kind));
  if (arch < 10 || arch > 999) return fail(fmt::format("an entry for architecture {}", arch));
  if ((flags & kArchSpecific) && (flags & kFamily)) return fail("an entry both arch-specific and family-specific");
  GpuCode code;
  code.kind = kind == kKindPtx ? GpuCode::Kind::ptx : GpuCode::Kind::sass;
  code.arch = static_cast<uint16_t>(arch);
  code.suffix = (flags & kArchSpecific) ? 'a' : (flags & kFamily) ? 'f' : 0;
  result_.code.insert(code);
  skip_ = header_size - kEntryHeader + payload;
  const uint64_t next = at + header_size + payload;
  if (next == container_end_) {
    want_ = Want::container;
    need_ = 8;
  } else if (container_end_ - next < kEntryHeader) {
    return fail(fmt::format("{} bytes after an entry, too few for another", container_end_ - next));
  } else {
    need_ = kEntryHeader;
  }
  header_.clear();
}

GpuCodeScan FatbinWalker::finish() && {
  if (result_.unreadable.empty()) {
    if (seen_ != size_)
      result_.unreadable = fmt::format("{} of its {} bytes read", seen_, size_);
    else if (skip_ > 0 || want_ == Want::entry)
      result_.unreadable = "it ends inside a fat binary";
    else if (!std::all_of(header_.begin(), header_.end(), [](uint8_t b) { return b == 0; }))
      result_.unreadable = "it ends inside a fat binary header";
  }
  return std::move(result_);
}

}  // namespace wm
