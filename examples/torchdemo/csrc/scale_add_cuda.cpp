// The CUDA kernel of torchdemo::scale_add. The device code (scale_add.cu) was compiled by
// setup.py with the toolkit's NVRTC into one image per architecture (scale_add_images.h); the
// image fitting the device is loaded with cudaLibraryLoadData and launched on torch's current
// stream with the CUDA runtime that torch itself loaded (libcudart.so.<major>).
//
// Only c10's CUDA headers are used: ATen/cuda/CUDAContext.h would also pull in cuBLAS, cuSOLVER
// and cuSPARSE headers, which a toolkit assembled from the runtime and NVRTC wheels lacks.
#include <c10/cuda/CUDAException.h>  // C10_CUDA_CHECK
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>  // c10::cuda::getCurrentCUDAStream
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "scale_add.h"
#include "scale_add_images.h"

namespace torchdemo {
namespace {

struct Kernels {
  cudaKernel_t f32 = nullptr;
  cudaKernel_t f64 = nullptr;
};

std::string architectures() {
  std::string names;
  for (const auto& image : kKernelImages) {
    names += (names.empty() ? "" : ", ") + std::string(image.ptx ? "compute_" : "sm_") +
             std::to_string(image.arch);
  }
  return names;
}

// The image for a device of compute capability `arch` (90 for 9.0): a cubin of the same major
// and at most its minor, else PTX for at most its architecture (the driver compiles it).
const KernelImage& image_for(int arch) {
  const KernelImage* best = nullptr;
  for (const auto& image : kKernelImages) {
    const bool fits = image.ptx ? image.arch <= arch : image.arch / 10 == arch / 10 && image.arch <= arch;
    if (!fits) continue;
    if (best == nullptr || (best->ptx && !image.ptx) ||
        (best->ptx == image.ptx && image.arch > best->arch)) {
      best = &image;
    }
  }
  TORCH_CHECK(best != nullptr, "torchdemo.scale_add: this build has kernels for ", architectures(),
              ", none of which runs on a GPU of compute capability ", arch / 10, ".", arch % 10,
              "; rebuild with TORCH_CUDA_ARCH_LIST naming it");
  return *best;
}

// Each image is loaded once per process; a loaded library serves every device.
const Kernels& kernels_for(int arch) {
  static std::mutex mutex;
  static std::map<const KernelImage*, Kernels> loaded;
  const KernelImage& image = image_for(arch);
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(&image);
  if (found != loaded.end()) return found->second;
  cudaLibrary_t library = nullptr;
  C10_CUDA_CHECK(cudaLibraryLoadData(&library, image.data, nullptr, nullptr, 0, nullptr, nullptr, 0));
  Kernels kernels;
  C10_CUDA_CHECK(cudaLibraryGetKernel(&kernels.f32, library, "torchdemo_scale_add_f32"));
  C10_CUDA_CHECK(cudaLibraryGetKernel(&kernels.f64, library, "torchdemo_scale_add_f64"));
  return loaded.emplace(&image, kernels).first->second;
}

int attribute(cudaDeviceAttr what, int device) {
  int value = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

template <typename T>
void launch(cudaKernel_t kernel, const at::Tensor& x, const at::Tensor& y, double alpha,
            at::Tensor& out, int multiprocessors) {
  const T* px = x.const_data_ptr<T>();
  const T* py = y.const_data_ptr<T>();
  T* po = out.mutable_data_ptr<T>();
  T a = static_cast<T>(alpha);
  long long n = out.numel();
  void* args[] = {&px, &py, &a, &po, &n};
  constexpr long long kThreads = 256;
  // Enough blocks to fill the device; the kernel's grid-stride loop covers the rest.
  const long long blocks = std::min((n + kThreads - 1) / kThreads, 32LL * multiprocessors);
  // A cudaKernel_t may stand for the function symbol (CUDA 12.0 and later).
  C10_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                  dim3(static_cast<unsigned>(blocks)), dim3(kThreads), args, 0,
                                  c10::cuda::getCurrentCUDAStream().stream()));
}

at::Tensor scale_add_cuda(const at::Tensor& x, const at::Tensor& y, double alpha) {
  check_scale_add_args(x, y);
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  const at::Tensor yc = y.contiguous();
  at::Tensor out = at::empty_like(xc, at::MemoryFormat::Contiguous);
  if (out.numel() == 0) return out;
  const int device = x.get_device();
  const Kernels& kernels = kernels_for(attribute(cudaDevAttrComputeCapabilityMajor, device) * 10 +
                                       attribute(cudaDevAttrComputeCapabilityMinor, device));
  const int multiprocessors = attribute(cudaDevAttrMultiProcessorCount, device);
  if (x.scalar_type() == at::kFloat) {
    launch<float>(kernels.f32, xc, yc, alpha, out, multiprocessors);
  } else {
    launch<double>(kernels.f64, xc, yc, alpha, out, multiprocessors);
  }
  return out;
}

}  // namespace
}  // namespace torchdemo

TORCH_LIBRARY_IMPL(torchdemo, CUDA, m) { m.impl("scale_add", &torchdemo::scale_add_cuda); }
