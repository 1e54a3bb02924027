/* Antialiased bilinear resampling of RGB uint8 pixels, Pillow's filter. */
#ifndef FD_RESAMPLE_H
#define FD_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes that must be readable after the last pixel of src (vector loads). */
#define FD_RESAMPLE_PAD 16

/* Resample box = (top, left, height, width) of src (src_h x src_w RGB, rows
 * src_stride apart, fractional edges allowed) to out_h x out_w, written
 * upright: the result is turned by EXIF `orientation` (1-8), then mirrored
 * left-right if hflip. Pillow's BILINEAR (support scaled by the reduction)
 * reads only src pixels. Returns 0, or -1 when memory ran out. */
int fd_resample(const uint8_t *src, ptrdiff_t src_stride, int src_h, int src_w,
                const double box[4], int out_h, int out_w, int orientation, int hflip,
                uint8_t *out, ptrdiff_t out_stride);

#endif
