#include "wmdemo_rt.h"

#ifndef WMDEMO_CUDA_MAJOR
#error "build with -DWMDEMO_CUDA_MAJOR=<major>"
#endif

int wmdemo_rt_cuda_major(void) { return WMDEMO_CUDA_MAJOR; }

double wmdemo_rt_scale(double value) { return value * WMDEMO_CUDA_MAJOR; }
