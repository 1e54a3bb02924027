/* fastdata.formats._speedups: the per-record arithmetic of writing shards,
 * done in C because in Python it costs more than reading the image.
 *
 * No external library, so it builds wherever a C compiler does. Every
 * function has a Python twin (fastdata/formats/recordio/framing.py,
 * fastdata/formats/checksums.py; for crc32c, the crc32c package) that tests
 * compare it against, and fastdata/formats/speedups.py and crc.py choose
 * between them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "crc32c_hw.h"
#include "jpeg_check.h"

#ifdef __linux__
#include <errno.h>
#include <sys/prctl.h>
#endif

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

/* The CRC of A+B from crc(A), crc(B) and len(B): crc(A) times x^(8 len(B))
 * modulo the polynomial (zlib's crc32_combine method, in crc32c_hw.c). */

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
    return PyLong_FromUnsignedLong(fd_crc32c_multmodp(fd_crc32c_x2nmodp(len2, 3), crc1) ^ crc2);
}

/* -- crc32c -------------------------------------------------------------- */

/* Below this the GIL costs more to drop and retake than the CRC takes; the
 * crc32c package draws the line at the same 32 KiB. */
#define RELEASE_GIL_FROM (32 * 1024)

PyDoc_STRVAR(crc32c_doc,
"crc32c(data, value=0, /)\n--\n\n"
"The CRC-32C of data (any C-contiguous buffer) continuing from value, with\n"
"the CPU's CRC instruction: crc32c(b, crc32c(a)) == crc32c(a + b), and the\n"
"same answer as the crc32c package's crc32c(data, value). Only present where\n"
"the CPU has the instruction (crc32c_hardware names it).");

static PyObject *crc32c(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    uint32_t value = 0;
    (void)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "crc32c() takes 1 or 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (nargs == 2) {
        /* Taken modulo 2**32 without complaint, as the package's "I" format does. */
        unsigned long v = PyLong_AsUnsignedLongMask(args[1]);
        if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
        value = (uint32_t)v;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len >= RELEASE_GIL_FROM) {
        Py_BEGIN_ALLOW_THREADS
        value = fd_crc32c_hw(value, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        value = fd_crc32c_hw(value, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(value);
}

/* Exported only where the CPU has a CRC instruction: elsewhere the Python
 * side uses the crc32c package, not a slow C table loop under a fast name. */
static PyMethodDef hardware_crc_methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))crc32c, METH_FASTCALL, crc32c_doc},
    {NULL, NULL, 0, NULL},
};

/* -- parent death signal ------------------------------------------------- */

#ifdef __linux__
/* A forked converter worker asks for this so that it dies with its parent;
 * done here because importing ctypes for one call costs each worker ~9 ms. */
PyDoc_STRVAR(set_parent_death_signal_doc,
"set_parent_death_signal(sig, /)\n--\n\n"
"prctl(PR_SET_PDEATHSIG, sig): this process gets signal sig when its parent\n"
"thread exits (0 clears it). Linux only. Raises OSError on failure.");

static PyObject *set_parent_death_signal(PyObject *self, PyObject *arg) {
    (void)self;
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred()) return NULL;
    if (prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0UL, 0UL, 0UL) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(parent_death_signal_doc,
"parent_death_signal()\n--\n\n"
"prctl(PR_GET_PDEATHSIG): the signal set_parent_death_signal asked for, or 0.");

static PyObject *parent_death_signal(PyObject *self, PyObject *unused) {
    int sig = 0;
    (void)self, (void)unused;
    if (prctl(PR_GET_PDEATHSIG, (unsigned long)&sig, 0UL, 0UL, 0UL) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLong(sig);
}
#endif

/* -- shift_index ---------------------------------------------------------- */

/* A converted RecordIO dataset's dali.idx is every shard's .idx with its
 * offsets moved by the bytes of the shards before it. The converter's main
 * process writes it at the end, a line per image of the dataset: in Python
 * that is ~1.5 us a line (1.28 M lines for ImageNet), here a few ns. */

static int parse_u64(const unsigned char **p, const unsigned char *end, unsigned char stop, unsigned long long *out) {
    const unsigned char *q = *p;
    unsigned long long v = 0;
    if (q == end || *q < '0' || *q > '9') return -1;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (v > (ULLONG_MAX - 9) / 10) return -2; /* too long for the C path: Python decides */
        v = v * 10 + (unsigned long long)(*q - '0');
    }
    if (q == end || *q != stop) return -1;
    *p = q + 1;
    *out = v;
    return 0;
}

static char *put_u64(char *w, unsigned long long v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *w++ = digits[--n];
    return w;
}

PyDoc_STRVAR(shift_index_doc,
"shift_index(data, base, size, /)\n--\n\n"
"The .idx text data (key<TAB>offset lines, as write_shard writes them) with every\n"
"offset increased by base, keys written as plain decimals; None unless every line\n"
"is digits<TAB>digits<LF> and the offsets increase, are 4-byte aligned and below\n"
"size: exactly recordio.shards._shifted_lines; NotImplemented where base or size\n"
"is not an unsigned 64-bit int (Python decides).");

static PyObject *shift_index(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    unsigned long long base, size;
    (void)self;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "shift_index() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    base = PyLong_AsUnsignedLongLong(args[1]);
    if (base == (unsigned long long)-1 && PyErr_Occurred()) goto python_decides;
    size = PyLong_AsUnsignedLongLong(args[2]);
    if (size == (unsigned long long)-1 && PyErr_Occurred()) goto python_decides;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf, *end = p + view.len;
    /* a shifted offset has at most 20 digits, a key no more than it had */
    PyObject *out = PyBytes_FromStringAndSize(NULL, view.len + (view.len / 4 + 1) * 21);
    if (out == NULL) goto done;
    char *w = PyBytes_AS_STRING(out);
    unsigned long long key, offset, last = 0;
    int first = 1;
    while (p < end) {
        int bad = parse_u64(&p, end, '\t', &key);
        if (!bad) bad = parse_u64(&p, end, '\n', &offset);
        if (bad == -2 || (!bad && offset > ULLONG_MAX - base)) {
            Py_CLEAR(out);
            PyBuffer_Release(&view);
            Py_RETURN_NOTIMPLEMENTED;
        }
        if (bad || (!first && offset <= last) || (offset & 3) || offset >= size) goto refuse;
        first = 0;
        last = offset;
        w = put_u64(w, key);
        *w++ = '\t';
        w = put_u64(w, offset + base);
        *w++ = '\n';
    }
    if (_PyBytes_Resize(&out, w - PyBytes_AS_STRING(out)) < 0) out = NULL;
    goto done;
refuse:
    Py_CLEAR(out);
    out = Py_None;
    Py_INCREF(out);
done:
    PyBuffer_Release(&view);
    return out;
python_decides: /* not a u64 (negative, or a dataset past 16 EiB): the Python version decides */
    PyErr_Clear();
    Py_RETURN_NOTIMPLEMENTED;
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
    {"shift_index", (PyCFunction)(void (*)(void))shift_index, METH_FASTCALL, shift_index_doc},
#ifdef __linux__
    {"set_parent_death_signal", set_parent_death_signal, METH_O, set_parent_death_signal_doc},
    {"parent_death_signal", parent_death_signal, METH_NOARGS, parent_death_signal_doc},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastdata.formats._speedups",
    "Compiled twins of fastdata's per-record write helpers (see fastdata.formats.speedups).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    const char *hardware = fd_crc32c_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    /* crc32c_hardware: the instruction set crc32c uses, or None where there is no crc32c. */
    PyObject *name = hardware ? PyUnicode_FromString(hardware) : Py_NewRef(Py_None);
    if (PyModule_AddObject(m, "crc32c_hardware", name) < 0) {
        Py_XDECREF(name);
        goto fail;
    }
    if (hardware && PyModule_AddFunctions(m, hardware_crc_methods) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
