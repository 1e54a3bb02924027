/* The single-scan baseline header both crop-path rewriters accept (see baseline.h). */
#include "baseline.h"

#include <string.h>

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* SOF0/SOF1: 8-bit, 1 or 3 components, the length exactly theirs. */
static int read_frame(const uint8_t *s, size_t len, fd_baseline *h) {
    if (h->ncomp || len < 6 || s[0] != 8) return 0; /* a second frame, or short, or not 8-bit */
    h->height = be16(s + 1), h->width = be16(s + 3), h->ncomp = s[5];
    if (!h->height || !h->width || (h->ncomp != 1 && h->ncomp != 3) || len != 6 + 3u * (unsigned)h->ncomp) return 0;
    for (int i = 0; i < h->ncomp; i++) {
        int hs = s[7 + 3 * i] >> 4, vs = s[7 + 3 * i] & 15;
        if (hs < 1 || hs > 4 || vs < 1 || vs > 4) return 0;
        /* A lone component's MCU is one block whatever its factors; keep the
         * iMCU row one block high too. */
        if (h->ncomp == 1 && (hs != 1 || vs != 1)) return 0;
        h->id[i] = s[6 + 3 * i], h->h[i] = hs, h->v[i] = vs;
        if (hs > h->hmax) h->hmax = hs;
        if (vs > h->vmax) h->vmax = vs;
        if (!h->hmin || hs < h->hmin) h->hmin = hs;
        if (!h->vmin || vs < h->vmin) h->vmin = vs;
    }
    return 1;
}

/* Every frame component in one sequential scan: Ss=0, Se=63, Ah=Al=0. */
static int read_scan(const uint8_t *s, size_t len, const fd_baseline *h) {
    if (!h->ncomp || len < 1 || s[0] != h->ncomp || len != 4 + 2u * (unsigned)h->ncomp) return 0;
    const uint8_t *t = s + 1 + 2 * h->ncomp;
    return t[0] == 0 && t[1] == 63 && t[2] == 0;
}

int fd_read_baseline(const uint8_t *d, size_t size, fd_baseline *h, fd_segment_fn each, void *ctx) {
    memset(h, 0, sizeof(*h));
    if (!fd_starts_jpeg(d, size)) return 0;
    fd_segment seg;
    for (size_t p = 2;; p = seg.end) {
        /* junk between markers (libjpeg warns), fill bytes, standalone markers */
        if (fd_next_segment(d, size, p, 0, &seg) != FD_SEGMENT_OK) return 0;
        unsigned m = seg.code;
        const uint8_t *s = d + seg.start;
        size_t len = seg.end - seg.start;
        if (m == 0xC0 || m == 0xC1) {
            if (!read_frame(s, len, h)) return 0;
            h->sof = seg.at;
        } else if ((m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8) || m == 0xDC) {
            return 0; /* progressive, lossless, arithmetic, DNL */
        } else if (m == 0xDD) {
            if (len != 2) return 0;
            h->restart = be16(s);
        } else if (m == 0xDA) {
            if (!read_scan(s, len, h)) return 0;
            h->sos = seg.at, h->scan = seg.end;
        }
        if (each && !each(ctx, d, &seg)) return 0;
        if (m == 0xDA) return 1;
    }
}
