/* wmdemo.sub._nested: a variant extension in a subpackage. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef WMDEMO_CUDA_MAJOR
#error "build with -DWMDEMO_CUDA_MAJOR=<major>"
#endif

static PyObject *build_major(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(WMDEMO_CUDA_MAJOR);
}

static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, "The CUDA major this extension was built for."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wmdemo.sub._nested", "A nested variant extension.", -1, methods,
};

PyMODINIT_FUNC PyInit__nested(void) { return PyModule_Create(&module); }
