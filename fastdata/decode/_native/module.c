/* fastdata.decode._cropdecode: the Python face of cropdecode.c. Planning
 * (box sampling, orientation, DCT scale) stays in Python, shared with the
 * pure-Python path (fastdata/decode/native.py); this only decodes and resizes. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <jpeglib.h>

#include "batch.h"
#include "cropdecode.h"
#include "resegment.h"
#include "restarts.h"
#include "segments.h"

/* out must be a writable (H, W, 3) uint8 buffer with packed pixels; rows may be
 * apart (a slot of a channels-last batch). */
static int get_out(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS) < 0) return -1;
    if (view->ndim != 3 || view->shape[2] != 3 || view->itemsize != 1 ||
        (view->format && strcmp(view->format, "B") != 0) || view->strides[2] != 1 ||
        view->strides[1] != 3 || view->strides[0] < 3 * view->shape[1] || view->shape[0] < 1 ||
        view->shape[1] < 1) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError,
                        "out must be a writable (H, W, 3) uint8 array with packed pixels (rows may be strided)");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(decode_resized_doc,
"decode_resized(data, out, denom, region, box, orientation, hflip, max_pixels)\n--\n\n"
"Decode region=(top, left, height, width) of the JPEG at 1/denom (stored frame),\n"
"resample box=(top, left, height, width) inside it into out (H, W, 3 uint8),\n"
"turned by EXIF orientation then mirrored if hflip. The GIL is released.\n"
"Returns None, or (status, message) when it could not (see STATUS_* constants).");

static PyObject *decode_resized(PyObject *self, PyObject *args) {
    Py_buffer data, out;
    PyObject *out_obj;
    fd_request rq;
    fd_result res;
    unsigned long long max_pixels;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*Oi(iiii)(dddd)ipK:decode_resized", &data, &out_obj, &rq.denom,
                          &rq.region[0], &rq.region[1], &rq.region[2], &rq.region[3], &rq.box[0],
                          &rq.box[1], &rq.box[2], &rq.box[3], &rq.orientation, &rq.hflip, &max_pixels))
        return NULL;
    if (get_out(out_obj, &out) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    rq.out_h = (int)out.shape[0];
    rq.out_w = (int)out.shape[1];
    rq.max_pixels = (uint64_t)max_pixels;
    Py_BEGIN_ALLOW_THREADS
    fd_decode_resized((const uint8_t *)data.buf, (size_t)data.len, &rq, (uint8_t *)out.buf, out.strides[0], &res);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    PyBuffer_Release(&data);
    if (res.status == FD_OK) Py_RETURN_NONE;
    return Py_BuildValue("(is)", res.status, res.message);
}

PyDoc_STRVAR(add_restarts_doc,
"add_restarts(data, chunks)\n--\n\n"
"The JPEG losslessly rewritten with a restart marker every MCUs-per-row / d MCUs\n"
"(d: the largest divisor of the MCUs per row not above chunks), every APPn/COM\n"
"marker kept. The source's entropy-coded data is cut into segments; what that\n"
"declines libjpeg re-encodes, with Huffman tables fitted to the image.\n"
"The GIL is released.\n"
"Returns bytes, or (status, message) when it could not (see STATUS_* constants).");

static PyObject *add_restarts(PyObject *self, PyObject *args) {
    Py_buffer data;
    int chunks;
    uint8_t *out;
    size_t out_size;
    fd_result res;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*i:add_restarts", &data, &chunks)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    fd_add_restarts((const uint8_t *)data.buf, (size_t)data.len, chunks, &out, &out_size, &res);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (res.status != FD_OK) return Py_BuildValue("(is)", res.status, res.message);
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)out_size);
    free(out);
    return bytes;
}

extern int fd_allow_avx2;

/* The tests' switches: set *flag from arg's truth, return the previous value. */
static PyObject *set_flag(int *flag, PyObject *arg) {
    int previous = *flag, allow = PyObject_IsTrue(arg);
    if (allow < 0) return NULL;
    *flag = allow;
    return PyBool_FromLong(previous);
}

static PyObject *set_avx2(PyObject *self, PyObject *arg) {
    (void)self;
    return set_flag(&fd_allow_avx2, arg);
}

static PyObject *set_segments(PyObject *self, PyObject *arg) {
    (void)self;
    return set_flag(&fd_allow_segments, arg);
}

static PyObject *set_resegment(PyObject *self, PyObject *arg) {
    (void)self;
    return set_flag(&fd_allow_resegment, arg);
}

static PyMethodDef methods[] = {
    {"decode_resized", decode_resized, METH_VARARGS, decode_resized_doc},
    {"add_restarts", add_restarts, METH_VARARGS, add_restarts_doc},
    {"decode_batch", fd_py_decode_batch, METH_VARARGS, FD_DECODE_BATCH_DOC},
    {"copy_into", fd_py_copy_into, METH_VARARGS, FD_COPY_INTO_DOC},
    {"_set_segments", set_segments, METH_O,
     "Allow (True) or forbid decoding only the restart segments a crop needs; returns the previous setting. For tests."},
    {"_set_resegment", set_resegment, METH_O,
     "Allow (True) or forbid add_restarts's fast path, which cuts the source's entropy-coded data into "
     "segments, so that every file is re-encoded with libjpeg; returns the previous setting. For tests and benchmarks."},
    {"_set_avx2", set_avx2, METH_O, "Allow (True) or forbid the AVX2 kernels; returns the previous setting. For tests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_cropdecode",
    "Crop-box JPEG decode + antialiased resize into a caller's buffer (libjpeg API).", -1, methods,
};

#define STR_(x) #x
#define STR(x) STR_(x)

PyMODINIT_FUNC PyInit__cropdecode(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
#ifdef LIBJPEG_TURBO_VERSION
    const char *lib = "libjpeg-turbo " STR(LIBJPEG_TURBO_VERSION);
#else
    const char *lib = "libjpeg";
#endif
    if (PyModule_AddStringConstant(m, "LIBRARY", lib) < 0 ||
        PyModule_AddIntConstant(m, "JPEG_LIB_VERSION", JPEG_LIB_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_ERROR", FD_ERROR) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_TOO_LARGE", FD_TOO_LARGE) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_UNSUPPORTED", FD_UNSUPPORTED) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_RECOVERABLE", FD_RECOVERABLE) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_NOMEM", FD_NOMEM) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_BADARG", FD_BADARG) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
