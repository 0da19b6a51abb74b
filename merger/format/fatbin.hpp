// The GPU code a file carries: the entries of the CUDA fat binaries in an ELF file's
// `.nv_fatbin` section, or in a file that is a fat binary, read from their entry headers alone
// (architecture, kind, arch-specific or family flag). The code itself is never inflated or
// held: a shared library holding a gigabyte of kernels costs a few kilobytes here.
//
// The layout (docs/variants.md, "GPU architectures"): a fat binary is a 16-byte header (magic
// 0xBA55ED50, version 1, header size, size of what follows) and its entries, each a header (kind
// at 0: 1 PTX, 2 ELF; its own size at 4; payload size at 8; architecture at 28; flags at 40, of
// which 0x100000 marks arch-specific code such as sm_90a and 0x200000 family code such as
// sm_100f) followed by its payload. A section holds one or more of them, 8-byte aligned.
#pragma once

#include "merger/base/bytes.hpp"

#include <compare>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct GpuCode {
  enum class Kind : uint8_t { sass, ptx };  // machine code for one GPU (cubin), or PTX to compile
  Kind kind = Kind::sass;
  uint16_t arch = 0;  // 90 for sm_90 and compute_90
  char suffix = 0;    // 0, 'a' (this architecture only) or 'f' (its family)
  // "sm_90a", "compute_80": nvcc's and cuobjdump's spelling; parse reads back what str writes.
  std::string str() const;
  static std::optional<GpuCode> parse(std::string_view text);
  auto operator<=>(const GpuCode&) const = default;
};

// Each entry of `code` as str() spells it, in GpuCode's order (SASS before PTX, by architecture).
std::vector<std::string> spelled(const std::set<GpuCode>& code);

// What a file's fat binaries hold; `unreadable` says why they could not be read (truncated,
// an entry past its container, an architecture no GPU has).
struct GpuCodeScan {
  std::set<GpuCode> code;
  std::string unreadable;
};

// Walks the fat binaries of one byte range (a section, or a whole file) fed in consecutive
// chunks, keeping only the distinct code entries: memory bounded by the kinds of code, time
// linear in the bytes. With `one`, it walks the first fat binary alone and takes no bytes after.
class FatbinWalker {
 public:
  explicit FatbinWalker(uint64_t size, bool one = false) : size_(size), one_(one) {}
  static bool has_magic(std::span<const uint8_t> head);
  void feed(std::span<const uint8_t> chunk);
  GpuCodeScan finish() &&;
  // With `one`: whether the first fat binary was read whole; then bytes_seen() is its size.
  bool done() const { return one_ && containers_ > 0 && skip_ == 0 && want_ == Want::container && header_.empty(); }
  bool failed() const { return !result_.unreadable.empty(); }
  uint64_t bytes_seen() const { return seen_; }
  uint64_t headers_read() const { return headers_; }  // container, entry and padding headers
  const std::set<GpuCode>& code() const { return result_.code; }

 private:
  enum class Want : uint8_t { container, entry };
  void take();
  void fail(std::string why);
  uint64_t size_;
  uint64_t seen_ = 0;           // bytes of the range fed so far
  uint64_t skip_ = 0;           // payload bytes still to pass over
  uint64_t container_end_ = 0;  // offset in the range where the current container ends
  uint64_t containers_ = 0;     // fat binaries read whole
  uint64_t headers_ = 0;
  bool one_;
  Want want_ = Want::container;
  size_t need_ = 16;  // header bytes to collect before the next decision
  std::vector<uint8_t> header_;
  GpuCodeScan result_;
};

// The fat binaries of a file whose fat binary ranges are known only after it has streamed by
// (an ELF file's section table comes last), kept as they pass so that a range can be read
// afterwards without streaming the file again: each 8-aligned offset holding the fat binary
// magic starts a walk of one fat binary (FatbinWalker), kept with its code, its end and the zero
// bytes after it. `code_in` puts a range together from them where they show how FatbinWalker
// reads it (each fat binary at an 8-aligned offset, read whole, zero words between), and says it
// cannot otherwise: the caller then walks the range itself. Bounded: kMaxOpenFatbins walks at
// once, kMaxKeptFatbins kept, the zero bytes after one counted up to kMaxFatbinPadding; past
// the first two, or past kHeadersPerByte headers read by all walks per byte fed (a header
// that makes every entry after it a fat binary of its own would make the walks quadratic),
// nothing is put together. Time linear in the bytes.
class FatbinRecorder {
 public:
  static constexpr size_t kMaxOpenFatbins = 16, kMaxKeptFatbins = 1 << 16;
  static constexpr uint64_t kMaxFatbinPadding = 64, kHeadersPerByte = 4, kHeadersAlways = 1 << 16;
  explicit FatbinRecorder(uint64_t file_size) : size_(file_size) {}
  void feed(std::span<const uint8_t> chunk);
  // The code of the fat binaries of `ranges` (sorted, disjoint), or nullopt where what was kept
  // does not show how FatbinWalker reads each whole.
  std::optional<std::set<GpuCode>> code_in(const std::vector<ByteRange>& ranges) const;
  size_t kept() const { return kept_.size(); }

 private:
  struct Kept {
    uint64_t start, end;
    uint64_t zeros_end;  // where the zero bytes after `end` stop (counted to kMaxFatbinPadding)
    bool zeros_open;     // still counting
    std::set<GpuCode> code;
  };
  struct Open {
    uint64_t start;
    FatbinWalker walker;
  };
  void start(uint64_t at, std::span<const uint8_t> before, std::span<const uint8_t> rest, uint64_t rest_at);
  void walk(FatbinWalker& walker, std::span<const uint8_t> bytes);
  void settle(std::span<const uint8_t> chunk, uint64_t pos);
  uint64_t size_, seen_ = 0, headers_ = 0;
  std::vector<uint8_t> carry_;  // the bytes of the last 8-aligned word when fewer than 4 were fed
  std::vector<Open> open_;
  std::vector<Kept> kept_;        // in order of their end; code_in sorts by start
  std::vector<size_t> counting_;  // kept_ whose zero bytes reached the end of what was fed
  bool overflow_ = false;
};

}  // namespace wm
