/* socm_lib._lanes: nuclear norms of many small float64 matrices at once, one matrix per SIMD lane.
 *
 * A small SVD is a chain of dependent scalar steps, so one matrix at a time leaves most of a core idle; here
 * the same step runs on many matrices side by side (the algorithm is in _lanes_body.h and _lanes_bidiag.h). The
 * body is compiled three times, for AVX-512, for AVX2 with FMA and for the compiler's baseline, and
 * nuclear_norms() runs the copy named by the caller; variants() lists those this CPU can run, best first.
 *
 * Python API (no numpy headers: the matrices come through the buffer protocol):
 *     variants() -> tuple of str
 *     nuclear_norms(G, out, flags, max_sweeps, variant) -> int
 *     MAX_SIDE: the largest number of rows or columns of a matrix it takes
 *     UNCONVERGED, NOT_FINITE: the values of flags
 * G: a native, aligned float64 buffer of shape (..., p, q), any strides, 1 <= p, q <= MAX_SIDE; out: writable
 * float64, one entry per matrix; flags: writable bytes, one per matrix, set to 0 where out holds the nuclear
 * norm, UNCONVERGED where the sweeps did not converge within max_sweeps, NOT_FINITE where the matrix holds a
 * NaN or an infinity (out is not to be used where flags is not 0); returns the number of flagged matrices.
 * Raises ValueError for a shape it does not take, MemoryError where its workspace (m n w + (m + n) w +
 * (2 n + 3) 32 doubles for m x n matrices, m >= n, packed w = min(8, count rounded up to a power of two) side
 * by side) cannot be allocated. The GIL is released while the kernel runs; calls share no state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BW 8  /* lanes of the bidiagonalisation at most: one AVX-512 register of doubles */
/* 8, 4 and 2 doubles, one matrix per lane; GCC's and Clang's vector extension, lowered to the target's width. */
typedef double lanes_v8 __attribute__((vector_size(8 * sizeof(double)), aligned(sizeof(double)), may_alias));
typedef double lanes_v4 __attribute__((vector_size(4 * sizeof(double)), aligned(sizeof(double)), may_alias));
typedef double lanes_v2 __attribute__((vector_size(2 * sizeof(double)), aligned(sizeof(double)), may_alias));
#define QW 32 /* lanes of the QR sweeps: four registers, so that four independent chains hide latency */
/* Doubles of workspace for m x n matrices packed w side by side: the packed matrices, reflector scratch, the
 * bidiagonals of a chunk of QW (E padded). */
#define LANES_WORK(m, n, w) ((size_t)(m) * (n) * (w) + (size_t)((m) + (n)) * (w) + (size_t)(2 * (n) + 3) * QW)
#define LANES_MAX_SIDE (INT_MAX / 2)
enum { LANES_UNCONVERGED = 1, LANES_NOT_FINITE = 2 }; /* the values of flags */

/* The per-target copies need GCC's target pragmas (Clang ignores them): other compilers build the portable one. */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define LANES_X86 1
#endif

#define LANES_NAME(x) x##_portable
#include "_lanes_body.h"
#undef LANES_NAME

#ifdef LANES_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define LANES_NAME(x) x##_avx2
#include "_lanes_body.h"
#undef LANES_NAME
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx2,fma,prefer-vector-width=512")
#define LANES_NAME(x) x##_avx512
#include "_lanes_body.h"
#undef LANES_NAME
#pragma GCC pop_options
#endif

typedef int (*kernel_fn)(const char *, const Py_ssize_t *, Py_ssize_t, int, int, Py_ssize_t, Py_ssize_t, int, int,
                         double *, unsigned char *, double *);

static const char *const NAMES[] = {"avx512", "avx2", "portable"};
static const kernel_fn KERNELS[] = {
#ifdef LANES_X86
    run_avx512, run_avx2,
#else
    NULL, NULL,
#endif
    run_portable};

static int supported(int k) {
#ifdef LANES_X86
    __builtin_cpu_init();
    if (k == 0) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    if (k == 1) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return k == 2;
}

static PyObject *variants(PyObject *self, PyObject *noargs) {
    PyObject *out = PyList_New(0);
    for (int k = 0; out && k < 3; k++) {
        if (!supported(k)) continue;
        PyObject *name = PyUnicode_FromString(NAMES[k]);
        if (!name || PyList_Append(out, name) < 0) Py_CLEAR(out);
        Py_XDECREF(name);
    }
    if (!out) return NULL;
    PyObject *tuple = PyList_AsTuple(out);
    Py_DECREF(out);
    return tuple;
}

static int writable(PyObject *obj, Py_buffer *view, Py_ssize_t count, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, expected %zd (one entry per matrix)", what, view->len,
                     count * itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int lanes_for(Py_ssize_t count) {
    /* Matrices packed side by side: BW, or the smallest power of two that holds all when there are fewer. */
    int w = 1;
    while (w < BW && w < count) w *= 2;
    return w;
}

static PyObject *nuclear_norms(PyObject *self, PyObject *args) {
    PyObject *g_obj, *out_obj, *flags_obj;
    int max_sweeps;
    const char *variant;
    if (!PyArg_ParseTuple(args, "OOOis", &g_obj, &out_obj, &flags_obj, &max_sweeps, &variant)) return NULL;
    int which = -1;
    for (int k = 0; k < 3; k++)
        if (strcmp(variant, NAMES[k]) == 0) which = k;
    if (which < 0 || !supported(which)) {
        PyErr_Format(PyExc_ValueError, "kernel variant %s is not available on this CPU", variant);
        return NULL;
    }
    if (max_sweeps < 1) {
        PyErr_SetString(PyExc_ValueError, "max_sweeps must be at least 1");
        return NULL;
    }
    Py_buffer g, out, flags;
    if (PyObject_GetBuffer(g_obj, &g, PyBUF_STRIDES | PyBUF_FORMAT) < 0) return NULL;
    if (g.ndim < 2 || g.itemsize != 8 || !g.format || strcmp(g.format, "d") != 0 || !g.strides) {
        PyErr_SetString(PyExc_TypeError, "G must be a native, aligned float64 buffer of shape (..., p, q)");
        PyBuffer_Release(&g);
        return NULL;
    }
    Py_ssize_t count = 1;
    for (int k = 0; k < g.ndim - 2; k++) count *= g.shape[k];
    Py_ssize_t p = g.shape[g.ndim - 2], q = g.shape[g.ndim - 1];
    Py_ssize_t rs = g.strides[g.ndim - 2], cs = g.strides[g.ndim - 1];
    if (writable(out_obj, &out, count, 8, "out") < 0) {
        PyBuffer_Release(&g);
        return NULL;
    }
    if (writable(flags_obj, &flags, count, 1, "flags") < 0) {
        PyBuffer_Release(&g);
        PyBuffer_Release(&out);
        return NULL;
    }
    if (p < 1 || q < 1 || p > LANES_MAX_SIDE || q > LANES_MAX_SIDE) {
        PyErr_Format(PyExc_ValueError, "each matrix must have between 1 and MAX_SIDE = %d rows and columns",
                     LANES_MAX_SIDE);
        goto fail;
    }
    /* m x n with m >= n: a wide matrix is read transposed (same singular values). */
    int m = (int)(p >= q ? p : q), n = (int)(p >= q ? q : p);
    if (p < q) {
        Py_ssize_t t = rs;
        rs = cs;
        cs = t;
    }
    int width = lanes_for(count);
    /* m n w + ... doubles must not overflow size_t: m, n < 2^30 and w <= 8 keep m n w below 2^63. */
    size_t nwork = LANES_WORK(m, n, width);
    double *work = nwork <= SIZE_MAX / sizeof(double) ? malloc(nwork * sizeof(double)) : NULL;
    Py_ssize_t *offsets = malloc((size_t)(count > 0 ? count : 1) * sizeof(Py_ssize_t));
    if (!work || !offsets) {
        free(work);
        free(offsets);
        PyErr_Format(PyExc_MemoryError, "the lane kernel's workspace for %zd x %zd matrices (%zu doubles) cannot be "
                     "allocated", p, q, nwork);
        goto fail;
    }
    /* The byte offset of every matrix, from the leading dimensions' strides (an odometer over them). */
    {
        int lead = g.ndim - 2;
        Py_ssize_t idx[64] = {0}, off = 0;
        if (lead > 64) lead = 64; /* PyBUF_MAX_NDIM is 64 */
        for (Py_ssize_t b = 0; b < count; b++) {
            offsets[b] = off;
            for (int k = lead - 1; k >= 0; k--) {
                idx[k]++;
                off += g.strides[k];
                if (idx[k] < g.shape[k]) break;
                off -= g.strides[k] * g.shape[k];
                idx[k] = 0;
            }
        }
    }
    int flagged;
    Py_BEGIN_ALLOW_THREADS
    flagged = KERNELS[which]((const char *)g.buf, offsets, count, m, n, rs, cs, max_sweeps, width, (double *)out.buf,
                             (unsigned char *)flags.buf, work);
    Py_END_ALLOW_THREADS
    free(work);
    free(offsets);
    PyBuffer_Release(&g);
    PyBuffer_Release(&out);
    PyBuffer_Release(&flags);
    return PyLong_FromLong(flagged);
fail:
    PyBuffer_Release(&g);
    PyBuffer_Release(&out);
    PyBuffer_Release(&flags);
    return NULL;
}

static PyMethodDef METHODS[] = {
    {"variants", variants, METH_NOARGS, "The kernel variants this CPU can run, best first."},
    {"nuclear_norms", nuclear_norms, METH_VARARGS,
     "nuclear_norms(G, out, flags, max_sweeps, variant) -> number of matrices flagged (flags != 0)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_lanes",
                                    "Nuclear norms of many small float64 matrices, one per SIMD lane.", -1, METHODS};

PyMODINIT_FUNC PyInit__lanes(void) {
    PyObject *module = PyModule_Create(&MODULE);
    if (module && (PyModule_AddIntConstant(module, "MAX_SIDE", LANES_MAX_SIDE) < 0 ||
                   PyModule_AddIntConstant(module, "UNCONVERGED", LANES_UNCONVERGED) < 0 ||
                   PyModule_AddIntConstant(module, "NOT_FINITE", LANES_NOT_FINITE) < 0))
        Py_CLEAR(module);
    return module;
}
