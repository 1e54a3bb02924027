/* The two resampling passes (internal to resample.c). */
#ifndef FD_KERNELS_H
#define FD_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* One axis of a resize: which inputs each output reads, with what weights. */
typedef struct {
    int n;          /* output size */
    int ksize;      /* coefficients per output, a multiple of 4 */
    int prec;       /* fixed-point fraction bits */
    int identity;   /* output pixel i is input pixel i */
    int *start;     /* first input pixel of each output */
    int *count;     /* inputs used by each output (<= ksize - 1) */
    int16_t *coef;  /* n x ksize, zero past count */
    int16_t *pairs; /* n x ksize/2 x 8: (c_2j, c_2j+1) x 3 channels, 0, 0 */
} fd_axis;

/* Vertical pass: out row y (or n-1-y if flip) = weighted in rows, over
 * row_bytes bytes. Reads up to 15 bytes past row_bytes of an input row. */
void fd_vpass(const uint8_t *in, ptrdiff_t in_stride, int row_bytes, const fd_axis *ay,
              uint8_t *out, ptrdiff_t out_stride, int flip);

/* Horizontal pass over `rows` rows of RGB pixels. Reads up to 15 bytes past
 * the last input pixel an output uses. */
void fd_hpass(const uint8_t *in, ptrdiff_t in_stride, int rows, const fd_axis *ax,
              uint8_t *out, ptrdiff_t out_stride, int flip);

#endif
