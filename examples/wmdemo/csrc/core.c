/* wmdemo._core: reports the CUDA major it was built for and calls into libwmdemo_rt. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "wmdemo_rt.h"

#ifndef WMDEMO_CUDA_MAJOR
#error "build with -DWMDEMO_CUDA_MAJOR=<major>"
#endif

static PyObject *build_major(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(WMDEMO_CUDA_MAJOR);
}

static PyObject *runtime_major(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(wmdemo_rt_cuda_major());
}

static PyObject *scale(PyObject *self, PyObject *arg) {
    double value = PyFloat_AsDouble(arg);
    if (value == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    return PyFloat_FromDouble(wmdemo_rt_scale(value));
}

static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, "The CUDA major this extension was built for."},
    {"runtime_major", runtime_major, METH_NOARGS,
     "The CUDA major of the loaded libwmdemo_rt (a call into the private library)."},
    {"scale", scale, METH_O, "scale(x) -> x * runtime major, computed by libwmdemo_rt."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wmdemo._core", "wmdemo's native core, one build per CUDA major.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
