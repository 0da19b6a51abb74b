/* cpulevels._core: the level this build was compiled for, and a dot product using it.
 *
 * Nothing here detects the CPU. The level is read from the compiler's predefined macros, which
 * -march=x86-64-vN sets, so level() proves which flags reached the compiler; the kernel of that
 * level is chosen at compile time and uses its instructions unconditionally. Imported on a CPU
 * below that level, the build would die of SIGILL: choosing a build the CPU can run is the job
 * of wheelmerge's loader, not of this module.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#if !defined(__x86_64__)
#error "cpulevels is built for x86-64 only"
#endif

/* The x86-64 psABI levels, by the features each adds that the compiler announces. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && \
    defined(__AVX512DQ__) && defined(__AVX512VL__)
#define CPULEVELS_LEVEL 4
#elif defined(__AVX2__) && defined(__BMI2__) && defined(__FMA__)
#define CPULEVELS_LEVEL 3
#elif defined(__SSE4_2__) && defined(__POPCNT__)
#define CPULEVELS_LEVEL 2
#else
#define CPULEVELS_LEVEL 1
#endif

/* Set by setup.py from WHEELMERGE_BUILD_VARIANT, the level the build is labelled with. */
#if defined(CPULEVELS_EXPECTED_LEVEL) && CPULEVELS_EXPECTED_LEVEL != CPULEVELS_LEVEL
#error "the compiler flags do not target the level WHEELMERGE_BUILD_VARIANT names: CFLAGS needs -march=x86-64 for x86_64_v1, -march=x86-64-vN for x86_64_vN"
#endif

#if CPULEVELS_LEVEL >= 3
#include <immintrin.h>
#endif

/* Every kernel multiplies 16-bit integers into exact 32-bit products (|a*b| <= 2^30) and sums
 * them in 64 bits, so all levels give the same result for the same input. */

#if CPULEVELS_LEVEL >= 4
static const char KERNEL[] = "avx512";

static int64_t dot_kernel(const int16_t *a, const int16_t *b, size_t n)
{
    __m512i sum = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 16) {
        /* Masked loads (AVX512BW+VL) read the tail without touching memory past the end. */
        size_t left = n - i;
        __mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        __m512i x = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(mask, a + i));
        __m512i y = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(mask, b + i));
        __m512i products = _mm512_mullo_epi32(x, y);
        sum = _mm512_add_epi64(sum, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(products)));
        sum = _mm512_add_epi64(sum, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(products, 1)));
    }
    return _mm512_reduce_add_epi64(sum);
}

#elif CPULEVELS_LEVEL == 3
static const char KERNEL[] = "avx2";

static int64_t dot_kernel(const int16_t *a, const int16_t *b, size_t n)
{
    __m256i sum = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i x = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(a + i)));
        __m256i y = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(b + i)));
        __m256i products = _mm256_mullo_epi32(x, y);
        sum = _mm256_add_epi64(sum, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(products)));
        sum = _mm256_add_epi64(sum, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(products, 1)));
    }
    int64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, sum);
    int64_t total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; i < n; i++)
        total += (int32_t)a[i] * b[i];
    return total;
}

#else
static const char KERNEL[] = "portable";

static int64_t dot_kernel(const int16_t *a, const int16_t *b, size_t n)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += (int32_t)a[i] * b[i];
    return total;
}
#endif

/* One argument of dot(): a C-contiguous buffer of int16 (array('h'), numpy int16) used in
 * place, or any other sequence of ints copied into `copy`. */
typedef struct {
    Py_buffer view;
    int has_view;
    int16_t *copy;
    const int16_t *data;
    Py_ssize_t n;
} Operand;

static void operand_release(Operand *op)
{
    if (op->has_view)
        PyBuffer_Release(&op->view);
    PyMem_Free(op->copy);
    memset(op, 0, sizeof *op);
}

static int is_int16_format(const char *format)
{
    if (format == NULL)
        return 0;
    if (format[0] == '@' || format[0] == '=' || format[0] == '<')  /* native or little endian */
        format++;
    return strcmp(format, "h") == 0;
}

static int operand_from_buffer(PyObject *obj, const char *name, Operand *op)
{
    if (PyObject_GetBuffer(obj, &op->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    op->has_view = 1;
    if (op->view.itemsize != 2 || !is_int16_format(op->view.format)) {
        PyErr_Format(PyExc_TypeError,
                     "dot: %s is a buffer of format '%s' (item size %zd); expected 16-bit "
                     "signed integers (format 'h', e.g. array.array('h', ...)) or a sequence "
                     "of ints", name, op->view.format ? op->view.format : "B",
                     op->view.itemsize);
        return -1;
    }
    op->data = op->view.buf;
    op->n = op->view.len / 2;
    return 0;
}

static int operand_from_sequence(PyObject *obj, const char *name, Operand *op)
{
    PyObject *items = PySequence_Fast(obj, "dot: expected a sequence of ints or a buffer of "
                                           "16-bit signed integers (format 'h')");
    if (items == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    op->copy = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int16_t));
    if (op->copy == NULL) {
        Py_DECREF(items);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long value = PyLong_AsLong(PySequence_Fast_GET_ITEM(items, i));
        if (value == -1 && PyErr_Occurred()) {
            Py_DECREF(items);
            return -1;
        }
        if (value < INT16_MIN || value > INT16_MAX) {
            PyErr_Format(PyExc_OverflowError,
                         "dot: %s[%zd] = %ld is outside the 16-bit range -32768..32767",
                         name, i, value);
            Py_DECREF(items);
            return -1;
        }
        op->copy[i] = (int16_t)value;
    }
    Py_DECREF(items);
    op->data = op->copy;
    op->n = n;
    return 0;
}

static int operand_from(PyObject *obj, const char *name, Operand *op)
{
    memset(op, 0, sizeof *op);
    int status = PyObject_CheckBuffer(obj) ? operand_from_buffer(obj, name, op)
                                           : operand_from_sequence(obj, name, op);
    if (status < 0)
        operand_release(op);
    return status;
}

static PyObject *dot(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "dot() takes 2 arguments (a, b), %zd given", nargs);
        return NULL;
    }
    Operand a, b;
    if (operand_from(args[0], "a", &a) < 0)
        return NULL;
    if (operand_from(args[1], "b", &b) < 0) {
        operand_release(&a);
        return NULL;
    }
    PyObject *result = NULL;
    if (a.n != b.n) {
        PyErr_Format(PyExc_ValueError, "dot: a has %zd items, b has %zd; expected equal lengths",
                     a.n, b.n);
    } else if ((uint64_t)a.n > ((uint64_t)1 << 32)) {
        /* Up to 2^32 products of at most 2^30 each fit in 64 bits. */
        PyErr_Format(PyExc_OverflowError, "dot: %zd items; at most 2^32 are supported", a.n);
    } else {
        int64_t total;
        Py_BEGIN_ALLOW_THREADS
        total = dot_kernel(a.data, b.data, (size_t)a.n);
        Py_END_ALLOW_THREADS
        result = PyLong_FromLongLong(total);
    }
    operand_release(&a);
    operand_release(&b);
    return result;
}

static PyObject *level(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(CPULEVELS_LEVEL);
}

static PyObject *kernel(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyUnicode_FromString(KERNEL);
}

static PyMethodDef methods[] = {
    {"level", level, METH_NOARGS,
     "level()\n--\n\nThe x86-64 level (1 to 4) this build was compiled for, from the compiler's "
     "predefined macros."},
    {"kernel", kernel, METH_NOARGS,
     "kernel()\n--\n\nThe instructions dot() uses in this build: 'avx512', 'avx2' or 'portable'."},
    {"dot", (PyCFunction)(void (*)(void))dot, METH_FASTCALL,
     "dot(a, b, /)\n--\n\nThe dot product of two equally long sequences of 16-bit signed "
     "integers (lists of ints or buffers of format 'h'), exact, as an int."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "cpulevels._core",
    "The level this build was compiled for, and a dot product using its instructions.",
    0, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModule_Create(&module_def);
}
