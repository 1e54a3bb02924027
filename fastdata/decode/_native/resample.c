/* Two-pass (separable) resampling with Pillow's BILINEAR filter: the same
 * coefficients as Pillow's Resample.c, held as 16-bit fixed point (Pillow-SIMD's
 * scheme) so that one multiply-add instruction handles a pair of taps
 * (kernels.c). Orientation and mirroring are folded into the passes. */
#include "resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static double triangle(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static void axis_free(fd_axis *a) {
    free(a->start);
    free(a->coef);
    free(a->pairs);
    a->start = NULL;
    a->coef = a->pairs = NULL;
}

/* Pillow's precompute_coeffs for BILINEAR over [in0, in1) of in_size inputs. */
static int axis_init(fd_axis *a, int in_size, double in0, double in1, int out_size) {
    double scale = (in1 - in0) / out_size, fscale = scale < 1.0 ? 1.0 : scale;
    double support = fscale, maxk = 0.0;
    int ksize = ((int)ceil(support) * 2 + 1 + 4) / 4 * 4; /* Pillow's 2s+1 and one more, to a multiple of 4 */
    double *kk = calloc((size_t)out_size * ksize, sizeof(double));
    memset(a, 0, sizeof(*a));
    a->start = malloc(sizeof(int) * 2 * (size_t)out_size);
    a->coef = calloc((size_t)out_size * ksize, sizeof(int16_t));
    a->pairs = calloc((size_t)out_size * ksize * 4, sizeof(int16_t));
    if (!kk || !a->start || !a->coef || !a->pairs) {
        free(kk);
        axis_free(a);
        return -1;
    }
    a->n = out_size;
    a->ksize = ksize;
    a->count = a->start + out_size;
    a->identity = in_size == out_size && in0 == 0.0 && in1 == (double)in_size;
    for (int i = 0; i < out_size; i++) {
        double center = in0 + (i + 0.5) * scale, sum = 0.0, *k = kk + (size_t)i * ksize;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in_size) hi = in_size;
        if (lo > in_size - 1) lo = in_size - 1;
        if (hi - lo > ksize - 1) hi = lo + ksize - 1;
        for (int x = lo; x < hi; x++) sum += k[x - lo] = triangle((x - center + 0.5) / fscale);
        if (hi <= lo || sum == 0.0) { /* degenerate box: take the nearest pixel */
            hi = lo + 1;
            k[0] = sum = 1.0;
        }
        for (int x = 0; x < hi - lo; x++) {
            k[x] /= sum;
            if (k[x] > maxk) maxk = k[x];
        }
        a->start[i] = lo;
        a->count[i] = hi - lo;
    }
    /* The most fraction bits that keep every coefficient below 2^15. */
    for (a->prec = 0; a->prec < 22; a->prec++)
        if ((int)(0.5 + maxk * (1 << (a->prec + 1))) >= (1 << 15)) break;
    for (size_t j = 0; j < (size_t)out_size * ksize; j++)
        a->coef[j] = (int16_t)floor(0.5 + kk[j] * (1 << a->prec));
    for (size_t j = 0; j < (size_t)out_size * ksize; j += 2) /* (c, c') x 3 channels, 0, 0 */
        for (int ch = 0; ch < 3; ch++) {
            a->pairs[4 * j + 2 * ch] = a->coef[j];
            a->pairs[4 * j + 2 * ch + 1] = a->coef[j + 1];
        }
    free(kk);
    return 0;
}

/* Hflip after orientation o is another orientation: 1<->2, 3<->4, 5<->6, 7<->8. */
static int fold_flip(int o, int hflip) {
    if (o < 1 || o > 8) o = 1;
    return hflip ? (o % 2 ? o + 1 : o - 1) : o;
}

int fd_resample(const uint8_t *src, ptrdiff_t src_stride, int src_h, int src_w,
                const double box[4], int out_h, int out_w, int orientation, int hflip,
                uint8_t *out, ptrdiff_t out_stride) {
    int o = fold_flip(orientation, hflip), transpose = o >= 5, rc = -1;
    /* Stored-frame result size, and the flips that (with a transpose for 5-8)
     * turn it upright: see fastdata/decode/orientation.py. */
    int sh = transpose ? out_w : out_h, sw = transpose ? out_h : out_w;
    int flip_y = transpose ? (o == 6 || o == 7) : (o == 3 || o == 4);
    int flip_x = transpose ? (o == 7 || o == 8) : (o == 2 || o == 3);
    fd_axis ax = {0}, ay = {0};
    uint8_t *tmp = NULL, *stored = NULL, *dst = out;
    ptrdiff_t dst_stride = out_stride;

    if (axis_init(&ay, src_h, box[0], box[0] + box[2], sh) || axis_init(&ax, src_w, box[1], box[1] + box[3], sw))
        goto done;
    if (transpose) {
        if (!(stored = malloc((size_t)sh * sw * 3 + FD_RESAMPLE_PAD))) goto done;
        dst = stored;
        dst_stride = (ptrdiff_t)sw * 3;
    }
    int need_h = !ax.identity || flip_x, need_v = !ay.identity || flip_y;
    int y0 = ay.start[0], y1 = ay.start[sh - 1] + ay.count[sh - 1];
    int x0 = ax.start[0], x1 = ax.start[sw - 1] + ax.count[sw - 1];
    if (!need_h && !need_v) {
        for (int y = 0; y < sh; y++) memcpy(dst + y * dst_stride, src + y * src_stride, (size_t)sw * 3);
    } else if (!need_v) {
        fd_hpass(src, src_stride, sh, &ax, dst, dst_stride, flip_x);
    } else if (!need_h) {
        fd_vpass(src, src_stride, sw * 3, &ay, dst, dst_stride, flip_y);
    } else {
        /* Filter the longer way first only where it saves work: the horizontal
         * pass costs about 3x the vertical one per tap and pixel. */
        double kh = (double)(x1 - x0) / sw + 1, kv = (double)(y1 - y0) / sh + 1;
        double h_first = 3.0 * (y1 - y0) * sw * kh + (double)sh * sw * kv;
        double v_first = (double)sh * (x1 - x0) * kv + 3.0 * sh * sw * kh;
        if (h_first <= v_first) {
            ptrdiff_t ts = (ptrdiff_t)sw * 3;
            tmp = malloc((size_t)(y1 - y0) * ts + FD_RESAMPLE_PAD);
            if (!tmp) goto done;
            fd_hpass(src + y0 * src_stride, src_stride, y1 - y0, &ax, tmp, ts, flip_x);
            for (int i = 0; i < sh; i++) ay.start[i] -= y0;
            fd_vpass(tmp, ts, sw * 3, &ay, dst, dst_stride, flip_y);
        } else {
            ptrdiff_t ts = (ptrdiff_t)(x1 - x0) * 3;
            tmp = malloc((size_t)sh * ts + FD_RESAMPLE_PAD);
            if (!tmp) goto done;
            fd_vpass(src + x0 * 3, src_stride, (x1 - x0) * 3, &ay, tmp, ts, flip_y);
            for (int i = 0; i < sw; i++) ax.start[i] -= x0;
            fd_hpass(tmp, ts, sh, &ax, dst, dst_stride, flip_x);
        }
    }
    if (transpose) /* upright pixel (i, j) is stored pixel (j, i) after the flips */
        for (int i = 0; i < out_h; i++)
            for (int j = 0; j < out_w; j++)
                memcpy(out + i * out_stride + 3 * j, stored + j * dst_stride + 3 * i, 3);
    rc = 0;
done:
    axis_free(&ax);
    axis_free(&ay);
    free(tmp);
    free(stored);
    return rc;
}
