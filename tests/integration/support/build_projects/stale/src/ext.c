/* stalepkg._ext: build_major() returns the CUDA major this object was compiled for; the
   marker string lets tests read it from the bytes of the file too. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define STALEPKG_STR2(x) #x
#define STALEPKG_STR(x) STALEPKG_STR2(x)

__attribute__((used)) static const char stalepkg_marker[] = "stalepkg-built-for-cuda-" STALEPKG_STR(STALEPKG_MAJOR) ";";

static PyObject *build_major(PyObject *self, PyObject *args) {
  (void)self;
  (void)args;
  return PyLong_FromLong(STALEPKG_MAJOR);
}

static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, "The CUDA major this module was built for."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&module); }
