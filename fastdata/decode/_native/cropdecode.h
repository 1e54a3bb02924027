/* Decode a JPEG's crop box at a DCT scale and resample it into a caller's
 * buffer. Plain C over the libjpeg API (libjpeg-turbo >= 1.5 for
 * jpeg_crop_scanline / jpeg_skip_scanlines); no Python here, so the fuzz
 * harness (tests/native/) links this file directly. */
#ifndef FD_CROPDECODE_H
#define FD_CROPDECODE_H

#include <stddef.h>
#include <stdint.h>

enum fd_status {
    FD_OK = 0,
    FD_ERROR = 1,        /* corrupt or truncated data: message says what */
    FD_TOO_LARGE = 2,    /* width x height above max_pixels (checked from the header) */
    FD_UNSUPPORTED = 3,  /* CMYK/YCCK, 12-bit, ...: the caller's other decoders decide */
    FD_RECOVERABLE = 4,  /* a libjpeg warning that loses no pixels: decode elsewhere */
    FD_NOMEM = 5,
    FD_BADARG = 6        /* a request that does not fit this image */
};

typedef struct {
    int denom;           /* DCT scale 1/denom: 1, 2, 4 or 8 */
    int region[4];       /* top, left, height, width in decoded (1/denom), stored-frame
                            pixels: everything the filter may read */
    double box[4];       /* top, left, height, width inside region (fractional):
                            what is resampled to the output */
    int out_h, out_w;    /* output size, upright frame */
    int orientation;     /* EXIF 1-8: how stored pixels map to upright */
    int hflip;           /* mirror the upright output left-right */
    uint64_t max_pixels; /* refuse stored width x height above this; 0: no limit */
} fd_request;

typedef struct {
    int status;
    char message[256];
} fd_result;

/* out: out_h rows of out_w RGB pixels, rows out_stride bytes apart. Returns
 * res->status. Never writes outside those rows; leaves out undefined on error. */
int fd_decode_resized(const uint8_t *data, size_t size, const fd_request *rq,
                      uint8_t *out, ptrdiff_t out_stride, fd_result *res);

#endif
