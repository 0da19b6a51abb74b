// torchdemo::scale_add(x, y, alpha) = x * alpha + y, for float32 and float64 tensors of one
// shape on one device. The schema is defined in ops.cpp; CPU and CUDA kernels are registered
// for it separately (ops.cpp, scale_add_cuda.cpp).
#pragma once

#include <ATen/ATen.h>

namespace torchdemo {

// The arguments' requirements, shared by both kernels; errors name what was found.
inline void check_scale_add_args(const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK(x.device() == y.device(), "torchdemo.scale_add: x is on ", x.device(), " but y on ",
              y.device(), "; both must be on one device");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "torchdemo.scale_add: x is ", x.scalar_type(),
              " but y is ", y.scalar_type(), "; both must have one dtype");
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble,
              "torchdemo.scale_add: expected float32 or float64 tensors, got ", x.scalar_type());
  TORCH_CHECK(x.sizes() == y.sizes(), "torchdemo.scale_add: x has shape ", x.sizes(),
              " but y has ", y.sizes(), "; both must have one shape");
}

}  // namespace torchdemo
