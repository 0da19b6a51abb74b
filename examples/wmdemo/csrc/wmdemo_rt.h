/* wmdemo's private runtime library, shipped in the wheel as wmdemo/_libs/libwmdemo_rt.so.1. */
#ifndef WMDEMO_RT_H
#define WMDEMO_RT_H

/* The CUDA major the library was built for. */
int wmdemo_rt_cuda_major(void);

/* Scales a value the way the library's "kernel" would: by the CUDA major it was built for. */
double wmdemo_rt_scale(double value);

#endif
