/* Whether the compiler was asked for AVX2 (-march=x86-64-v3 defines __AVX2__, -march=x86-64
   does not). The marker string lets a test read it from the built file without running it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __AVX2__
static const char kCompiled[] = "cpuflags-compiled-with-avx2";
#else
static const char kCompiled[] = "cpuflags-compiled-without-avx2";
#endif

static PyObject* avx2(PyObject* self, PyObject* args) {
#ifdef __AVX2__
  Py_RETURN_TRUE;
#else
  Py_RETURN_FALSE;
#endif
}

static PyObject* compiled(PyObject* self, PyObject* args) { return PyUnicode_FromString(kCompiled); }

static PyMethodDef kMethods[] = {
    {"avx2", avx2, METH_NOARGS, "whether the build was compiled with AVX2"},
    {"compiled", compiled, METH_NOARGS, "the marker of what the build was compiled with"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_level", NULL, -1, kMethods};

PyMODINIT_FUNC PyInit__level(void) { return PyModule_Create(&kModule); }
