/* fastdata.formats._speedups: the per-record arithmetic of writing shards,
 * done in C because in Python it costs more than reading the image.
 *
 * No external library, so it builds wherever a C compiler does. Every
 * function has a Python twin (fastdata/formats/recordio/framing.py,
 * fastdata/formats/checksums.py) that tests compare it against, and
 * fastdata/formats/speedups.py chooses between them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "jpeg_check.h"

/* -- magic_cuts ---------------------------------------------------------- */

/* The RecordIO magic word 0xCED7230A as it lies in memory (little-endian on
 * disk), read as a native word: the comparison is then byte order free. */
static uint32_t magic_word(void) {
    static const unsigned char bytes[4] = {0x0A, 0x23, 0xD7, 0xCE};
    uint32_t w;
    memcpy(&w, bytes, 4);
    return w;
}

static inline uint32_t load32(const unsigned char *p) {
    uint32_t w;
    memcpy(&w, p, 4); /* the buffer need not be 4-aligned in memory */
    return w;
}

/* Words are checked in blocks with a branch-free OR so the compiler can
 * vectorise the common case (no magic word in the block); a block that has
 * one is scanned again word by word. */
#define BLOCK 64

static int append_cut(PyObject *list, Py_ssize_t offset) {
    PyObject *value = PyLong_FromSsize_t(offset);
    if (value == NULL) return -1;
    int rc = PyList_Append(list, value);
    Py_DECREF(value);
    return rc;
}

static int collect(PyObject *list, const unsigned char *p, Py_ssize_t first, Py_ssize_t last, uint32_t magic) {
    for (Py_ssize_t i = first; i < last; i++)
        if (load32(p + 4 * i) == magic && append_cut(list, 4 * i) < 0) return -1;
    return 0;
}

PyDoc_STRVAR(magic_cuts_doc,
"magic_cuts(data, /)\n--\n\n"
"Offsets of the 4-byte-aligned RecordIO magic words in data (any buffer),\n"
"in increasing order: exactly framing.cut_points(data).");

static PyObject *magic_cuts(PyObject *self, PyObject *arg) {
    Py_buffer view;
    (void)self;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    const Py_ssize_t words = view.len / 4;
    const uint32_t magic = magic_word();
    PyObject *cuts = PyList_New(0);
    if (cuts == NULL) goto done;
    Py_ssize_t i = 0;
    for (; i + BLOCK <= words; i += BLOCK) {
        uint32_t hit = 0;
        for (Py_ssize_t j = 0; j < BLOCK; j++) hit |= load32(p + 4 * (i + j)) == magic;
        if (hit && collect(cuts, p, i, i + BLOCK, magic) < 0) goto fail;
    }
    if (collect(cuts, p, i, words, magic) < 0) goto fail;
    goto done;
fail:
    Py_CLEAR(cuts);
done:
    PyBuffer_Release(&view);
    return cuts;
}

/* -- crc32c_combine ------------------------------------------------------ */

/* zlib's crc32_combine (Mark Adler's method, zlib 1.2.12 and later) with the
 * Castagnoli polynomial: the CRC of A+B from crc(A), crc(B) and len(B), by
 * multiplying crc(A) by x^(8 len(B)) modulo the polynomial. CRCs are
 * bit-reflected, so x^0 is the top bit. */
#define POLY 0x82F63B78u /* Castagnoli, reflected */

static uint32_t x2n[32]; /* x^(2^n) mod POLY */

static uint32_t multmodp(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

static void init_x2n(void) {
    uint32_t p = 1u << 30; /* x^1 */
    x2n[0] = p;
    for (int n = 1; n < 32; n++) x2n[n] = p = multmodp(p, p);
}

/* x^(n 2^k) mod POLY */
static uint32_t x2nmodp(unsigned long long n, unsigned k) {
    uint32_t p = 1u << 31; /* x^0 */
    while (n) {
        if (n & 1) p = multmodp(x2n[k & 31], p);
        n >>= 1;
        k++;
    }
    return p;
}

static int crc_arg(PyObject *obj, const char *name, uint32_t *out) {
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "crc32c_combine: %s must be a CRC32C value in 0..2**32-1", name);
        }
        return -1;
    }
    if (v > 0xFFFFFFFFull) {
        PyErr_Format(PyExc_ValueError, "crc32c_combine: %s must be a CRC32C value in 0..2**32-1, got %llu", name, v);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

PyDoc_STRVAR(crc32c_combine_doc,
"crc32c_combine(crc1, crc2, len2, /)\n--\n\n"
"The CRC32C of A + B, given crc1 = crc32c(A), crc2 = crc32c(B) and len2 = len(B).");

static PyObject *crc32c_combine(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    uint32_t crc1, crc2;
    (void)self;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "crc32c_combine() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    if (crc_arg(args[0], "crc1", &crc1) < 0 || crc_arg(args[1], "crc2", &crc2) < 0) return NULL;
    unsigned long long len2 = PyLong_AsUnsignedLongLong(args[2]);
    if (len2 == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "crc32c_combine: len2 must be a length (0 or more bytes)");
        }
        return NULL;
    }
    return PyLong_FromUnsignedLong(multmodp(x2nmodp(len2, 3), crc1) ^ crc2);
}

/* -- jpeg_passthrough_size ----------------------------------------------- */

PyDoc_STRVAR(jpeg_passthrough_size_doc,
"jpeg_passthrough_size(data, max_pixels, /)\n--\n\n"
"converters.jpeg_check.passthrough_size in C: (height, width) or None; NotImplemented\n"
"where the Python version must decide (a max_pixels that is not a non-negative int).\n"
"max_pixels is Image.MAX_IMAGE_PIXELS, or None for no limit.");

static PyObject *jpeg_passthrough_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    unsigned long long limit = 0;
    int has_limit = 0;
    (void)self;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "jpeg_passthrough_size() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (args[1] != Py_None) {
        /* Pillow compares height * width > MAX_IMAGE_PIXELS; a negative or
         * float limit is left to the Python version. */
        if (!PyLong_Check(args[1])) Py_RETURN_NOTIMPLEMENTED;
        limit = PyLong_AsUnsignedLongLong(args[1]);
        if (limit == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        has_limit = 1;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    unsigned height = 0, width = 0;
    int verdict = fd_jpeg_passthrough((const unsigned char *)view.buf, (size_t)view.len, has_limit, limit, &height, &width);
    PyBuffer_Release(&view);
    if (verdict == FD_JPEG_NO) Py_RETURN_NONE;
    return Py_BuildValue("(II)", height, width);
}

static PyMethodDef methods[] = {
    {"magic_cuts", magic_cuts, METH_O, magic_cuts_doc},
    {"crc32c_combine", (PyCFunction)(void (*)(void))crc32c_combine, METH_FASTCALL, crc32c_combine_doc},
    {"jpeg_passthrough_size", (PyCFunction)(void (*)(void))jpeg_passthrough_size, METH_FASTCALL,
     jpeg_passthrough_size_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastdata.formats._speedups",
    "Compiled twins of fastdata's per-record write helpers (see fastdata.formats.speedups).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    init_x2n();
    return PyModule_Create(&module);
}
