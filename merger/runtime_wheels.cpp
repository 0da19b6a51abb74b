#include "merger/runtime_wheels.hpp"

#include "merger/format/wheel_name.hpp"
#include "merger/linkage.hpp"
#include "merger/wheel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cassert>
#include <map>
#include <set>
#include <string_view>

namespace wm {

namespace {

// Which runtime wheel ships each library, per CUDA major. Read from the libraries (their
// SONAMEs) of the nvidia-* wheels torch 2.10.0 (CUDA 12.8) and 2.11.0 (CUDA 13.0) require, and
// from the extras of NVIDIA's cuda-toolkit 13.0.2 metapackage (`cuda-toolkit[cublas]` requires
// nvidia-cublas; NPP and nvJPEG, which torch does not require, from there alone); CUDA 13's
// wheels are unsuffixed but cuDNN's, NCCL's, NVSHMEM's and cuSPARSELt's. `base` is the file
// name between "lib" and ".so"; a trailing '*' matches every name it begins (libcudnn_ops,
// libnppc). `torch`: torch's CUDA builds require it, so a torch build's torch brings it.
struct RuntimeLibrary {
  int major;
  std::string_view base;
  std::string_view distribution;
  std::string_view toolkit_extra;
  bool torch;
};
constexpr RuntimeLibrary kRows[] = {
    {12, "cudart", "nvidia-cuda-runtime-cu12", "cudart", true},
    {12, "cublas", "nvidia-cublas-cu12", "cublas", true},
    {12, "cublasLt", "nvidia-cublas-cu12", "cublas", true},
    {12, "nvblas", "nvidia-cublas-cu12", "cublas", true},
    {12, "cupti", "nvidia-cuda-cupti-cu12", "cupti", true},
    {12, "checkpoint", "nvidia-cuda-cupti-cu12", "cupti", true},
    {12, "nvperf_host", "nvidia-cuda-cupti-cu12", "cupti", true},
    {12, "nvperf_target", "nvidia-cuda-cupti-cu12", "cupti", true},
    {12, "pcsamplingutil", "nvidia-cuda-cupti-cu12", "cupti", true},
    {12, "nvrtc", "nvidia-cuda-nvrtc-cu12", "nvrtc", true},
    {12, "nvrtc.alt", "nvidia-cuda-nvrtc-cu12", "nvrtc", true},
    {12, "nvrtc-builtins", "nvidia-cuda-nvrtc-cu12", "nvrtc", true},
    {12, "nvrtc-builtins.alt", "nvidia-cuda-nvrtc-cu12", "nvrtc", true},
    {12, "cudnn", "nvidia-cudnn-cu12", "", true},
    {12, "cudnn_*", "nvidia-cudnn-cu12", "", true},
    {12, "cufft", "nvidia-cufft-cu12", "cufft", true},
    {12, "cufftw", "nvidia-cufft-cu12", "cufft", true},
    {12, "cufile", "nvidia-cufile-cu12", "cufile", true},
    {12, "cufile_rdma", "nvidia-cufile-cu12", "cufile", true},
    {12, "curand", "nvidia-curand-cu12", "curand", true},
    {12, "cusolver", "nvidia-cusolver-cu12", "cusolver", true},
    {12, "cusolverMg", "nvidia-cusolver-cu12", "cusolver", true},
    {12, "cusparse", "nvidia-cusparse-cu12", "cusparse", true},
    {12, "cusparseLt", "nvidia-cusparselt-cu12", "", true},
    {12, "nccl", "nvidia-nccl-cu12", "", true},
    {12, "nvJitLink", "nvidia-nvjitlink-cu12", "nvjitlink", true},
    {12, "nvshmem_host", "nvidia-nvshmem-cu12", "", true},
    {12, "nvToolsExt", "nvidia-nvtx-cu12", "nvtx", true},
    {12, "npp*", "nvidia-npp-cu12", "npp", false},
    {12, "nvjpeg", "nvidia-nvjpeg-cu12", "nvjpeg", false},
    {13, "cudart", "nvidia-cuda-runtime", "cudart", true},
    {13, "cublas", "nvidia-cublas", "cublas", true},
    {13, "cublasLt", "nvidia-cublas", "cublas", true},
    {13, "nvblas", "nvidia-cublas", "cublas", true},
    {13, "cupti", "nvidia-cuda-cupti", "cupti", true},
    {13, "checkpoint", "nvidia-cuda-cupti", "cupti", true},
    {13, "nvperf_host", "nvidia-cuda-cupti", "cupti", true},
    {13, "nvperf_target", "nvidia-cuda-cupti", "cupti", true},
    {13, "pcsamplingutil", "nvidia-cuda-cupti", "cupti", true},
    {13, "nvrtc", "nvidia-cuda-nvrtc", "nvrtc", true},
    {13, "nvrtc.alt", "nvidia-cuda-nvrtc", "nvrtc", true},
    {13, "nvrtc-builtins", "nvidia-cuda-nvrtc", "nvrtc", true},
    {13, "nvrtc-builtins.alt", "nvidia-cuda-nvrtc", "nvrtc", true},
    {13, "cudnn", "nvidia-cudnn-cu13", "", true},
    {13, "cudnn_*", "nvidia-cudnn-cu13", "", true},
    {13, "cufft", "nvidia-cufft", "cufft", true},
    {13, "cufftw", "nvidia-cufft", "cufft", true},
    {13, "cufile", "nvidia-cufile", "cufile", true},
    {13, "cufile_rdma", "nvidia-cufile", "cufile", true},
    {13, "curand", "nvidia-curand", "curand", true},
    {13, "cusolver", "nvidia-cusolver", "cusolver", true},
    {13, "cusolverMg", "nvidia-cusolver", "cusolver", true},
    {13, "cusparse", "nvidia-cusparse", "cusparse", true},
    {13, "cusparseLt", "nvidia-cusparselt-cu13", "", true},
    {13, "nccl", "nvidia-nccl-cu13", "", true},
    {13, "nvJitLink", "nvidia-nvjitlink", "nvjitlink", true},
    {13, "nvshmem_host", "nvidia-nvshmem-cu13", "", true},
    {13, "nvtx3interop", "nvidia-nvtx", "nvtx", true},
    {13, "npp*", "nvidia-npp", "npp", false},
    {13, "nvjpeg", "nvidia-nvjpeg", "nvjpeg", false},
};

// The file name's part between "lib" and ".so" ("libcudnn_ops.so.9" -> "cudnn_ops"); empty for
// a name of no such form.
std::string_view library_base(std::string_view name) {
  const size_t so = name.find(".so");
  if (!name.starts_with("lib") || so == std::string_view::npos || so <= 3) return {};
  if (so + 3 != name.size() && name[so + 3] != '.') return {};
  return name.substr(3, so - 3);
}

const RuntimeLibrary* row_of(std::string_view name, int cuda_major) {
  const std::string_view base = library_base(name);
  if (base.empty()) return nullptr;
  for (const RuntimeLibrary& row : kRows) {
    if (row.major != cuda_major) continue;
    const bool prefix = row.base.ends_with('*');
    const std::string_view stem = prefix ? row.base.substr(0, row.base.size() - 1) : row.base;
    if (prefix ? base.starts_with(stem) && base.size() > stem.size() : base == stem) return &row;
  }
  return nullptr;
}

// The requirement of `wheel` that brings `row`'s wheel, as written, or empty.
std::string provider(const Wheel& wheel, const RuntimeLibrary& row) {
  for (const Requirement& r : wheel.requires_dist) {
    const std::string name = normalize_name(r.name);  // "cuda_toolkit"
    if (name == normalize_name(row.distribution)) return r.to_string();
    if (name == "cuda_toolkit" && !row.toolkit_extra.empty())
      for (const std::string& extra : r.extras)
        if (normalize_name(extra) == row.toolkit_extra || normalize_name(extra) == "all") return r.to_string();
  }
  return {};
}
}  // namespace

std::optional<RuntimeWheel> runtime_wheel_of_library(std::string_view name, int cuda_major) {
  // A library of another major (libcudart.so.12 for CUDA 13) is check_native_file's refusal.
  if (auto majors = cuda_majors_of_library(name);
      majors && std::find(majors->begin(), majors->end(), cuda_major) == majors->end())
    return std::nullopt;
  const RuntimeLibrary* row = row_of(name, cuda_major);
  if (!row) return std::nullopt;
  return RuntimeWheel{row->distribution, row->toolkit_extra};
}

std::vector<RuntimeNeed> runtime_needs(const Wheel& wheel, const VariantLabel& label,
                                       const std::map<std::string, VariantLabel, std::less<>>* build_of) {
  const int major = label.cuda_major();
  if (major == 0) return {};
  // The libraries of the table its files link, in link order: few, however many files there are.
  std::vector<RuntimeNeed> needs;
  std::map<std::string, size_t, std::less<>> seen;  // library -> position in needs
  for (const WheelFile& f : wheel.files) {
    if (!f.elf_info) continue;
    if (build_of)
      if (auto it = build_of->find(f.path); it != build_of->end() && it->second != label) continue;
    for (const std::string& library : f.elf_info->needed) {
      if (auto at = seen.find(library); at != seen.end()) {
        ++needs[at->second].files;
        continue;
      }
      if (!runtime_wheel_of_library(library, major)) continue;
      const RuntimeLibrary& row = *row_of(library, major);
      std::string by = label.selector() == Selector::torch && row.torch ? "torch" : provider(wheel, row);
      seen.emplace(library, needs.size());
      needs.push_back({library, std::string(f.path), 1, {row.distribution, row.toolkit_extra}, std::move(by)});
    }
  }
  if (needs.empty()) return needs;
  // Those the wheel bundles (a file of that name or SONAME) need no runtime wheel.
  std::vector<bool> bundled(needs.size(), false);
  const auto mark = [&](std::string_view name) {
    if (auto at = seen.find(name); at != seen.end()) bundled[at->second] = true;
  };
  for (const WheelFile& f : wheel.files) {
    mark(f.path.substr(f.path.rfind('/') + 1));
    if (f.elf_info && !f.elf_info->soname.empty()) mark(f.elf_info->soname);
  }
  std::vector<RuntimeNeed> kept;
  for (size_t i = 0; i < needs.size(); ++i)
    if (!bundled[i]) kept.push_back(std::move(needs[i]));
  return kept;
}

std::vector<std::string> runtime_warnings(const std::string& display, const VariantLabel& label,
                                          const std::vector<RuntimeNeed>& needs) {
  std::vector<std::string> warnings;
  for (const RuntimeNeed& need : needs) {
    if (!need.provided_by.empty()) continue;
    const std::string others = need.files > 1 ? fmt::format(" (and {} more files)", need.files - 1) : "";
    const std::string toolkit =
        need.wheel.toolkit_extra.empty() ? "" : fmt::format(" or cuda-toolkit[{}]", need.wheel.toolkit_extra);
    warnings.push_back(fmt::format(
        "{}: {}{}: the {} build links {}, which the wheel does not bundle and none of its requirements brings; "
        "NVIDIA's runtime wheel {} ships it: require it{} (merge --runtime-requirements adds that), or the file "
        "loads only where a toolkit or system package installed {}",
        display, need.member, others, label.str(), need.library, need.wheel.distribution, toolkit, need.library));
  }
  return warnings;
}

std::vector<std::string> runtime_requirements(const VariantLabel& label, const std::vector<RuntimeNeed>& needs) {
  std::set<std::string_view> extras, others;
  for (const RuntimeNeed& need : needs) {
    if (!need.provided_by.empty()) continue;
    if (need.wheel.toolkit_extra.empty())
      others.insert(need.wheel.distribution);
    else
      extras.insert(need.wheel.toolkit_extra);
  }
  std::vector<std::string> out;
  if (!extras.empty()) out.push_back(fmt::format("cuda-toolkit[{}]=={}.*", fmt::join(extras, ","), label.cuda_major()));
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

std::vector<std::string> require_runtime_wheels(Wheel& wheel, const VariantLabel& label) {
  std::vector<std::string> added = runtime_requirements(label, runtime_needs(wheel, label));
  for (const std::string& text : added) {
    std::string error;
    std::optional<Requirement> parsed = parse_requirement(text, error);
    assert(parsed);  // made above from the table's names
    wheel.requires_dist.push_back(std::move(*parsed));
    wheel.metadata.fields.push_back({"Requires-Dist", text});
  }
  return added;
}

}  // namespace wm
