/* Build a JPEG of only the restart segments a crop needs (see segments.h).
 *
 * Deliberately strict: anything but a single-scan baseline (SOF0/SOF1, 8-bit,
 * Huffman) JPEG of 1 or 3 components with restart markers exactly where DRI
 * says, ending in EOI, returns 0 and the caller decodes the whole file, which
 * reports whatever is wrong with it. A wrong guess here would be a wrong
 * image, not an error, so no repair is attempted. */
#include "segments.h"

#include <stdlib.h>
#include <string.h>

#include "baseline.h"

#define MAX_KEPT 64

int fd_allow_segments = 1;

struct layout {
    fd_baseline h;                /* the header (baseline.h) */
    size_t kept[MAX_KEPT][2];     /* header segments copied: offset, length */
    int nkept;
};

/* Keeps the markers before the scan, and the SOS, but APPn other than APP0
 * (JFIF) and APP14 (Adobe), which decide the colour space, and COM: EXIF and
 * ICC can be tens of kilobytes and the decoder ignores them (orientation is
 * the caller's). */
static int keep_segment(void *ctx, const uint8_t *d, const fd_segment *seg) {
    struct layout *L = ctx;
    unsigned m = seg->code;
    (void)d;
    if ((m >= 0xE1 && m <= 0xED) || m == 0xEF || m == 0xFE) return 1;
    if (L->nkept == MAX_KEPT) return 0;
    L->kept[L->nkept][0] = seg->at;
    L->kept[L->nkept][1] = seg->end - seg->at;
    L->nkept++;
    return 1;
}

/* ends[i]: where segment i's entropy data ends (its RST, or the EOI for the
 * last); it starts 2 bytes after ends[i - 1] (at L->h.scan for the first).
 * 0 unless exactly n segments, RSTs numbered 0..7 in turn, and the EOI is the
 * file's last two bytes. */
static int find_segments(const uint8_t *d, size_t size, const struct layout *L, size_t *ends, size_t n) {
    size_t q = L->h.scan, count = 0;
    for (;;) {
        const uint8_t *f = q < size ? memchr(d + q, 0xFF, size - q) : NULL;
        if (!f) return 0;
        q = (size_t)(f - d);
        if (q + 1 >= size) return 0;
        unsigned b = d[q + 1];
        if (b == 0x00) { /* a stuffed 0xFF data byte */
            q += 2;
        } else if (b == 0xFF) { /* fill byte before a marker */
            q += 1;
        } else if (b >= 0xD0 && b <= 0xD7) {
            if (count + 1 >= n || b - 0xD0 != count % 8) return 0;
            ends[count++] = q;
            q += 2;
        } else {
            if (b != 0xD9 || q + 2 != size || count + 1 != n) return 0;
            ends[count] = q;
            return 1;
        }
    }
}

/* MCU range [*lo, *hi] covering decoded pixels [first, first + count), with
 * margin MCUs more each side where the image has them: fancy upsampling reads
 * the neighbouring chroma, and treats a cut edge as the image's. */
static void mcu_span(int first, int count, int mcu, unsigned total, unsigned margin, unsigned *lo, unsigned *hi) {
    unsigned a = (unsigned)first / (unsigned)mcu, b = (unsigned)(first + count - 1) / (unsigned)mcu;
    *lo = a > margin ? a - margin : 0;
    *hi = b + margin < total ? b + margin : total - 1;
}

int fd_restart_view(const uint8_t *d, size_t size, int denom, const int region[4], uint64_t max_pixels,
                    fd_view *view) {
    struct layout L;
    memset(&L, 0, sizeof(L));
    memset(view, 0, sizeof(*view));
    if (!fd_allow_segments || !fd_read_baseline(d, size, &L.h, keep_segment, &L) || !L.h.restart) return 0;
    if (max_pixels && (uint64_t)L.h.width * L.h.height > max_pixels) return 0;
    unsigned out_h = (L.h.height + (unsigned)denom - 1) / (unsigned)denom, out_w = (L.h.width + (unsigned)denom - 1) / (unsigned)denom;
    if ((unsigned)region[0] + (unsigned)region[2] > out_h || (unsigned)region[1] + (unsigned)region[3] > out_w)
        return 0; /* the whole-file path says what is wrong */
    unsigned mw = 8u * (unsigned)L.h.hmax, mh = 8u * (unsigned)L.h.vmax; /* MCU size, full-scale pixels */
    unsigned cols = (L.h.width + mw - 1) / mw, rows = (L.h.height + mh - 1) / mh, R = L.h.restart;
    /* Segments of whole rows (k rows each) or of row chunks (per_row each row). */
    unsigned k = R % cols == 0 ? R / cols : 0, per_row = k ? 0 : cols % R == 0 ? cols / R : 0;
    if (!k && !per_row) return 0;
    size_t n = ((size_t)cols * rows + R - 1) / R;
    unsigned r_lo, r_hi, c_lo = 0, c_hi = cols - 1;
    /* Without subsampling nothing is upsampled: no margin (4:4:4 and grey). */
    mcu_span(region[0], region[2], (int)mh / denom, rows, L.h.vmin < L.h.vmax, &r_lo, &r_hi);
    if (k) {
        r_lo = r_lo / k * k; /* whole segments */
        r_hi = (r_hi / k + 1) * k - 1 < rows - 1 ? (r_hi / k + 1) * k - 1 : rows - 1;
    } else {
        mcu_span(region[1], region[3], (int)mw / denom, cols, L.h.hmin < L.h.hmax, &c_lo, &c_hi);
        c_lo = c_lo / R * R;
        c_hi = c_hi / R * R + R - 1;
    }
    if (r_lo == 0 && r_hi == rows - 1 && c_lo == 0 && c_hi == cols - 1) return 0; /* nothing to cut */
    size_t *ends = malloc(n * sizeof(*ends));
    if (!ends) return 0;
    if (!find_segments(d, size, &L, ends, n)) {
        free(ends);
        return 0;
    }
    /* Segment indices to copy, in order: whole rows, or chunks c_lo/R..c_hi/R of each row. */
    size_t s_first = k ? r_lo / k : 0, s_last = k ? r_hi / k : 0;
    unsigned q_lo = per_row ? c_lo / R : 0, q_hi = per_row ? c_hi / R : 0;
    size_t used = 0;
    /* Never larger than the file: kept header segments, some of its segments and
     * fewer restart markers than it has, SOI and EOI. */
    uint8_t *out = malloc(size);
    if (!out) {
        free(ends);
        return 0;
    }
    size_t o = 0;
    out[o++] = 0xFF;
    out[o++] = 0xD8;
    for (int i = 0; i < L.nkept; i++) {
        if (L.kept[i][0] == L.h.sof) { /* the new frame size: Y at +5, X at +7 */
            unsigned h = r_hi == rows - 1 ? L.h.height - r_lo * mh : (r_hi - r_lo + 1) * mh;
            unsigned w = c_hi == cols - 1 ? L.h.width - c_lo * mw : (c_hi - c_lo + 1) * mw;
            memcpy(out + o, d + L.h.sof, L.kept[i][1]);
            out[o + 5] = (uint8_t)(h >> 8), out[o + 6] = (uint8_t)h;
            out[o + 7] = (uint8_t)(w >> 8), out[o + 8] = (uint8_t)w;
        } else {
            memcpy(out + o, d + L.kept[i][0], L.kept[i][1]);
        }
        o += L.kept[i][1];
    }
    for (unsigned r = r_lo; r <= r_hi; r = k ? r_hi + 1 : r + 1)
        for (size_t s = k ? s_first : (size_t)r * per_row + q_lo; s <= (k ? s_last : (size_t)r * per_row + q_hi); s++) {
            if (used) { /* restart markers numbered afresh: 0..7 in turn */
                out[o++] = 0xFF;
                out[o++] = (uint8_t)(0xD0 + (used - 1) % 8);
            }
            size_t start = s ? ends[s - 1] + 2 : L.h.scan;
            memcpy(out + o, d + start, ends[s] - start);
            o += ends[s] - start;
            used++;
        }
    out[o++] = 0xFF;
    out[o++] = 0xD9;
    free(ends);
    view->data = out;
    view->size = o;
    view->row_shift = (int)(r_lo * mh / (unsigned)denom);
    view->col_shift = (int)(c_lo * mw / (unsigned)denom);
    view->cut_below = r_hi < rows - 1;
    return 1;
}
