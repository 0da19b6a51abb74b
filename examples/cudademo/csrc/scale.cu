// cudademo's kernel. setup.py compiles it with the toolkit's NVRTC into PTX
// (cudademo/kernels/scale.ptx); _core loads that file at run time with cudaLibraryLoadFromFile.
// extern "C" keeps the name unmangled, so the host looks it up as "cudademo_scale".

extern "C" __global__ void cudademo_scale(float *data, float factor, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] *= factor;
    }
}
