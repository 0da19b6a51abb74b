// The device code of torchstable.scale_add: out = x * alpha + y, one element per thread in a
// grid-stride loop. setup.py compiles it with the toolkit's NVRTC (no nvcc needed), so it
// includes no headers; the names are unmangled for cudaLibraryGetKernel.

extern "C" __global__ void torchstable_scale_add_f32(const float* x, const float* y, float alpha,
                                                   float* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    out[i] = x[i] * alpha + y[i];
  }
}

extern "C" __global__ void torchstable_scale_add_f64(const double* x, const double* y, double alpha,
                                                   double* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    out[i] = x[i] * alpha + y[i];
  }
}
