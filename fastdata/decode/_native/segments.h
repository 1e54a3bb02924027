/* A smaller JPEG holding only the restart segments a crop needs.
 *
 * libjpeg cannot skip entropy (Huffman) decoding: every MCU above the crop's
 * last row is decoded, which is most of a crop's time. When a baseline JPEG
 * has restart markers at whole MCU rows, or at a divisor of the MCUs per row,
 * each restart segment decodes on its own (the DC predictors reset), so a
 * JPEG made of the segments covering the crop (plus one MCU of margin each
 * side where chroma is subsampled: fancy upsampling reads the neighbouring
 * chroma) decodes to the same pixels there. */
#ifndef FD_SEGMENTS_H
#define FD_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data;       /* malloc'd synthetic JPEG; the caller frees it */
    size_t size;
    int row_shift;       /* decoded (1/denom) pixels cut above the region ... */
    int col_shift;       /* ... and left of it: subtract from the region */
    int cut_below;       /* rows below were cut: its end is not the file's, so stop
                            where the whole-file path stops (no read to the EOI) */
} fd_view;

/* 0: never cut (the whole-file path decodes everything); for tests that
 * compare both paths on the same file. */
extern int fd_allow_segments;

/* 1 and *view filled when a smaller JPEG gives the same pixels for region
 * (top, left, height, width in 1/denom pixels); 0 when the caller should
 * decode data itself: no usable restart markers, any layout or marker this
 * does not expect, no EOI at the very end (maybe truncated: the whole-file
 * path reports it), above max_pixels (the whole-file path reports that too),
 * or nothing to cut. Never fails otherwise: out of memory also returns 0. */
int fd_restart_view(const uint8_t *data, size_t size, int denom, const int region[4], uint64_t max_pixels,
                    fd_view *view);

#endif
