/* cudademo._core: the host side of cudademo, built against one CUDA toolkit's runtime API and
 * linked dynamically against its libcudart.so.<major>, which the wheel ships in cudademo/_libs/
 * (found through the run path $ORIGIN/_libs, or preloaded by wheelmerge's loader). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cuda_runtime_api.h>

#ifndef CUDADEMO_CUDA_MAJOR
#error "build with -DCUDADEMO_CUDA_MAJOR=<major>"
#endif
/* The headers are the toolkit's: a build for CUDA 12 must not see CUDA 13's, and the reverse. */
#if CUDART_VERSION / 1000 != CUDADEMO_CUDA_MAJOR
#error "the CUDA runtime headers found are not of the CUDA major this build is for"
#endif

#define KERNEL_NAME "cudademo_scale"
#define THREADS_PER_BLOCK 256

/* The kernel library, loaded on the first scale() and kept for the life of the process.
 * Guarded by the GIL. */
static cudaLibrary_t kernel_library;
static cudaKernel_t scale_kernel;

static PyObject *cuda_error(const char *what, cudaError_t status) {
    PyErr_Format(PyExc_RuntimeError, "cudademo: %s failed: %s (%s)", what,
                 cudaGetErrorString(status), cudaGetErrorName(status));
    return NULL;
}

static PyObject *build_major(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(CUDADEMO_CUDA_MAJOR);
}

static PyObject *runtime_version(PyObject *self, PyObject *unused) {
    int version = 0;
    cudaError_t status = cudaRuntimeGetVersion(&version);
    if (status != cudaSuccess) {
        return cuda_error("cudaRuntimeGetVersion", status);
    }
    return PyLong_FromLong(version);
}

/* No driver (or only the toolkit's stub libcuda), a driver too old for this runtime, or no GPU:
 * there is no device to use. */
static int means_no_device(cudaError_t status) {
    return status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver ||
           status == cudaErrorStubLibrary;
}

static PyObject *device_count(PyObject *self, PyObject *unused) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (means_no_device(status)) {
        return PyLong_FromLong(0);
    }
    if (status != cudaSuccess) {
        return cuda_error("cudaGetDeviceCount", status);
    }
    return PyLong_FromLong(count);
}

static int require_device(void) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) {
        return 0;
    }
    if (status == cudaSuccess || means_no_device(status)) {
        PyErr_Format(PyExc_RuntimeError,
                     "cudademo.scale needs a CUDA GPU, and there is none usable here: %s",
                     status == cudaSuccess ? "no CUDA device found" : cudaGetErrorString(status));
    } else {
        cuda_error("cudaGetDeviceCount", status);
    }
    return -1;
}

static int load_kernel(const char *path) {
    if (scale_kernel != NULL) {
        return 0;
    }
    cudaError_t status = cudaLibraryLoadFromFile(&kernel_library, path, NULL, NULL, 0, NULL, NULL, 0);
    if (status != cudaSuccess) {
        PyErr_Format(PyExc_RuntimeError, "cudademo: cannot load the kernels from %s: %s", path,
                     cudaGetErrorString(status));
        return -1;
    }
    status = cudaLibraryGetKernel(&scale_kernel, kernel_library, KERNEL_NAME);
    if (status != cudaSuccess) {
        cudaLibraryUnload(kernel_library);
        scale_kernel = NULL;
        PyErr_Format(PyExc_RuntimeError, "cudademo: %s has no kernel %s: %s", path, KERNEL_NAME,
                     cudaGetErrorString(status));
        return -1;
    }
    return 0;
}

/* Copies `data` to the device, scales it there and copies it back; returns the first failure. */
static cudaError_t run_scale(float *data, unsigned long long n, float factor, const char **what) {
    float *device_data = NULL;
    size_t bytes = (size_t)n * sizeof(float);
    *what = "cudaMalloc";
    cudaError_t status = cudaMalloc((void **)&device_data, bytes);
    if (status != cudaSuccess) {
        return status;
    }
    *what = "cudaMemcpy to the device";
    status = cudaMemcpy(device_data, data, bytes, cudaMemcpyHostToDevice);
    if (status == cudaSuccess) {
        void *args[] = {&device_data, &factor, &n};
        dim3 grid = {(unsigned int)((n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK), 1, 1};
        dim3 block = {THREADS_PER_BLOCK, 1, 1};
        /* A cudaKernel_t may stand for the function symbol (CUDA 12.0 and later). */
        *what = "cudaLaunchKernel";
        status = cudaLaunchKernel((const void *)scale_kernel, grid, block, args, 0, NULL);
    }
    if (status == cudaSuccess) {
        *what = "the kernel or cudaMemcpy from the device";
        status = cudaMemcpy(data, device_data, bytes, cudaMemcpyDeviceToHost);
    }
    cudaFree(device_data);
    return status;
}

static PyObject *scale(PyObject *self, PyObject *args) {
    PyObject *values;
    double factor;
    const char *path;
    if (!PyArg_ParseTuple(args, "Ods:scale", &values, &factor, &path)) {
        return NULL;
    }
    PyObject *sequence = PySequence_Fast(values, "scale() takes a sequence of floats");
    if (sequence == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence);
    float *data = PyMem_Malloc(n > 0 ? (size_t)n * sizeof(float) : 1);
    if (data == NULL) {
        Py_DECREF(sequence);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double value = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(sequence, i));
        if (value == -1.0 && PyErr_Occurred()) {
            goto fail;
        }
        data[i] = (float)value;
    }
    if (require_device() < 0 || load_kernel(path) < 0) {
        goto fail;
    }
    if (n > 0) {
        const char *what = "";
        cudaError_t status;
        Py_BEGIN_ALLOW_THREADS
        status = run_scale(data, (unsigned long long)n, (float)factor, &what);
        Py_END_ALLOW_THREADS
        if (status != cudaSuccess) {
            cuda_error(what, status);
            goto fail;
        }
    }
    PyObject *result = PyList_New(n);
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        PyObject *item = PyFloat_FromDouble(data[i]);
        if (item == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, item);
    }
    PyMem_Free(data);
    Py_DECREF(sequence);
    return result;

fail:
    PyMem_Free(data);
    Py_DECREF(sequence);
    return NULL;
}

static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, "The CUDA major this extension was built for."},
    {"runtime_version", runtime_version, METH_NOARGS,
     "cudaRuntimeGetVersion of the loaded libcudart, e.g. 12090 (needs no driver or GPU)."},
    {"device_count", device_count, METH_NOARGS,
     "The number of usable CUDA devices; 0 without a GPU or without a driver for this runtime."},
    {"scale", scale, METH_VARARGS,
     "scale(values, factor, kernel_path) -> values multiplied by factor on the GPU (float32)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cudademo._core", "cudademo's host code, one build per CUDA major.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
