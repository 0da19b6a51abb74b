/* skdemo._core: what the build of one variant saw, compiled in. Plain C; cuda.h is only read
 * for CUDA_VERSION, no CUDA code is compiled. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda.h>

static PyObject *build_major(PyObject *self, PyObject *args) { return PyLong_FromLong(SKDEMO_BUILD_MAJOR); }
static PyObject *cuda_version(PyObject *self, PyObject *args) { return PyLong_FromLong(CUDA_VERSION); }
static PyObject *flavor(PyObject *self, PyObject *args) { return PyUnicode_FromString(SKDEMO_FLAVOR); }

static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, "the CUDA major this module was built for"},
    {"cuda_version", cuda_version, METH_NOARGS, "CUDA_VERSION of the toolkit's cuda.h"},
    {"flavor", flavor, METH_NOARGS, "the SKDEMO_FLAVOR CMake define"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
