// Whether each build's native files are what its label and tags say: the machine their code is
// for against the wheel's platform tags, and the CUDA libraries they link against the label's
// CUDA major (docs/WHEEL_RULES.md, "Builds"). Read from the ELF headers and DT_NEEDED entries
// that the one read pass keeps (merger/format/elf.hpp); no file is read again.
#pragma once

#include "merger/base/problem.hpp"
#include "merger/format/elf.hpp"
#include "merger/format/label.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct Wheel;

// The CUDA majors whose toolkits and runtime wheels ship a library of this file name
// ("libcudart.so.12" -> {12}, "libcufft.so.11" -> {12}, "libcusolver.so.11" -> {11, 12}), for
// NVIDIA's libraries whose SONAME changes with the toolkit; nullopt for every other name
// (libcurand.so.10, libcudnn.so.9 and libnccl.so.2 are the same for CUDA 12 and 13).
std::optional<std::vector<int>> cuda_majors_of_library(std::string_view name);

// The same for the Windows DLL of such a library ("cudart64_12.dll" -> {12}, "cufft64_11.dll"
// -> {12}, "nvrtc64_120_0.dll" -> {12}, "nvJitLink_130_0.dll" -> {13}), in any case.
std::optional<std::vector<int>> cuda_majors_of_dll(std::string_view name);

// The ELF headers native files of these platform tags may have: one machine, class and byte order
// per architecture the Linux tags name (manylinux, musllinux, linux); empty when no tag is a
// Linux one of a known architecture (any, win_amd64, macosx_...), where ELF files are not checked.
std::vector<ElfHeader> elf_headers_of_platforms(const std::vector<std::string>& platform_tags);

// What the platform tags promise of the C library: the newest glibc a file may need (the lowest
// manylinux_X_Y among them: an installer takes the wheel on every system one tag matches), or
// none at all (musllinux tags alone); nothing for other tags.
struct GlibcLimit {
  std::optional<std::pair<int, int>> newest;
  bool musl = false;
  std::string tag;  // the tag that sets it, for messages
};
GlibcLimit glibc_limit_of_platforms(const std::vector<std::string>& platform_tags);

// "x86-64 (64-bit, little-endian)": a header as messages name it.
std::string describe_elf_header(const ElfHeader& header);

// The builds of one CUDA major a file belongs to: the first, for messages, and how many.
struct BuildsOfMajor {
  VariantLabel first;
  size_t count = 0;
};

// What one native file must fit: the wheel's machines and glibc, and the CUDA majors of the
// builds it belongs to (a merged wheel's shared file belongs to every build), each major once
// however many builds have it, so a file costs its DT_NEEDED entries times the majors.
struct LinkageTarget {
  std::string platforms;           // the wheel's platform tags, for messages
  std::vector<ElfHeader> headers;  // elf_headers_of_platforms; empty: any
  GlibcLimit glibc;
  std::map<int, BuildsOfMajor> majors;  // CUDA major -> builds (0: CPU-only torch builds); CPU levels none
};
// The target of the builds `builds` (in any order, each once) in a wheel of these platform tags.
LinkageTarget linkage_target(const std::vector<std::string>& platform_tags, const std::vector<VariantLabel>& builds);

// The problems of member `member` of `display` (invalid_input): a machine of none of the
// target's headers (GPU code, EM_CUDA and EM_AMDGPU, and BPF programs are no host's and fit
// every wheel), a glibc symbol version newer than the tags allow (any, for musllinux: the
// newest one needed is named), a CUDA library of another major than a build's (a CPU-only torch
// build's: any; one problem per major, naming the first such library and counting the rest).
void check_native_file(const std::string& display, std::string_view member, const ElfInfo& elf,
                       const LinkageTarget& target, Problems& problems);

// check_native_file over every ELF file of `wheel`; `build_of` maps a member to the label of the
// build it belongs to (a merged wheel's variant files), and every other file belongs to all of
// `builds`.
void check_native_files(const Wheel& wheel, const std::vector<VariantLabel>& builds,
                        const std::map<std::string, VariantLabel, std::less<>>& build_of, Problems& problems);

// The libstdc++ symbol versions (GLIBCXX_3.4.N, CXXABI_1.3.M) the wheel's native files need
// beyond what its manylinux tag's auditwheel policy allows, as one warning naming the file that
// needs the newest and how many files do; nothing within it. A warning, not a refusal: CuPy's
// manylinux2014 wheels need GLIBCXX_3.4.21 and install everywhere pip finds a newer libstdc++
// (docs/WHEEL_RULES.md has the exception and its sources).
std::optional<std::string> libstdcxx_warning(const Wheel& wheel);

}  // namespace wm
