/* decode_batch (batch.c): a whole batch into its slots, the GIL released once. */
#ifndef FD_BATCH_H
#define FD_BATCH_H

#include <Python.h>

PyObject *fd_py_decode_batch(PyObject *self, PyObject *args);
PyObject *fd_py_copy_into(PyObject *self, PyObject *args);

#define FD_DECODE_BATCH_DOC                                                                         \
    "decode_batch(out, items, max_pixels)\n--\n\n"                                                  \
    "Decode each item (slot, data, denom, region, box, orientation, hflip) as decode_resized\n"      \
    "does, into out[slot] of out, an (N, H, W, 3) uint8 view of an NHWC or NCHW batch. The GIL\n" \
    "is released for the whole batch. Returns [(item position, status, message)] of the items\n"    \
    "that failed (their slots are left undefined); empty when every item was decoded."

#define FD_COPY_INTO_DOC                                                                            \
    "copy_into(out, slot, image)\n--\n\n"                                                           \
    "Copy image, (H, W, 3) uint8 with packed pixels, into out[slot] of out, an (N, H, W, 3)\n"      \
    "uint8 view of an NHWC or NCHW batch (fast_collate's copy), the GIL released."

#endif
