/* converters/jpeg_check.py:passthrough_size in C, answer for answer.
 *
 * The Python version is the reference (tests/converters compare the two over
 * real photos, Pillow's edge cases and thousands of mutated files); read it
 * for why each rule exists. Mirrored here, step by step, including where
 * Python reads past a segment's end (slices and startswith are bounded by
 * the file, not the segment) and where an IndexError or struct.error ends the
 * walk (any read past the file: the answer is then "no"). */
#include "jpeg_check.h"

#include <string.h>

#include "markers.h" /* fastdata/jpeg/_native: the walk the crop path uses too */

typedef struct {
    const unsigned char *d;
    size_t n;
} span;

/* data[at:at+len] == text, with Python's slice clipped at the file's end */
static int has_at(span s, size_t at, const char *text, size_t len) {
    return at <= s.n && s.n - at >= len && memcmp(s.d + at, text, len) == 0;
}

static int is_unsure(unsigned m) { /* SOI, EOI, JPG, DAC, DHP, EXP */
    return m == 0xD8 || m == 0xD9 || m == 0xC8 || m == 0xCC || m == 0xDE || m == 0xDF;
}

typedef struct {
    unsigned height, width, count;
    unsigned char cid[3], tq[3];
} frame_info;

static unsigned u16(span s, size_t at, int little) {
    return little ? (unsigned)s.d[at] | (unsigned)s.d[at + 1] << 8 : (unsigned)s.d[at] << 8 | s.d[at + 1];
}

static unsigned long u32(span s, size_t at, int little) {
    unsigned long a = s.d[at], b = s.d[at + 1], c = s.d[at + 2], e = s.d[at + 3];
    return little ? a | b << 8 | c << 16 | e << 24 : a << 24 | b << 16 | c << 8 | e;
}

/* _frame: 1 with f filled, else 0 */
static int parse_frame(span s, size_t start, size_t end, int has_limit, unsigned long long limit, frame_info *f) {
    if (start + 6 > s.n) return 0; /* struct.error */
    unsigned precision = s.d[start], count = s.d[start + 5];
    f->height = u16(s, start + 1, 0);
    f->width = u16(s, start + 3, 0);
    if (precision != 8 || (count != 1 && count != 3) || end - start != 6 + 3 * (size_t)count || !f->height ||
        !f->width)
        return 0;
    if (has_limit && (unsigned long long)f->height * f->width > limit) return 0;
    f->count = 0;
    for (unsigned i = 0; i < count; i++) {
        const unsigned char *c = s.d + start + 6 + 3 * i;
        unsigned cid = c[0], sampling = c[1], tq = c[2];
        for (unsigned j = 0; j < f->count; j++)
            if (f->cid[j] == cid) return 0;
        if (!(1 <= sampling >> 4 && sampling >> 4 <= 4 && 1 <= (sampling & 15) && (sampling & 15) <= 4) || tq > 3)
            return 0;
        f->cid[f->count] = (unsigned char)cid;
        f->tq[f->count] = (unsigned char)tq;
        f->count++;
    }
    return 1;
}

/* _quant_tables: marks the defined tables in *defined (bit tq) */
static int quant_tables(span s, size_t start, size_t end, unsigned *defined) {
    size_t pos = start;
    while (pos < end) {
        unsigned pq = s.d[pos] >> 4, tq = s.d[pos] & 15;
        if (pq > 1 || tq > 3) return 0;
        *defined |= 1u << tq;
        pos += 1 + 64 * (pq + 1);
    }
    return pos == end;
}

static int scan_header(span s, size_t start, size_t end, const frame_info *f) {
    unsigned count = s.d[start];
    if (!(1 <= count && count <= f->count) || end - start != 4 + 2 * (size_t)count) return 0;
    for (unsigned i = 0; i < count; i++) {
        unsigned id = s.d[start + 1 + 2 * i], found = 0;
        for (unsigned j = 0; j < f->count; j++) found |= f->cid[j] == id;
        if (!found) return 0;
    }
    return 1;
}

/* _upright: 1 when the TIFF block surely says orientation 1 (or has none) */
static int upright(span s, size_t start, size_t end) {
    int little;
    if (has_at(s, start, "II", 2))
        little = 1;
    else if (has_at(s, start, "MM", 2))
        little = 0;
    else
        return 0;
    if (start + 8 > s.n) return 0; /* struct.error */
    unsigned magic = u16(s, start + 2, little);
    unsigned long long ifd = u32(s, start + 4, little);
    unsigned long long p = start + ifd;
    if (magic != 42 || ifd < 8 || p + 2 > end) return 0;
    unsigned count = u16(s, (size_t)p, little);
    p += 2;
    if (p + 12ull * count > end) return 0;
    int found = 0;
    for (unsigned i = 0; i < count; i++, p += 12) {
        if (u16(s, (size_t)p, little) != 0x0112) continue;
        unsigned kind = u16(s, (size_t)p + 2, little);
        unsigned long num = u32(s, (size_t)p + 4, little);
        unsigned value = u16(s, (size_t)p + 8, little);
        if (found || kind != 3 || num != 1 || value != 1) return 0;
        found = 1;
    }
    return 1;
}

static int contains(span s, size_t start, size_t end, const char *text, size_t len) {
    for (size_t at = start; at + len <= end; at++) {
        const unsigned char *hit = memchr(s.d + at, text[0], end - len + 1 - at);
        if (hit == NULL) return 0;
        at = (size_t)(hit - s.d);
        if (memcmp(hit, text, len) == 0) return 1;
    }
    return 0;
}

int fd_jpeg_passthrough(const unsigned char *data, size_t n, int has_limit, unsigned long long limit,
                        unsigned *height, unsigned *width) {
    span s = {data, n};
    if (n < 4 || data[0] != 0xFF || data[1] != 0xD8 || data[n - 2] != 0xFF || data[n - 1] != 0xD9) return FD_JPEG_NO;
    int have_frame = 0, exif_seen = 0;
    unsigned quant = 0;
    frame_info f = {0}; /* read only once have_frame is set; zeroed for the compiler */
    fd_segment seg;
    for (size_t pos = 2;; pos = seg.end) {
        /* junk between segments, a file that ends inside a marker (IndexError),
         * a standalone marker (TEM, RSTn, SOI, EOI) or a bad length: all "no" */
        if (fd_next_segment(data, n, pos, FD_SEGMENT_FILL, &seg) != FD_SEGMENT_OK) return FD_JPEG_NO;
        unsigned marker = seg.code;
        if (marker < 0xC0 || is_unsure(marker)) return FD_JPEG_NO;
        size_t start = seg.start, end = seg.end, length = end - start + 2;
        if (end > n - 2) return FD_JPEG_NO;
        if (marker == 0xC0 || marker == 0xC1 || marker == 0xC2) {
            if (have_frame || !parse_frame(s, start, end, has_limit, limit, &f)) return FD_JPEG_NO;
            have_frame = 1;
        } else if (fd_is_frame(marker)) { /* every other SOFn: lossless, hierarchical, arithmetic */
            return FD_JPEG_NO;
        } else if (marker == 0xDB) {
            if (!quant_tables(s, start, end, &quant)) return FD_JPEG_NO;
        } else if (marker == 0xE1) {
            if (has_at(s, start, "Exif\0\0", 6)) {
                if (exif_seen || !upright(s, start + 6, end)) return FD_JPEG_NO;
                exif_seen = 1;
            } else if (contains(s, start, end, "Orientation", 11)) {
                return FD_JPEG_NO;
            }
        } else if (marker == 0xE2 && has_at(s, start, "MPF\0", 4)) {
            return FD_JPEG_NO;
        } else if (marker == 0xE0 || marker == 0xEE || marker == 0xE2) {
            /* Pillow's Image.open fails on short JFIF, Adobe and ICC segments */
            const char *prefix = marker == 0xE0 ? "JFIF" : marker == 0xEE ? "Adobe" : "ICC_PROFILE";
            size_t plen = marker == 0xE0 ? 4 : marker == 0xEE ? 5 : 12; /* ICC_PROFILE and its NUL */
            size_t shortest = marker == 0xE2 ? 14 : 7;
            if (length - 2 < shortest && has_at(s, start, prefix, plen)) return FD_JPEG_NO;
        } else if (marker == 0xDA) {
            if (!have_frame || end >= n - 2 || !scan_header(s, start, end, &f)) return FD_JPEG_NO;
            for (unsigned j = 0; j < f.count; j++)
                if (!(quant >> f.tq[j] & 1)) return FD_JPEG_NO;
            *height = f.height;
            *width = f.width;
            return FD_JPEG_YES;
        }
    }
}
