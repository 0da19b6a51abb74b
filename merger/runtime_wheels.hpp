// The CUDA runtime each build needs: the NVIDIA libraries its native files link that the wheel
// does not bundle, which of NVIDIA's runtime wheels on the package index ships each (for the
// build's CUDA major), and whether the build's requirements bring it (docs/WHEEL_RULES.md,
// "Builds"). Read from the DT_NEEDED entries the one read pass keeps; nothing is read again.
#pragma once

#include "merger/format/label.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct Wheel;

// The runtime wheel that ships a library of this file name for CUDA major `cuda_major` (12 or
// 13): "libcublas.so.12" -> nvidia-cublas-cu12, "libcublas.so.13" -> nvidia-cublas, with the
// extra of NVIDIA's `cuda-toolkit` metapackage that requires it ("cublas"; empty for cuDNN,
// NCCL, NVSHMEM and cuSPARSELt, which it has none of). nullopt for every other library, and for
// a library of another major than the SONAME's (check_native_file refuses that link).
struct RuntimeWheel {
  std::string_view distribution;
  std::string_view toolkit_extra;
};
std::optional<RuntimeWheel> runtime_wheel_of_library(std::string_view name, int cuda_major);

// One library a build links that a runtime wheel ships and the wheel does not bundle (no file
// named so, none with that SONAME), in the order the files link them, each once.
struct RuntimeNeed {
  std::string library;      // "libcublas.so.13"
  std::string member;       // the first file that links it
  size_t files = 0;         // how many files link it
  RuntimeWheel wheel;       // what ships it
  std::string provided_by;  // the requirement that brings it ("cuda-toolkit[cublas]==13.0.2",
                            // "torch"), empty when none does
};
// The needs of the build `label` (a CUDA or torch label; none for CPU levels and CPU-only torch
// builds) of `wheel`: a requirement brings a library when it names the runtime wheel, or
// `cuda-toolkit` with the library's extra (or `all`), under any marker or extra; a torch label's
// build gets torch's own CUDA libraries from torch (which requires them), all but NPP and
// nvJPEG.
// With `build_of` (a merged wheel's variant files -> their build), the files of other builds
// are left out.
std::vector<RuntimeNeed> runtime_needs(const Wheel& wheel, const VariantLabel& label,
                                       const std::map<std::string, VariantLabel, std::less<>>* build_of = nullptr);

// A warning per need no requirement brings, naming the build, the file, the library and the
// distribution to require.
std::vector<std::string> runtime_warnings(const std::string& display, const VariantLabel& label,
                                          const std::vector<RuntimeNeed>& needs);

// The requirements that bring the needs no requirement brings (`merge --runtime-requirements`):
// one on NVIDIA's cuda-toolkit with the extras of those libraries, pinned to the build's CUDA
// major as CuPy and torch require it (`cuda-toolkit[cublas,cudart]==13.*`: the runtime wheels'
// own versions do not follow the CUDA major, nvidia-cufft 12.0 is CUDA 13's), then one on each
// runtime wheel the metapackage has no extra for (nvidia-nccl-cu13, named for its major); none
// when every need is brought.
std::vector<std::string> runtime_requirements(const VariantLabel& label, const std::vector<RuntimeNeed>& needs);

// Adds those requirements to the build `wheel` (its parsed requirements and METADATA's
// Requires-Dist fields alike, so a merge makes them conditional on the build's extra where the
// builds differ); returns them.
std::vector<std::string> require_runtime_wheels(Wheel& wheel, const VariantLabel& label);

}  // namespace wm
