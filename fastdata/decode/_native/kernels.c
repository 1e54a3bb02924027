/* The resampling passes: plain C, SSE2 (every x86-64) and AVX2 (chosen at run
 * time). All three compute the same integers: half + sum(coef * pixel),
 * shifted by prec and clamped to 0..255; SIMD only changes the order of
 * exact integer additions. */
#include "kernels.h"

#include <string.h>

/* FD_NO_SIMD builds the plain C kernels only (the fuzz harness compares them). */
#if defined(__SSE2__) && (defined(__x86_64__) || defined(__i386__)) && !defined(FD_NO_SIMD)
#define FD_SSE2 1
#include <emmintrin.h>
#if defined(__GNUC__) /* gcc and clang: per-function targets and cpu checks */
#define FD_AVX2 1
#include <immintrin.h>
#endif
#endif

#define MAX_PAIRS 1024 /* taps a SIMD vertical pass takes; more (>2000x reductions) run in plain C */

int fd_allow_avx2 = 1; /* tests turn it off to compare the SSE2 kernels */

static inline uint8_t clip8(int32_t v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v; }

#if FD_AVX2
static int avx2(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return cached && fd_allow_avx2;
}
#endif

/* ---- vertical ------------------------------------------------------------ */

#if FD_SSE2
/* 16 bytes of an output row: rows paired as byte interleaves (r_2j, r_2j+1),
 * one madd per pair and 4 bytes. An odd tap count pairs the last row with
 * itself at coefficient 0. */
static inline __m128i vtaps16(const uint8_t *const *rows, const int32_t *pairs, int npairs, int x,
                              __m128i half, __m128i shift) {
    const __m128i zero = _mm_setzero_si128();
    __m128i s0 = half, s1 = half, s2 = half, s3 = half;
    for (int j = 0; j < npairs; j++) {
        __m128i a = _mm_loadu_si128((const __m128i *)(rows[2 * j] + x));
        __m128i b = _mm_loadu_si128((const __m128i *)(rows[2 * j + 1] + x));
        __m128i c = _mm_set1_epi32(pairs[j]);
        __m128i lo = _mm_unpacklo_epi8(a, b), hi = _mm_unpackhi_epi8(a, b);
        s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), c));
        s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), c));
        s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), c));
        s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), c));
    }
    s0 = _mm_packs_epi32(_mm_sra_epi32(s0, shift), _mm_sra_epi32(s1, shift));
    s2 = _mm_packs_epi32(_mm_sra_epi32(s2, shift), _mm_sra_epi32(s3, shift));
    return _mm_packus_epi16(s0, s2);
}

/* The 16-byte steps and the tail of a row from byte x on. */
static inline void vrow16(const uint8_t *const *rows, const int32_t *pairs, int npairs, int x, int row_bytes,
                          uint8_t *dst, int32_t half, int prec) {
    const __m128i h = _mm_set1_epi32(half), shift = _mm_cvtsi32_si128(prec);
    for (; x + 16 <= row_bytes; x += 16)
        _mm_storeu_si128((__m128i *)(dst + x), vtaps16(rows, pairs, npairs, x, h, shift));
    if (x < row_bytes) { /* never write past the row: the output may be the caller's */
        uint8_t tail[16];
        _mm_storeu_si128((__m128i *)tail, vtaps16(rows, pairs, npairs, x, h, shift));
        memcpy(dst + x, tail, (size_t)(row_bytes - x));
    }
}
#endif

#if FD_AVX2
/* As vtaps16 on 32 bytes: the in-lane unpacks and in-lane packs undo each
 * other's lane order, so the bytes come out in place. */
__attribute__((target("avx2"))) static void vrow_avx2(const uint8_t *const *rows, const int32_t *pairs,
                                                      int npairs, int row_bytes, uint8_t *dst, int32_t half,
                                                      int prec) {
    const __m256i zero = _mm256_setzero_si256(), h = _mm256_set1_epi32(half);
    const __m128i shift = _mm_cvtsi32_si128(prec);
    int x = 0;
    for (; x + 32 <= row_bytes; x += 32) {
        __m256i s0 = h, s1 = h, s2 = h, s3 = h;
        for (int j = 0; j < npairs; j++) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(rows[2 * j] + x));
            __m256i b = _mm256_loadu_si256((const __m256i *)(rows[2 * j + 1] + x));
            __m256i c = _mm256_set1_epi32(pairs[j]);
            __m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), c));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), c));
            s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), c));
            s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), c));
        }
        s0 = _mm256_packs_epi32(_mm256_sra_epi32(s0, shift), _mm256_sra_epi32(s1, shift));
        s2 = _mm256_packs_epi32(_mm256_sra_epi32(s2, shift), _mm256_sra_epi32(s3, shift));
        _mm256_storeu_si256((__m256i *)(dst + x), _mm256_packus_epi16(s0, s2));
    }
    vrow16(rows, pairs, npairs, x, row_bytes, dst, half, prec);
}
#endif

void fd_vpass(const uint8_t *in, ptrdiff_t in_stride, int row_bytes, const fd_axis *ay,
              uint8_t *out, ptrdiff_t out_stride, int flip) {
    const int32_t half = 1 << (ay->prec - 1);
    for (int y = 0; y < ay->n; y++) {
        const int16_t *k = ay->coef + (size_t)y * ay->ksize;
        const uint8_t *first = in + (ptrdiff_t)ay->start[y] * in_stride;
        uint8_t *dst = out + (ptrdiff_t)(flip ? ay->n - 1 - y : y) * out_stride;
        int count = ay->count[y];
#if FD_SSE2
        if (count <= 2 * MAX_PAIRS) {
            const uint8_t *rows[2 * MAX_PAIRS];
            int32_t pairs[MAX_PAIRS];
            int npairs = (count + 1) / 2;
            for (int j = 0; j < 2 * npairs; j++) rows[j] = first + (ptrdiff_t)(j < count ? j : j - 1) * in_stride;
            memcpy(pairs, k, sizeof(int32_t) * (size_t)npairs); /* (c_2j, c_2j+1) as one int32 */
#if FD_AVX2
            if (avx2()) {
                vrow_avx2(rows, pairs, npairs, row_bytes, dst, half, ay->prec);
                continue;
            }
#endif
            vrow16(rows, pairs, npairs, 0, row_bytes, dst, half, ay->prec);
            continue;
        }
#endif
        for (int x = 0; x < row_bytes; x++) {
            int32_t s = half;
            for (int j = 0; j < count; j++) s += k[j] * first[j * in_stride + x];
            dst[x] = clip8(s >> ay->prec);
        }
    }
}

/* ---- horizontal ------------------------------------------------------------ */

#if FD_AVX2
/* Four taps of one output in two rows (lanes): pixels p[0..4] and p[gap..].  */
__attribute__((target("avx2"))) static inline __m256i taps4_avx2(__m256i s, const uint8_t *p, ptrdiff_t gap,
                                                                const int16_t *k, __m256i ctl_a, __m256i ctl_b) {
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
                                        _mm_loadu_si128((const __m128i *)(p + gap)), 1);
    __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k));
    __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(k + 8)));
    s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(v, ctl_a), a));
    return _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(v, ctl_b), b));
}

/* Output pixels q, q+1 of rows r, r+1 (lanes = rows). A 16-byte load holds
 * input pixels j..j+4; two byte shuffles make (r_j r_j+1 g_j g_j+1 b_j b_j+1 0 0)
 * and the same for j+2, j+3 as 16-bit lanes, each madd'ed with its (c, c') x 3
 * coefficient vector: four taps per load. Rows are written left to right in
 * address order, 8 bytes at a time (the 2 extra bytes are rewritten by the
 * next step), exactly 3 or 6 at the row's end. src1/dst1 may repeat src0/dst0. */
__attribute__((target("avx2"))) static void hrows2_avx2(const uint8_t *src0, const uint8_t *src1,
                                                        const fd_axis *ax, uint8_t *dst0, uint8_t *dst1,
                                                        int flip) {
    const __m256i ctl_a = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
                                           0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
    const __m256i ctl_b = _mm256_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1,
                                           6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
    const __m256i pack6 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                           0, 1, 2, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i half = _mm256_set1_epi32(1 << (ax->prec - 1));
    const __m128i shift = _mm_cvtsi32_si128(ax->prec);
    const size_t per_out = (size_t)ax->ksize * 4; /* int16 per output in ax->pairs */
    const int n = ax->n;
    const ptrdiff_t gap = src1 - src0;
    for (int q = 0; q < n; q += 2) {
        int x0 = flip ? n - 1 - q : q, x1 = q + 1 < n ? (flip ? n - 2 - q : q + 1) : x0;
        const uint8_t *p0 = src0 + 3 * ax->start[x0], *p1 = src0 + 3 * ax->start[x1];
        const int16_t *k0 = ax->pairs + x0 * per_out, *k1 = ax->pairs + x1 * per_out;
        /* Each output reads only its own taps (with a flip the later output has
         * the smaller start, so one shared count could run past the row). */
        int c0 = ax->count[x0], c1 = ax->count[x1], j = 0;
        __m256i s0 = half, s1 = half;
        for (; j < c0 && j < c1; j += 4) { /* coefficients past an output's count are 0 */
            s0 = taps4_avx2(s0, p0 + 3 * j, gap, k0 + 4 * j, ctl_a, ctl_b);
            s1 = taps4_avx2(s1, p1 + 3 * j, gap, k1 + 4 * j, ctl_a, ctl_b);
        }
        for (int i = j; i < c0; i += 4) s0 = taps4_avx2(s0, p0 + 3 * i, gap, k0 + 4 * i, ctl_a, ctl_b);
        for (int i = j; i < c1; i += 4) s1 = taps4_avx2(s1, p1 + 3 * i, gap, k1 + 4 * i, ctl_a, ctl_b);
        __m256i t = _mm256_packs_epi32(_mm256_sra_epi32(s0, shift), _mm256_sra_epi32(s1, shift));
        t = _mm256_shuffle_epi8(_mm256_packus_epi16(t, t), pack6); /* per row: rgb(x0) rgb(x1) */
        uint64_t r0 = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(t));
        uint64_t r1 = (uint64_t)_mm_cvtsi128_si64(_mm256_extracti128_si256(t, 1));
        size_t bytes = q + 2 < n ? 8 : q + 1 < n ? 6 : 3;
        memcpy(dst1 + 3 * q, &r1, bytes);
        memcpy(dst0 + 3 * q, &r0, bytes);
    }
}
#endif

static void hrow(const uint8_t *src, const fd_axis *ax, uint8_t *dst, int flip) {
    const int32_t half = 1 << (ax->prec - 1);
    for (int x = 0; x < ax->n; x++) {
        const uint8_t *p = src + 3 * ax->start[x];
        uint8_t *o = dst + 3 * (flip ? ax->n - 1 - x : x);
        int count = ax->count[x];
#if FD_SSE2
        /* Pixels j, j+1 interleaved as r r g g b b . . (16-bit) times the
         * (c, c') x 3 vector: one madd per two taps for all channels. */
        const int16_t *k = ax->pairs + (size_t)x * ax->ksize * 4;
        const __m128i zero = _mm_setzero_si128();
        __m128i sum = _mm_set1_epi32(half);
        for (int j = 0; j < count; j += 2) {
            int32_t a, b;
            memcpy(&a, p + 3 * j, 4);
            memcpy(&b, p + 3 * j + 3, 4);
            __m128i pix = _mm_unpacklo_epi8(_mm_cvtsi32_si128(a), _mm_cvtsi32_si128(b));
            __m128i w = _mm_loadu_si128((const __m128i *)(k + 4 * j));
            sum = _mm_add_epi32(sum, _mm_madd_epi16(_mm_unpacklo_epi8(pix, zero), w));
        }
        sum = _mm_srai_epi32(sum, ax->prec);
        sum = _mm_packus_epi16(_mm_packs_epi32(sum, sum), zero);
        int32_t v = _mm_cvtsi128_si32(sum);
        memcpy(o, &v, 3);
#else
        const int16_t *k = ax->coef + (size_t)x * ax->ksize;
        int32_t s0 = half, s1 = half, s2 = half;
        for (int j = 0; j < count; j++) {
            s0 += k[j] * p[3 * j];
            s1 += k[j] * p[3 * j + 1];
            s2 += k[j] * p[3 * j + 2];
        }
        o[0] = clip8(s0 >> ax->prec);
        o[1] = clip8(s1 >> ax->prec);
        o[2] = clip8(s2 >> ax->prec);
#endif
    }
}

void fd_hpass(const uint8_t *in, ptrdiff_t in_stride, int rows, const fd_axis *ax,
              uint8_t *out, ptrdiff_t out_stride, int flip) {
#if FD_AVX2
    if (avx2()) {
        for (int r = 0; r < rows; r += 2) {
            int r1 = r + 1 < rows ? r + 1 : r;
            hrows2_avx2(in + r * in_stride, in + r1 * in_stride, ax, out + r * out_stride, out + r1 * out_stride, flip);
        }
        return;
    }
#endif
    for (int r = 0; r < rows; r++) hrow(in + r * in_stride, ax, out + r * out_stride, flip);
}
