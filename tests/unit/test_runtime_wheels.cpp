#include "merger/runtime_wheels.hpp"

#include "labels.hpp"

#include <doctest/doctest.h>

using namespace wm;
using namespace wm::test_labels;

namespace {
std::string wheel_of(std::string_view library, int major) {
  auto found = runtime_wheel_of_library(library, major);
  return found ? std::string(found->distribution) + "|" + std::string(found->toolkit_extra) : "none";
}
RuntimeNeed need(std::string library, std::string_view distribution, std::string_view extra, std::string by = {}) {
  return {std::move(library), "pkg/_ext.so", 1, {distribution, extra}, std::move(by)};
}
}  // namespace

TEST_CASE("the runtime wheel of each CUDA library, by its SONAME and the build's CUDA major") {
  CHECK(wheel_of("libcublas.so.12", 12) == "nvidia-cublas-cu12|cublas");
  CHECK(wheel_of("libcublas.so.13", 13) == "nvidia-cublas|cublas");
  CHECK(wheel_of("libcublasLt.so.13", 13) == "nvidia-cublas|cublas");
  CHECK(wheel_of("libcudart.so.13", 13) == "nvidia-cuda-runtime|cudart");
  CHECK(wheel_of("libnvrtc-builtins.so.13.0", 13) == "nvidia-cuda-nvrtc|nvrtc");
  // cuFFT's SONAME is one behind: libcufft.so.11 is CUDA 12's, .12 CUDA 13's.
  CHECK(wheel_of("libcufft.so.11", 12) == "nvidia-cufft-cu12|cufft");
  CHECK(wheel_of("libcufft.so.12", 13) == "nvidia-cufft|cufft");
  // The same SONAME for both majors, a different wheel: the build's major decides.
  CHECK(wheel_of("libcurand.so.10", 12) == "nvidia-curand-cu12|curand");
  CHECK(wheel_of("libcurand.so.10", 13) == "nvidia-curand|curand");
  CHECK(wheel_of("libnccl.so.2", 13) == "nvidia-nccl-cu13|");
  CHECK(wheel_of("libcudnn_ops.so.9", 12) == "nvidia-cudnn-cu12|");
  CHECK(wheel_of("libnppif.so.13", 13) == "nvidia-npp|npp");
  CHECK(wheel_of("libnvperf_host.so", 13) == "nvidia-cuda-cupti|cupti");
  // Another major's library is a refusal of the linkage check, not a runtime wheel.
  CHECK(wheel_of("libcudart.so.12", 13) == "none");
  CHECK(wheel_of("libcufft.so.11", 13) == "none");
  // Not NVIDIA's, the driver's (no wheel ships it), no library name, no major with wheels.
  CHECK(wheel_of("libc.so.6", 13) == "none");
  CHECK(wheel_of("libcuda.so.1", 13) == "none");
  CHECK(wheel_of("libcudnn", 12) == "none");
  CHECK(wheel_of("libcudnn.sox", 12) == "none");
  CHECK(wheel_of("libnpp.so.13", 13) == "none");  // "npp*" needs more than its stem
  CHECK(wheel_of("libcudart.so.11.0", 11) == "none");
}

TEST_CASE("runtime requirements: one cuda-toolkit requirement pinned to the major, then the other wheels") {
  const std::vector<RuntimeNeed> needs = {
      need("libcublas.so.13", "nvidia-cublas", "cublas"), need("libnccl.so.2", "nvidia-nccl-cu13", ""),
      need("libcudart.so.13", "nvidia-cuda-runtime", "cudart"), need("libcublasLt.so.13", "nvidia-cublas", "cublas"),
      need("libcufft.so.12", "nvidia-cufft", "cufft", "cuda-toolkit[cufft]==13.*")};
  CHECK(runtime_requirements("cu13"_label, needs) ==
        std::vector<std::string>{"cuda-toolkit[cublas,cudart]==13.*", "nvidia-nccl-cu13"});
  CHECK(runtime_requirements("cu13"_label, {}).empty());
  const auto warnings = runtime_warnings("w.whl", "cu13"_label, needs);
  REQUIRE(warnings.size() == 4);  // the one brought by a requirement says nothing
  CHECK(warnings[1] ==
        "w.whl: pkg/_ext.so: the cu13 build links libnccl.so.2, which the wheel does not bundle and none of its "
        "requirements brings; NVIDIA's runtime wheel nvidia-nccl-cu13 ships it: require it (merge "
        "--runtime-requirements adds that), or the file loads only where a toolkit or system package installed "
        "libnccl.so.2");
}
