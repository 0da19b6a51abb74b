// The GPU code of a wheel's files: each native member's CUDA fat binaries (merger/format/fatbin,
// read through the ELF section table of merger/format/elf), the sm_arch values a build's code
// supports, and whether a variant wheel's sm_arch claims are backed.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/elf.hpp"
#include "merger/format/fatbin.hpp"
#include "merger/wheel.hpp"
#include "merger/zip/zip_archive.hpp"

#include <compare>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace wm {

// The GPU code of one archive member: an ELF file's `.nv_fatbin` section (64-bit,
// little-endian, its section table read as readelf reads it, extended numbering included
// (ElfSectionScanner); two passes over the member where the section names lie outside what the
// first pass keeps, three at most), or a file starting with the fat binary magic. Empty code for
// any other file and for an ELF file without sections; unreadable, with why, for an ELF file
// whose section table cannot be read. A member the archive cannot stream gives its problem.
std::optional<GpuCodeScan> scan_gpu_code(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                         std::optional<Problem>& problem);

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
// order, read on every core; files whose fat binaries could not be read apart, with why. A
// member the archive cannot stream (read before, so only on a change underneath) is a problem.
struct BuildGpuCode {
  std::vector<std::pair<std::string, std::set<GpuCode>>> files;
  std::vector<std::pair<std::string, std::string>> unreadable;
};
BuildGpuCode build_gpu_code(const Wheel& wheel, Problems& problems);

// A build's sm_arch values: none, with a note per file, where a file's fat binaries could not
// be read (leaving it out could claim GPUs it has no code for), none where no file has GPU code,
// else sm_arch_values of its files. `variants` and `inspect --gpu-code` both ask this.
SmArch build_sm_arch(const BuildGpuCode& code);

}  // namespace wm
