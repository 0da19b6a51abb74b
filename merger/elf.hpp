// Just enough ELF to order the preloading of private shared libraries: whether a file is a
// shared object, its SONAME and its DT_NEEDED entries. Fed with the member's content while it
// streams by, so no file is held whole; the dynamic string table is usually inside the kept
// prefix, and otherwise one more ranged read fetches it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wm {

// Past these an ELF file is refused: no real library comes near them, and they bound what
// an input can make wheelmerge hold (150,000 DT_NEEDED entries naming one 1 MiB string).
inline constexpr size_t kMaxElfNeeded = 4096;
inline constexpr size_t kMaxElfNameBytes = 4096;

struct ElfInfo {
  bool shared_object = false;  // ET_DYN
  std::string soname;
  std::vector<std::string> needed;
};

struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Whether the first bytes of a file are a PE/COFF image (a Windows .pyd, .dll or .exe): the
// MZ header's e_lfanew points, inside `head`, at the "PE\0\0" signature. Native code that
// wheelmerge stores per build, like ELF files; the rest of the format is not read.
bool is_pe_image(std::span<const uint8_t> head);

class ElfScanner {
 public:
  static bool has_magic(std::span<const uint8_t> head);

  // Consecutive chunks of the file from offset 0.
  void feed(std::span<const uint8_t> chunk);

  // After the whole file was fed: the string table range still missing, if any.
  std::optional<ByteRange> missing_strings() const;
  // The result; `strings` supplies the missing range when missing_strings() asked for one.
  // nullopt when the file is not a well-formed ELF we can read.
  // `beyond_limits`, when given, says why a file was not read because it passes the limits on
  // DT_NEEDED entries and name lengths (no real library comes near them).
  std::optional<ElfInfo> finish(std::span<const uint8_t> strings = {}, std::string* beyond_limits = nullptr) const;

 private:
  struct Layout;
  std::optional<Layout> layout() const;
  std::vector<uint8_t> prefix_;   // the first kPrefix bytes
  std::vector<uint8_t> dynamic_;  // the PT_DYNAMIC segment, once located
  uint64_t seen_ = 0;
  std::optional<ByteRange> dynamic_range_;
  bool dynamic_located_ = false;
};

}  // namespace wm
