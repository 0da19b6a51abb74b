// The GPU code of a wheel's files: each native member's CUDA fat binaries (merger/format/fatbin,
// read through the ELF section table of merger/format/elf) as the member streams by, the sm_arch values a build's code
// supports, and whether a variant wheel's sm_arch claims are backed.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/elf.hpp"
#include "merger/format/fatbin.hpp"
#include "merger/zip/zip_archive.hpp"

#include <compare>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace wm {

// The GPU code of one archive member, read from the bytes of the pass that streams the member
// anyway (read_wheel's, which digests it): a file named `.fatbin` that starts with the fat
// binary magic is walked as it streams; an ELF file's section table is kept as it streams by
// (64-bit, little-endian, read as readelf reads it, extended numbering included:
// ElfSectionScanner), with where the name ".nv_fatbin" occurs and its fat binaries
// (FatbinRecorder), and its `.nv_fatbin` sections are read from those afterwards. One more pass
// over the member only where the first did not keep enough (more such names than it keeps; fat
// binaries the recorder could not put together), two at most. Empty code for any other file, for an ELF file
// without sections and for a cubin; unreadable, with why, for an ELF file whose section table
// cannot be read.
class GpuCodeScanner {
 public:
  // A scanner for a member of `size` bytes whose first bytes are `head`; nullopt for a file
  // that holds no GPU code to read. `fatbin_name`: the member is named `*.fatbin`.
  static std::optional<GpuCodeScanner> start(std::span<const uint8_t> head, uint64_t size, bool fatbin_name);
  // The member's bytes, from its first.
  void feed(std::span<const uint8_t> chunk);
  // After the member was fed whole: its code; nullopt, with `problem`, where a further pass
  // cannot stream the member.
  std::optional<GpuCodeScan> finish(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                    std::optional<Problem>& problem);
  int further_passes() const { return passes_; }  // that finish took

  // Where the bytes ".nv_fatbin\0" occur in a member fed in chunks, in order: a section's name
  // is that exactly where its offset into the section names is one of them, so the names need
  // not be kept. Past kMaxNameHits, the names are read in one more pass.
  struct NameHits {
    static constexpr size_t kMaxNameHits = 4096;
    std::vector<uint64_t> at;
    std::vector<uint8_t> carry;  // the last bytes fed, for a name across chunks
    uint64_t seen = 0;
    bool overflow = false;
    void feed(std::span<const uint8_t> chunk);
  };

 private:
  GpuCodeScanner() = default;
  std::optional<FatbinWalker> fatbin_;
  std::optional<ElfSectionScanner> elf_;
  std::optional<FatbinRecorder> recorder_;
  NameHits names_;
  int passes_ = 0;
};

// GpuCodeScanner over one stream of the member: the GPU code of a member read alone.
std::optional<GpuCodeScan> scan_gpu_code(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                         std::optional<Problem>& problem, int* further_passes = nullptr);

// The values of the NVIDIA provider's `sm_arch` feature that a build's GPU code supports, given
// the code of each of its files that has any. A GPU of compute capability X.Y matches the
// values XY_real .. X0_real and X0_virtual (the provider's rule), so a value is given only where
// every such file runs on every GPU it matches: SASS sm_XY (or its family, sm_XYf) covers X.Z
// for Z >= Y, PTX compute_X0 (or compute_X0f) covers every X.Z; arch-specific code (sm_90a) and
// PTX of a minor above 0 cover no value's whole range and add none. One value per major: the
// lowest minor every file covers, `_virtual` where only PTX covers it. `notes` say what the
// values cannot express (PTX that newer majors would also compile; files with no value).
struct SmArch {
  std::vector<std::string> values;  // sorted as the provider's catalog spells them
  std::vector<std::string> notes;
};
SmArch sm_arch_values(const std::vector<std::pair<std::string, std::set<GpuCode>>>& files);

// Why a variant wheel's nvidia :: sm_arch values `claimed` promise GPUs its build's code does
// not run on, or empty. A value XY_real or XY_virtual is matched by GPUs X.Y and later of major
// X; it is backed where `supported` (build_sm_arch of the wheel) has a value of major X whose
// minor is at most Y, so every file runs there. Values of no form the provider's catalog has
// (not MAJORMINOR_real or MAJOR0_virtual for majors 5 to 12) are refused as unreadable. A build
// with no GPU code runs on any GPU: every claim is backed. The problem has what, expected and
// found; the caller names the file and member.
std::optional<Problem> sm_arch_claim_problem(const std::vector<std::string>& claimed, const SmArch& supported,
                                             bool has_gpu_code);

// The GPU code of every file of a build that has any (ELF files and `.fatbin` files), in archive
// order (build_gpu_code in merger/wheel.hpp); files whose fat binaries could not be read apart,
// with why.
struct BuildGpuCode {
  std::vector<std::pair<std::string, std::set<GpuCode>>> files;
  std::vector<std::pair<std::string, std::string>> unreadable;
};

// A build's sm_arch values: none, with a note per file, where a file's fat binaries could not
// be read (leaving it out could claim GPUs it has no code for), none where no file has GPU code,
// else sm_arch_values of its files. `variants` and `inspect --gpu-code` both ask this.
SmArch build_sm_arch(const BuildGpuCode& code);

}  // namespace wm
