// Just enough ELF to order the preloading of private shared libraries: whether a file is a
// shared object, its SONAME and its DT_NEEDED entries. Fed with the member's content while it
// streams by, so no file is held whole; the dynamic string table is usually inside the kept
// prefix, and otherwise one more ranged read fetches it.
#pragma once

#include "merger/base/bytes.hpp"

#include <array>
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
// Symbol versions a file needs (DT_VERNEED's entries, "GLIBC_2.34" of libc.so.6): a real
// library needs a few dozen; they are read from at most kMaxElfVersionBytes of its
// .gnu.version_r.
inline constexpr size_t kMaxElfVersionNeeds = 4096;
inline constexpr uint64_t kMaxElfVersionBytes = 1 << 20;
// The dynamic string table read past the kept prefix: libtorch_cpu.so's is 5.5 MB, libtorch_cuda.so's
// 4.3 MB; a larger one is not read (the file is then known by its header alone).
inline constexpr uint64_t kMaxElfStringBytes = 64 << 20;

// e_machine values of code that runs on no host: GPU code objects (NVIDIA's cubins, AMD's code
// objects) and BPF programs, which wheels of every platform may carry.
inline constexpr uint16_t kElfMachineCuda = 190, kElfMachineAmdgpu = 224, kElfMachineBpf = 247;

// One version a file needs of a library: vn_file and vna_name of .gnu.version_r.
struct ElfVersionNeed {
  std::string file;     // "libc.so.6"
  std::string version;  // "GLIBC_2.34"
  bool operator==(const ElfVersionNeed&) const = default;
};

// What the identification and e_machine say: the machine the file's code is for.
struct ElfHeader {
  uint16_t machine = 0;   // e_machine, in the file's byte order
  uint8_t elf_class = 0;  // EI_CLASS: 1 32-bit, 2 64-bit
  uint8_t data = 0;       // EI_DATA: 1 little-endian, 2 big-endian
  bool operator==(const ElfHeader&) const = default;
};

struct ElfInfo {
  bool shared_object = false;  // ET_DYN
  std::string soname;
  std::vector<std::string> needed;
  ElfHeader header;
  // Whether the dynamic section was read; when not (a big-endian file, one whose program
  // headers or dynamic section cannot be read), soname and needed are empty and only the
  // header is known.
  bool linkage_read = true;
  std::vector<ElfVersionNeed> version_needs;  // in the file's order
  // Whether version_needs is all the file needs: false when its .gnu.version_r could not be
  // read whole (an entry past the bytes read, a name that is none).
  bool versions_read = true;
};

// Whether the first bytes of a file are a PE/COFF image (a Windows .pyd, .dll or .exe): the
// MZ header's e_lfanew points, inside `head`, at the "PE\0\0" signature. Native code that
// wheelmerge stores per build, like ELF files; the rest of the format is not read.
bool is_pe_image(std::span<const uint8_t> head);

// The machine of a PE/COFF image whose headers `head` holds (IMAGE_FILE_HEADER.Machine: 0x8664
// x64, 0xaa64 ARM64, 0xa641 ARM64EC, 0x14c x86), nullopt for anything else.
std::optional<uint16_t> pe_machine(std::span<const uint8_t> head);

// The DLLs a PE image imports (its import directory: each descriptor's Name, as `objdump -p`
// and pefile list them; then its delay-load directory's, loaded at first use), read from the
// file's bytes as they stream by. The headers and section table come from the first kPeHead
// bytes; the import directory's section is then kept from kPeBefore before the directory to
// kPeAfter after it, where linkers put the DLL names. What that leaves out (a directory or a
// name elsewhere) is asked for with missing() and given with add() in further passes, two at
// most. At most kMaxPeImports DLLs in all, of kMaxPeName bytes each.
class PeImportScanner {
 public:
  static constexpr uint64_t kPeHead = 64 << 10, kPeBefore = 256 << 10, kPeAfter = 1 << 20;
  static constexpr size_t kMaxPeImports = 4096, kMaxPeName = 256;
  explicit PeImportScanner(uint64_t file_size) : size_(file_size) {}
  void feed(std::span<const uint8_t> chunk);
  // After the whole file was fed (and after each add()): the ranges still needed.
  std::vector<ByteRange> missing() const;
  void add(const ByteRange& range, std::vector<uint8_t> bytes);
  // The DLL names, once missing() is empty; nullopt where the image's headers or import
  // directory cannot be read (`why` says why).
  std::optional<std::vector<std::string>> imports(std::string& why) const;

 private:
  struct Layout {
    ByteRange directory;                            // the import descriptors, in the file
    ByteRange delayed;                              // the delay-load descriptors, in the file
    uint64_t image_base = 0;                        // for delay-load names given as addresses
    std::vector<std::array<uint32_t, 4>> sections;  // virtual address, virtual size, raw offset, raw size
  };
  std::optional<Layout> layout(std::string& why) const;
  std::optional<uint64_t> offset_of(const Layout& l, uint32_t rva) const;
  // The longest run of bytes kept or added that starts at `offset` (empty when none).
  std::span<const uint8_t> from(uint64_t offset) const;
  // The bytes of [offset, offset + size) where kept or added; nullopt otherwise.
  std::optional<std::span<const uint8_t>> bytes(uint64_t offset, uint64_t size) const;
  // The descriptors' name offsets, imports then delay-loads; nullopt with `why` where a
  // directory cannot be read, without where its bytes are not there yet.
  std::optional<std::vector<uint64_t>> name_offsets(const Layout& l, std::string& why) const;
  uint64_t size_, seen_ = 0;
  std::vector<uint8_t> head_;
  ByteRange window_;
  std::vector<uint8_t> kept_;                                      // the window's bytes fed so far
  std::vector<std::pair<ByteRange, std::vector<uint8_t>>> added_;  // sorted by offset
};

// The CPU types of a Mach-O file whose header `head` holds: a thin file's `cputype`
// (0x1000007 x86_64, 0x100000c arm64, 7 i386, 18 ppc, 0x1000012 ppc64), or each slice's of a
// universal ("fat") file (big-endian fat_arch or fat_arch_64 entries). As file(1) does, a fat
// magic with more than kMaxMachoSlices slices, or a slice of no CPU type of these, is no Mach-O
// file (Java class files share the 0xcafebabe magic, their version where the count is); nullopt
// for anything else.
inline constexpr uint32_t kMaxMachoSlices = 16;
std::optional<std::vector<uint32_t>> macho_cpu_types(std::span<const uint8_t> head);

class ElfScanner {
 public:
  static bool has_magic(std::span<const uint8_t> head);

  // Consecutive chunks of the file from offset 0.
  void feed(std::span<const uint8_t> chunk);

  // After the whole file was fed: the string table range still missing, if any, and the bytes of
  // the version needs (.gnu.version_r, from DT_VERNEED) still missing, if any: a library
  // larger than the kept prefix may have either past it (libtorch_cuda.so has both).
  std::optional<ByteRange> missing_strings() const;
  std::optional<ByteRange> missing_versions() const;
  // The result; `strings` and `versions` supply the missing ranges when missing_strings() and
  // missing_versions() asked for them. nullopt when the file is not a well-formed ELF we can read.
  // `beyond_limits`, when given, says why a file was not read because it passes the limits on
  // DT_NEEDED entries, version needs and name lengths (no real library comes near them).
  std::optional<ElfInfo> finish(std::span<const uint8_t> strings = {}, std::string* beyond_limits = nullptr,
                                std::span<const uint8_t> versions = {}) const;
  // The header of what was fed: nullopt unless it is a whole ELF header as readelf reads one
  // (the magic, a class and byte order of ELF's, version 1, 52 or 64 bytes).
  std::optional<ElfHeader> header() const;

 private:
  struct Layout;
  std::optional<Layout> layout() const;
  std::vector<uint8_t> prefix_;   // the first kPrefix bytes
  std::vector<uint8_t> dynamic_;  // the PT_DYNAMIC segment, once located
  uint64_t seen_ = 0;
  std::optional<ByteRange> dynamic_range_;
  bool dynamic_located_ = false;
};

// The section header table of a 64-bit little-endian ELF file, read as readelf (binutils) and
// cuobjdump read it, fed with the file's bytes as they stream by: the ELF header, then the
// table and the `window` bytes before it, where linkers put the section names. Extended section
// numbering (the gABI's): an `e_shnum` of 0 with a table present means the count is section 0's
// `sh_size`, an `e_shstrndx` of SHN_XINDEX (0xffff) that the names' index is section 0's
// `sh_link`. The count is bounded by kMaxElfSections and by the file's size before anything is
// kept, so an input cannot make it hold more than the table it has.
inline constexpr uint64_t kMaxElfSections = 1 << 18;

class ElfSectionScanner {
 public:
  struct Section {
    uint32_t name, type;
    uint64_t offset, size;
    uint32_t link;
  };
  enum class State : uint8_t {
    no_table,    // no section header table (e_shoff 0, or a count of 0): no sections at all
    not_elf64,   // not a 64-bit little-endian ELF file, or shorter than its header
    unreadable,  // a table that cannot be read: why_not() says why
    read,
  };
  ElfSectionScanner(uint64_t file_size, uint64_t window) : file_size_(file_size), window_before_(window) {}
  void feed(std::span<const uint8_t> chunk);
  // After the whole file was fed.
  State state() const;
  std::string why_not() const;  // for unreadable
  uint16_t machine() const { return machine_; }
  uint64_t bytes_seen() const { return seen_; }
  std::vector<Section> sections() const;                 // state() == read
  uint64_t names_index() const { return names_index_; }  // < sections().size() when read
  // The bytes of [offset, offset + size) when the kept window holds them.
  std::optional<std::span<const uint8_t>> kept(uint64_t offset, uint64_t size) const;

 private:
  void locate();
  bool resolve_extended();  // true when section 0 gave the count and the window grew
  std::vector<uint8_t> head_, bytes_;
  std::optional<ByteRange> window_;
  uint64_t file_size_, window_before_, seen_ = 0, table_offset_ = 0, count_ = 0, names_index_ = 0;
  uint16_t machine_ = 0;
  bool count_pending_ = false, names_pending_ = false, bytes_lost_ = false;
  State state_ = State::not_elf64;
  std::string why_;
};

}  // namespace wm
