#include "merger/format/fatbin.hpp"

#include "merger/base/bytes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace wm {

namespace {
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint8_t kMagicBytes[4] = {0x50, 0xED, 0x55, 0xBA};  // as a file holds it
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

std::vector<std::string> spelled(const std::set<GpuCode>& code) {
  std::vector<std::string> out;
  for (const GpuCode& c : code) out.push_back(c.str());
  return out;
}

std::optional<GpuCode> GpuCode::parse(std::string_view text) {
  GpuCode code;
  if (text.starts_with("sm_")) {
    text.remove_prefix(3);
  } else if (text.starts_with("compute_")) {
    code.kind = Kind::ptx;
    text.remove_prefix(8);
  } else {
    return std::nullopt;
  }
  if (!text.empty() && (text.back() == 'a' || text.back() == 'f')) {
    code.suffix = text.back();
    text.remove_suffix(1);
  }
  if (text.size() < 2 || text.size() > 3 || text[0] == '0' ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  for (char c : text) code.arch = static_cast<uint16_t>(code.arch * 10 + (c - '0'));
  return code;
}

bool FatbinWalker::has_magic(std::span<const uint8_t> head) {
  return head.size() >= 4 && ByteView(head.data(), 4).u32(0) == kFatbinMagic;
}

void FatbinWalker::fail(std::string why) {
  if (result_.unreadable.empty()) result_.unreadable = fmt::format("{} (at byte {})", why, seen_ - header_.size());
}

void FatbinWalker::feed(std::span<const uint8_t> chunk) {
  while (!chunk.empty() && result_.unreadable.empty() && !done()) {
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
  ++headers_;
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
    if (fat_size == 0) ++containers_;
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
    ++containers_;
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

void FatbinRecorder::feed(std::span<const uint8_t> chunk) {
  const uint64_t pos = seen_;
  seen_ += chunk.size();
  if (overflow_ || chunk.empty()) return;
  for (Open& o : open_) walk(o.walker, chunk);
  if (overflow_) {
    open_.clear();
    return;
  }
  // The zero bytes after fat binaries kept before: all reached `pos`, so all end where the
  // chunk's first non-zero byte is (or at their cap).
  if (!counting_.empty()) {
    const size_t look = static_cast<size_t>(std::min<uint64_t>(chunk.size(), kMaxFatbinPadding));
    const size_t zeros = static_cast<size_t>(
        std::find_if(chunk.begin(), chunk.begin() + look, [](uint8_t b) { return b != 0; }) - chunk.begin());
    std::erase_if(counting_, [&](size_t i) {
      Kept& k = kept_[i];
      k.zeros_end = std::min(pos + zeros, k.end + kMaxFatbinPadding);
      k.zeros_open = zeros == chunk.size() && k.zeros_end < k.end + kMaxFatbinPadding;
      return !k.zeros_open;
    });
  }
  settle(chunk, pos);
  // A magic begun in the previous chunk, at the 8-aligned offset where carry_ starts.
  if (!carry_.empty() && carry_.size() + chunk.size() >= 4) {
    std::vector<uint8_t> word = carry_;
    word.insert(word.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(4 - carry_.size()));
    if (ByteView(word).u32(0) == kFatbinMagic) start(pos - carry_.size(), carry_, chunk, pos);
  }
  // The 8-aligned words, 64 bytes at a time: one branch per block, which the compiler vectorizes.
  const uint8_t* const bytes = chunk.data();
  auto magic_at = [&](size_t i) { return std::memcmp(bytes + i, kMagicBytes, 4) == 0; };
  size_t i = static_cast<size_t>((8 - pos % 8) % 8);
  for (; i + 64 <= chunk.size() && !overflow_; i += 64) {
    bool any = false;
    for (size_t k = 0; k < 64; k += 8) any |= magic_at(i + k);
    if (any)
      for (size_t k = 0; k < 64 && !overflow_; k += 8)
        if (magic_at(i + k)) start(pos + i + k, {}, chunk.subspan(i + k), pos + i + k);
  }
  for (; i + 4 <= chunk.size() && !overflow_; i += 8)
    if (magic_at(i)) start(pos + i, {}, chunk.subspan(i), pos + i);
  // The bytes of the last word, while too few to tell whether it holds the magic.
  const size_t in_word = static_cast<size_t>(seen_ % 8);
  if (in_word == 0 || in_word >= 4)
    carry_.clear();
  else if (chunk.size() >= in_word)
    carry_.assign(chunk.end() - static_cast<ptrdiff_t>(in_word), chunk.end());
  else
    carry_.insert(carry_.end(), chunk.begin(), chunk.end());
}

// A walk of the fat binary at `at`, fed `before` (bytes already gone by) and `rest`, which starts
// at `rest_at` and runs to the end of the current chunk.
void FatbinRecorder::start(uint64_t at, std::span<const uint8_t> before, std::span<const uint8_t> rest,
                           uint64_t rest_at) {
  if (open_.size() == kMaxOpenFatbins || kept_.size() == kMaxKeptFatbins || at >= size_) {
    overflow_ = true;
    open_.clear();
    return;
  }
  open_.push_back({at, FatbinWalker(size_ - at, true)});
  walk(open_.back().walker, before);
  walk(open_.back().walker, rest);
  if (overflow_) {
    open_.clear();
    return;
  }
  settle(rest, rest_at);
}

void FatbinRecorder::walk(FatbinWalker& walker, std::span<const uint8_t> bytes) {
  const uint64_t before = walker.headers_read();
  walker.feed(bytes);
  headers_ += walker.headers_read() - before;
  if (headers_ > kHeadersAlways + seen_ * kHeadersPerByte) overflow_ = true;
}

// Keeps the walks that read their fat binary whole, with the zero bytes after it that `chunk`
// (at `pos`, the last bytes fed) shows; drops those that could not.
void FatbinRecorder::settle(std::span<const uint8_t> chunk, uint64_t pos) {
  std::erase_if(open_, [&](const Open& o) {
    if (o.walker.failed()) return true;
    if (!o.walker.done()) return false;
    const uint64_t end = o.start + o.walker.bytes_seen(), cap = end + kMaxFatbinPadding;
    Kept k{o.start, end, end, end % 8 == 0 && end >= pos, o.walker.code()};
    if (k.zeros_open) {  // count those within the chunk
      uint64_t at = end;
      while (at < pos + chunk.size() && at < cap && chunk[at - pos] == 0) ++at;
      k.zeros_end = at;
      k.zeros_open = at == pos + chunk.size() && at < cap;
    }
    if (k.zeros_open) counting_.push_back(kept_.size());
    kept_.push_back(std::move(k));
    return true;
  });
}

std::optional<std::set<GpuCode>> FatbinRecorder::code_in(const std::vector<ByteRange>& ranges) const {
  if (overflow_) return std::nullopt;
  std::vector<const Kept*> by_start;
  for (const Kept& k : kept_) by_start.push_back(&k);
  std::sort(by_start.begin(), by_start.end(), [](const Kept* a, const Kept* b) { return a->start < b->start; });
  std::set<GpuCode> code;
  for (const ByteRange& r : ranges) {
    const uint64_t end = r.offset + r.size;
    for (uint64_t at = r.offset; at < end;) {
      auto it = std::lower_bound(by_start.begin(), by_start.end(), at,
                                 [](const Kept* k, uint64_t start) { return k->start < start; });
      if (it == by_start.end() || (*it)->start != at || (*it)->end > end) return std::nullopt;
      const Kept& k = **it;
      code.insert(k.code.begin(), k.code.end());
      // FatbinWalker passes over zero words; the next word is a fat binary, or the range ends.
      at = k.end + (k.zeros_end - k.end) / 8 * 8;
      if (at >= end) {
        if ((end - k.end) % 8 != 0) return std::nullopt;  // a part of a word at the end
        at = end;
      }
    }
  }
  return code;
}

}  // namespace wm
