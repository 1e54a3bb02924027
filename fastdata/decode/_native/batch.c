/* decode_batch: every sample of a batch decoded, cropped, resized and mirrored
 * straight into its slot of the batch, the GIL released once for the whole
 * batch. Loader threads (Workers(kind="threads")) otherwise take the GIL back
 * after every sample and copy each one again in fast_collate; the copy into
 * a planar (N, C, H, W) batch is a strided transpose that NumPy does slowly. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "cropdecode.h"

typedef struct {
    Py_ssize_t slot;
    Py_buffer data;
    fd_request rq;
    fd_result res;
} item;

/* out: a writable 4-D uint8 view (N, H, W, 3) of the batch; its pixels are
 * either packed (channel stride 1, pixel stride 3: NHWC, channels_last) or
 * planar (pixel stride 1: NCHW, the channel stride apart). */
static int get_batch(PyObject *obj, Py_buffer *view, int *planar) {
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS) < 0) return -1;
    const Py_ssize_t *sh = view->shape, *st = view->strides;
    int ok = view->ndim == 4 && view->itemsize == 1 && (!view->format || strcmp(view->format, "B") == 0) &&
             sh[0] >= 1 && sh[1] >= 1 && sh[2] >= 1 && sh[3] == 3 && sh[1] <= 65535 && sh[2] <= 65535;
    if (ok && st[3] == 1 && st[2] == 3 && st[1] >= 3 * sh[2]) {
        *planar = 0;
    } else if (ok && st[2] == 1 && st[1] >= sh[2] && st[3] >= st[1] * sh[1]) {
        *planar = 1;
    } else {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError,
                        "out must be a writable (N, H, W, 3) uint8 view of an NHWC or NCHW batch");
        return -1;
    }
    return 0;
}

/* FD_NO_SIMD: plain C only, as in kernels.c. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(FD_NO_SIMD)
#define FD_SSSE3 1
#include <immintrin.h>
#endif

static void row_planes(const uint8_t *s, int from, int w, uint8_t *r, uint8_t *g, uint8_t *b) {
    for (int x = from; x < w; x++) {
        r[x] = s[3 * x];
        g[x] = s[3 * x + 1];
        b[x] = s[3 * x + 2];
    }
}

#if FD_SSSE3
static int ssse3(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("ssse3") ? 1 : 0;
    }
    return cached;
}

/* 16 pixels at a time, 7x faster than the byte loop (which costs about a
 * tenth of a crop decode): each channel gathered from the three 16-byte
 * loads by one shuffle each (-1 lanes read as zero), then OR-ed. Returns the
 * pixels done. */
__attribute__((target("ssse3"))) static int row_planes_ssse3(const uint8_t *s, int w, uint8_t *r, uint8_t *g,
                                                              uint8_t *b) {
    const __m128i ra = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i rb = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
    const __m128i rc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
    const __m128i ga = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i gb = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
    const __m128i gc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
    const __m128i ba = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i bb = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
    const __m128i bc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
    int x = 0;
    for (; x + 16 <= w; x += 16) {
        const uint8_t *p = s + 3 * x;
        __m128i va = _mm_loadu_si128((const __m128i *)p), vb = _mm_loadu_si128((const __m128i *)(p + 16)),
                vc = _mm_loadu_si128((const __m128i *)(p + 32));
        _mm_storeu_si128((__m128i *)(r + x), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(va, ra), _mm_shuffle_epi8(vb, rb)),
                                                          _mm_shuffle_epi8(vc, rc)));
        _mm_storeu_si128((__m128i *)(g + x), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(va, ga), _mm_shuffle_epi8(vb, gb)),
                                                          _mm_shuffle_epi8(vc, gc)));
        _mm_storeu_si128((__m128i *)(b + x), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(va, ba), _mm_shuffle_epi8(vb, bb)),
                                                          _mm_shuffle_epi8(vc, bc)));
    }
    return x;
}
#endif

/* One HWC sample into the three planes of a planar slot. */
static void to_planes(const uint8_t *hwc, int h, int w, uint8_t *slot, ptrdiff_t row, ptrdiff_t plane) {
#if FD_SSSE3
    int simd = ssse3();
#endif
    for (int y = 0; y < h; y++) {
        const uint8_t *s = hwc + (size_t)y * (size_t)w * 3;
        uint8_t *r = slot + y * row, *g = r + plane, *b = g + plane;
        int done = 0;
#if FD_SSSE3
        if (simd) done = row_planes_ssse3(s, w, r, g, b);
#endif
        row_planes(s, done, w, r, g, b);
    }
}

static void run(item *items, Py_ssize_t n, const Py_buffer *out, int planar, uint8_t *scratch) {
    const Py_ssize_t *st = out->strides;
    for (Py_ssize_t i = 0; i < n; i++) {
        item *it = &items[i];
        uint8_t *slot = (uint8_t *)out->buf + it->slot * st[0];
        if (!planar) {
            fd_decode_resized((const uint8_t *)it->data.buf, (size_t)it->data.len, &it->rq, slot, st[1], &it->res);
        } else if (fd_decode_resized((const uint8_t *)it->data.buf, (size_t)it->data.len, &it->rq, scratch,
                                     (ptrdiff_t)it->rq.out_w * 3, &it->res) == FD_OK) {
            to_planes(scratch, it->rq.out_h, it->rq.out_w, slot, st[1], st[3]);
        }
    }
}

static int parse_item(PyObject *obj, item *it, Py_ssize_t slots, int out_h, int out_w) {
    if (!PyArg_ParseTuple(obj, "ny*i(iiii)(dddd)ip;each item is (slot, data, denom, region, box, orientation, hflip)",
                          &it->slot, &it->data, &it->rq.denom, &it->rq.region[0], &it->rq.region[1],
                          &it->rq.region[2], &it->rq.region[3], &it->rq.box[0], &it->rq.box[1], &it->rq.box[2],
                          &it->rq.box[3], &it->rq.orientation, &it->rq.hflip))
        return -1;
    if (it->slot < 0 || it->slot >= slots) {
        PyBuffer_Release(&it->data);
        PyErr_Format(PyExc_IndexError, "slot %zd is outside the batch of %zd", it->slot, slots);
        return -1;
    }
    it->rq.out_h = out_h;
    it->rq.out_w = out_w;
    return 0;
}

PyObject *fd_py_decode_batch(PyObject *self, PyObject *args) {
    PyObject *out_obj, *items_obj, *seq = NULL, *failed = NULL;
    unsigned long long max_pixels;
    Py_buffer out;
    int planar;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOK:decode_batch", &out_obj, &items_obj, &max_pixels)) return NULL;
    if (get_batch(out_obj, &out, &planar) < 0) return NULL;
    seq = PySequence_Fast(items_obj, "items must be a sequence");
    if (!seq) goto release_out;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), parsed = 0;
    int out_h = (int)out.shape[1], out_w = (int)out.shape[2];
    item *items = calloc(n > 0 ? (size_t)n : 1, sizeof(item));
    uint8_t *scratch = planar ? malloc((size_t)out_h * (size_t)out_w * 3 + 64) : NULL;
    if (!items || (planar && !scratch)) {
        PyErr_NoMemory();
        goto release_items;
    }
    for (; parsed < n; parsed++) {
        items[parsed].rq.max_pixels = (uint64_t)max_pixels;
        if (parse_item(PySequence_Fast_GET_ITEM(seq, parsed), &items[parsed], out.shape[0], out_h, out_w) < 0)
            goto release_items;
    }
    Py_BEGIN_ALLOW_THREADS
    run(items, n, &out, planar, scratch);
    Py_END_ALLOW_THREADS
    failed = PyList_New(0);
    for (Py_ssize_t i = 0; failed && i < n; i++) {
        if (items[i].res.status == FD_OK) continue;
        PyObject *entry = Py_BuildValue("(nis)", i, items[i].res.status, items[i].res.message);
        if (!entry || PyList_Append(failed, entry) < 0) Py_CLEAR(failed);
        Py_XDECREF(entry);
    }
release_items:
    for (Py_ssize_t i = 0; i < parsed; i++) PyBuffer_Release(&items[i].data);
    free(items);
    free(scratch);
    Py_DECREF(seq);
release_out:
    PyBuffer_Release(&out);
    return failed;
}

/* An HWC uint8 image, rows apart, pixels packed. */
static int get_image(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO) < 0) return -1;
    if (view->ndim != 3 || view->shape[2] != 3 || view->itemsize != 1 || (view->format && strcmp(view->format, "B") != 0) ||
        view->strides[2] != 1 || view->strides[1] != 3 || view->strides[0] < 3 * view->shape[1]) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "image must be an (H, W, 3) uint8 array with packed pixels (rows may be strided)");
        return -1;
    }
    return 0;
}

PyObject *fd_py_copy_into(PyObject *self, PyObject *args) {
    PyObject *out_obj, *image_obj;
    Py_ssize_t slot;
    Py_buffer out, image;
    int planar;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnO:copy_into", &out_obj, &slot, &image_obj)) return NULL;
    if (get_batch(out_obj, &out, &planar) < 0) return NULL;
    if (get_image(image_obj, &image) < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    PyObject *result = NULL;
    if (slot < 0 || slot >= out.shape[0]) {
        PyErr_Format(PyExc_IndexError, "slot %zd is outside the batch of %zd", slot, out.shape[0]);
    } else if (image.shape[0] != out.shape[1] || image.shape[1] != out.shape[2]) {
        PyErr_Format(PyExc_ValueError, "image is %zdx%zd (HxW), the batch's slots %zdx%zd", image.shape[0], image.shape[1],
                     out.shape[1], out.shape[2]);
    } else {
        const Py_ssize_t *st = out.strides;
        int h = (int)out.shape[1], w = (int)out.shape[2];
        uint8_t *dst = (uint8_t *)out.buf + slot * st[0];
        const uint8_t *src = (const uint8_t *)image.buf;
        Py_BEGIN_ALLOW_THREADS
        for (int y = 0; y < h; y++) {
            const uint8_t *row = src + y * image.strides[0];
            if (planar) to_planes(row, 1, w, dst + y * st[1], st[1], st[3]);
            else memcpy(dst + y * st[1], row, (size_t)w * 3);
        }
        Py_END_ALLOW_THREADS
        Py_INCREF(Py_None);
        result = Py_None;
    }
    PyBuffer_Release(&image);
    PyBuffer_Release(&out);
    return result;
}
