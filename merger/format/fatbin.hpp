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

#include <compare>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace wm {

struct GpuCode {
  enum class Kind : uint8_t { sass, ptx };  // machine code for one GPU (cubin), or PTX to compile
  Kind kind = Kind::sass;
  uint16_t arch = 0;  // 90 for sm_90 and compute_90
  char suffix = 0;    // 0, 'a' (this architecture only) or 'f' (its family)
  // "sm_90a", "compute_80": nvcc's and cuobjdump's spelling.
  std::string str() const;
  auto operator<=>(const GpuCode&) const = default;
};

// What a file's fat binaries hold; `unreadable` says why they could not be read (truncated,
// an entry past its container, an architecture no GPU has).
struct GpuCodeScan {
  std::set<GpuCode> code;
  std::string unreadable;
};

// Walks the fat binaries of one byte range (a section, or a whole file) fed in consecutive
// chunks, keeping only the distinct code entries: memory bounded by the kinds of code, time
// linear in the bytes.
class FatbinWalker {
 public:
  explicit FatbinWalker(uint64_t size) : size_(size) {}
  static bool has_magic(std::span<const uint8_t> head);
  void feed(std::span<const uint8_t> chunk);
  GpuCodeScan finish() &&;

 private:
  enum class Want : uint8_t { container, entry };
  void take();
  void fail(std::string why);
  uint64_t size_;
  uint64_t seen_ = 0;           // bytes of the range fed so far
  uint64_t skip_ = 0;           // payload bytes still to pass over
  uint64_t container_end_ = 0;  // offset in the range where the current container ends
  Want want_ = Want::container;
  size_t need_ = 16;  // header bytes to collect before the next decision
  std::vector<uint8_t> header_;
  GpuCodeScan result_;
};

}  // namespace wm
