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

#define MAX_KEPT 64

int fd_allow_segments = 1;

struct layout {
    unsigned width, height, restart;
    int comps, hmax, vmax;
    int hmin, vmin;               /* smallest sampling factors: below the max, chroma is upsampled */
    size_t sof;                   /* offset of the SOF segment's marker */
    size_t kept[MAX_KEPT][2];     /* header segments copied: offset, length */
    int nkept;
    size_t scan;                  /* first entropy-coded byte */
};

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* Markers before the scan. APPn other than APP0 (JFIF) and APP14 (Adobe),
 * which decide the colour space, and COM are left out: EXIF and ICC can be
 * tens of kilobytes and the decoder ignores them (orientation is the
 * caller's). */
static int read_header(const uint8_t *d, size_t size, struct layout *L) {
    if (size < 4 || d[0] != 0xFF || d[1] != 0xD8) return 0;
    size_t p = 2;
    for (;;) {
        if (p + 4 > size || d[p] != 0xFF) return 0; /* junk between markers: libjpeg warns */
        unsigned m = d[p + 1], len = be16(d + p + 2);
        if (len < 2 || p + 2 + len > size) return 0;
        const uint8_t *s = d + p + 4;
        if (m == 0xC0 || m == 0xC1) {
            if (L->comps || len < 8) return 0;
            L->height = be16(s + 1);
            L->width = be16(s + 3);
            L->comps = s[5];
            if (s[0] != 8 || L->height == 0 || L->width == 0 || (L->comps != 1 && L->comps != 3) ||
                len != 8 + 3u * (unsigned)L->comps)
                return 0;
            for (int i = 0; i < L->comps; i++) {
                int h = s[7 + 3 * i] >> 4, v = s[7 + 3 * i] & 15;
                if (h < 1 || h > 4 || v < 1 || v > 4) return 0;
                /* A lone component's MCU is one block whatever its factors;
                 * keep the iMCU row one block high too. */
                if (L->comps == 1 && (h != 1 || v != 1)) return 0;
                if (h > L->hmax) L->hmax = h;
                if (v > L->vmax) L->vmax = v;
                if (!L->hmin || h < L->hmin) L->hmin = h;
                if (!L->vmin || v < L->vmin) L->vmin = v;
            }
            L->sof = p;
        } else if ((m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8) || m == 0xDC) {
            return 0; /* progressive, lossless, arithmetic, DNL */
        } else if (m == 0xDD) {
            if (len != 4) return 0;
            L->restart = be16(s);
        } else if (m == 0xDA) {
            /* Every component in one baseline scan (Ss=0, Se=63, Ah=Al=0). */
            if (!L->comps || len != 6 + 2u * s[0] || s[0] != L->comps) return 0;
            const uint8_t *t = s + 1 + 2 * s[0];
            if (t[0] != 0 || t[1] != 63 || t[2] != 0) return 0;
            L->scan = p + 2 + len;
        } else if (m == 0xD8 || m == 0xD9 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            return 0; /* standalone markers have no length */
        }
        int keep = m == 0xDA || !((m >= 0xE1 && m <= 0xED) || m == 0xEF || m == 0xFE);
        if (keep) {
            if (L->nkept == MAX_KEPT) return 0;
            L->kept[L->nkept][0] = p;
            L->kept[L->nkept][1] = 2 + len;
            L->nkept++;
        }
        p += 2 + len;
        if (m == 0xDA) return L->restart > 0;
    }
}

/* ends[i]: where segment i's entropy data ends (its RST, or the EOI for the
 * last); it starts 2 bytes after ends[i - 1] (at L->scan for the first).
 * 0 unless exactly n segments, RSTs numbered 0..7 in turn, and the EOI is the
 * file's last two bytes. */
static int find_segments(const uint8_t *d, size_t size, const struct layout *L, size_t *ends, size_t n) {
    size_t q = L->scan, count = 0;
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
    if (!fd_allow_segments || !read_header(d, size, &L)) return 0;
    if (max_pixels && (uint64_t)L.width * L.height > max_pixels) return 0;
    unsigned out_h = (L.height + (unsigned)denom - 1) / (unsigned)denom, out_w = (L.width + (unsigned)denom - 1) / (unsigned)denom;
    if ((unsigned)region[0] + (unsigned)region[2] > out_h || (unsigned)region[1] + (unsigned)region[3] > out_w)
        return 0; /* the whole-file path says what is wrong */
    unsigned mw = 8u * (unsigned)L.hmax, mh = 8u * (unsigned)L.vmax; /* MCU size, full-scale pixels */
    unsigned cols = (L.width + mw - 1) / mw, rows = (L.height + mh - 1) / mh, R = L.restart;
    /* Segments of whole rows (k rows each) or of row chunks (per_row each row). */
    unsigned k = R % cols == 0 ? R / cols : 0, per_row = k ? 0 : cols % R == 0 ? cols / R : 0;
    if (!k && !per_row) return 0;
    size_t n = ((size_t)cols * rows + R - 1) / R;
    unsigned r_lo, r_hi, c_lo = 0, c_hi = cols - 1;
    /* Without subsampling nothing is upsampled: no margin (4:4:4 and grey). */
    mcu_span(region[0], region[2], (int)mh / denom, rows, L.vmin < L.vmax, &r_lo, &r_hi);
    if (k) {
        r_lo = r_lo / k * k; /* whole segments */
        r_hi = (r_hi / k + 1) * k - 1 < rows - 1 ? (r_hi / k + 1) * k - 1 : rows - 1;
    } else {
        mcu_span(region[1], region[3], (int)mw / denom, cols, L.hmin < L.hmax, &c_lo, &c_hi);
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
        if (L.kept[i][0] == L.sof) { /* the new frame size: Y at +5, X at +7 */
            unsigned h = r_hi == rows - 1 ? L.height - r_lo * mh : (r_hi - r_lo + 1) * mh;
            unsigned w = c_hi == cols - 1 ? L.width - c_lo * mw : (c_hi - c_lo + 1) * mw;
            memcpy(out + o, d + L.sof, L.kept[i][1]);
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
            size_t start = s ? ends[s - 1] + 2 : L.scan;
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
