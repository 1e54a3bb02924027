/* Restart markers by cutting the entropy-coded data (see resegment.h).
 *
 * One pass of Huffman decoding finds where each block starts and ends and
 * keeps the DC predictions; the bits in between are copied (one bulk copy
 * per segment). No coefficient is stored, no table is rebuilt: the cost is
 * close to a Huffman decode, against libjpeg's decode + two encode passes.
 * The tables, the reading and the writing of bits are in huffman.h. */
#include "resegment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "huffman.h"
#include "interval.h"

int fd_allow_resegment = 1;

#define PAD 1024   /* zero bytes after the data: one block reads at most 64 x 31 bits (+ 8 bytes) */
#define MAX_BLOCKS 10 /* libjpeg's limit on blocks per MCU */

struct layout {
    size_t sos, scan;      /* offsets of the SOS marker and of the first entropy-coded byte */
    unsigned mx, my;       /* MCUs per row and per column */
    int nblocks;           /* blocks per MCU */
    int comp[MAX_BLOCKS];  /* scan component of each block */
    int first[MAX_BLOCKS]; /* the component's first block in the MCU */
    int dc[3], ac[3];      /* table indices of each scan component */
    int ncomp;
    unsigned restart;      /* the source's restart interval (DRI), 0: none */
    struct htable tables[2][4]; /* [DC, AC][id] */
};

/* The source's entropy-coded data, stuffed zeros and restart markers taken out. */
struct scan {
    uint8_t *u;      /* the bytes, then PAD zeros */
    size_t n;        /* how many */
    size_t *rst;     /* where each restart marker was, as an offset into u */
    size_t nrst, cap;
};

static int read_dht(struct layout *L, const uint8_t *s, unsigned len) {
    uint8_t bits[16], vals[256 + 12];
    while (len > 0) {
        if (len < 17) return 0;
        unsigned cls = s[0] >> 4, id = s[0] & 15, n = 0;
        for (int l = 0; l < 16; l++) n += s[1 + l];
        if (cls > 1 || id > 3 || n > 256 || 17 + n > len) return 0;
        /* The source is decoded with its own table: a code only the extended
         * one has is a bad code there (libjpeg-turbo's fast path reads it as
         * 0 without a warning). */
        if (!fd_huff_table(&L->tables[cls][id], s + 1, s + 17, cls == 0)) return 0;
        if (cls == 0) {
            fd_huff_extend_dc(s + 1, s + 17, bits, vals);
            fd_huff_dc_codes(&L->tables[cls][id], bits, vals);
        }
        s += 17 + n, len -= 17 + n;
    }
    return 1;
}

/* Reads each DHT as the walk meets it. fd_read_baseline lets reserved
 * markers (0x02-0xBF) and JPG (0xC8) through, as segments.c copies them;
 * this rewriter declines them and leaves the file to libjpeg. */
static int read_tables(void *ctx, const uint8_t *d, const fd_segment *seg) {
    if (seg->code < 0xC0 || seg->code == 0xC8) return 0;
    return seg->code != 0xC4 || read_dht(ctx, d + seg->start, (unsigned)(seg->end - seg->start));
}

/* The markers before the scan: 1 if this file is one this code rewrites. */
static int read_header(const uint8_t *d, size_t size, struct layout *L) {
    fd_baseline h;
    if (!fd_read_baseline(d, size, &h, read_tables, L)) return 0;
    for (int i = 0; i < h.ncomp; i++)
        for (int j = 0; j < i; j++)
            if (h.id[j] == h.id[i]) return 0;
    const uint8_t *s = d + h.sos + 4; /* the scan header: count, then (id, tables) per component */
    L->ncomp = h.ncomp, L->nblocks = 0;
    for (int j = 0; j < h.ncomp; j++) {
        int c = 0;
        while (c < h.ncomp && h.id[c] != s[1 + 2 * j]) c++;
        for (int i = 0; i < j; i++)
            if (s[1 + 2 * i] == s[1 + 2 * j]) return 0;
        if (c == h.ncomp) return 0;
        L->dc[j] = s[2 + 2 * j] >> 4, L->ac[j] = s[2 + 2 * j] & 15;
        if (L->dc[j] > 3 || L->ac[j] > 3 || !L->tables[0][L->dc[j]].defined || !L->tables[1][L->ac[j]].defined) return 0;
        int n = h.ncomp == 1 ? 1 : h.h[c] * h.v[c];
        if (L->nblocks + n > MAX_BLOCKS) return 0;
        for (int b = 0; b < n; b++) L->comp[L->nblocks + b] = j, L->first[L->nblocks + b] = b == 0;
        L->nblocks += n;
    }
    L->mx = (h.width + 8 * h.hmax - 1) / (8 * h.hmax), L->my = (h.height + 8 * h.vmax - 1) / (8 * h.vmax);
    L->sos = h.sos, L->scan = h.scan, L->restart = h.restart;
    return 1;
}

/* Fills S from the scan's bytes. FD_RESEGMENT_DECLINED when a marker other
 * than the expected RSTn (where the source has a DRI) comes before EOI:
 * another scan, DNL, truncation. */
static int unstuff(const uint8_t *d, size_t size, size_t scan, unsigned restart, struct scan *S) {
    size_t i = scan, k = 0;
    if (!(S->u = malloc(size - scan + PAD))) return FD_NOMEM;
    for (;;) {
        const uint8_t *ff = memchr(d + i, 0xFF, size - i);
        size_t j = ff ? (size_t)(ff - d) : size;
        memcpy(S->u + k, d + i, j - i), k += j - i;
        if (j + 1 < size && d[j + 1] == 0x00) {
            S->u[k++] = 0xFF, i = j + 2;
            continue;
        }
        while (j + 1 < size && d[j + 1] == 0xFF) j++; /* fill bytes */
        if (j + 1 >= size) return FD_RESEGMENT_DECLINED;
        if (d[j + 1] == 0xD9) break;
        if (!restart || d[j + 1] != 0xD0 + (S->nrst & 7)) return FD_RESEGMENT_DECLINED; /* libjpeg resyncs, warning */
        if (S->nrst == S->cap) {
            size_t cap = S->cap ? 2 * S->cap : 64, *bigger = realloc(S->rst, cap * sizeof(size_t));
            if (!bigger) return FD_NOMEM;
            S->rst = bigger, S->cap = cap;
        }
        S->rst[S->nrst++] = k, i = j + 2;
    }
    memset(S->u + k, 0, PAD);
    S->n = k;
    return FD_OK;
}

/* The first MCU after a restart, in the output (base: 0) or only in the source
 * (base: the DC values before it): each component's first DC re-coded as its
 * difference from base. */
static int first_mcu(const struct layout *L, struct writer *w, const uint8_t *u, size_t nbits, size_t *pos,
                     int64_t *dc, const int64_t *base) {
    for (int b = 0; b < L->nblocks; b++) {
        int c = L->comp[b];
        const struct htable *dct = &L->tables[0][L->dc[c]];
        size_t start = *pos, after_dc;
        if (!walk_block(dct, &L->tables[1][L->ac[c]], u, nbits, pos, &dc[c], &after_dc)) return FD_ERROR;
        if (!reserve(w, 2 * ((*pos - start) / 8) + 24)) return FD_NOMEM;
        if (L->first[b]) {
            int64_t v = dc[c] - base[c], mag = v < 0 ? -v : v;
            int cat = 0;
            while (mag >> cat) cat++;
            if (cat > 15 || !dct->size[cat]) return FD_RESEGMENT_DECLINED;
            put(w, dct->code[cat], dct->size[cat]);
            if (cat) put(w, (uint32_t)(v < 0 ? v + ((int64_t)1 << cat) - 1 : v), cat);
            start = after_dc;
        }
        copy_bits(w, u, start, *pos);
    }
    return FD_OK;
}

static int write_scan(const struct layout *L, struct writer *w, const struct scan *S, unsigned interval) {
    const uint8_t *u = S->u;
    uint64_t total = (uint64_t)L->mx * L->my;
    int64_t dc[3] = {0, 0, 0}, base[3] = {0, 0, 0};
    size_t pos = 0, mark = 0, after_dc, nbits = S->n * 8, next_rst = 0;
    for (uint64_t m = 0; m < total; m++) {
        int out_restart = m && m % interval == 0, src_restart = m && L->restart && m % L->restart == 0;
        if (out_restart || src_restart) {
            if (!reserve(w, 2 * ((pos - mark) / 8) + 32)) return FD_NOMEM;
            copy_bits(w, u, mark, pos);
        }
        if (src_restart) { /* libjpeg drops the rest of the byte; more before the marker is extraneous data */
            if (next_rst == S->nrst || (pos + 7) / 8 != S->rst[next_rst]) return FD_RESEGMENT_DECLINED;
            pos = S->rst[next_rst++] * 8;
        }
        if (out_restart) {
            end_segment(w);
            w->buf[w->len++] = 0xFF, w->buf[w->len++] = (uint8_t)(0xD0 + (m / interval - 1) % 8);
        }
        if (m == 0 || out_restart || src_restart) {
            for (int c = 0; c < L->ncomp; c++) base[c] = out_restart || m == 0 ? 0 : dc[c], dc[c] = src_restart ? 0 : dc[c];
            int st = first_mcu(L, w, u, nbits, &pos, dc, base);
            if (st != FD_OK) return st;
            mark = pos;
        } else {
            for (int b = 0; b < L->nblocks; b++) {
                int c = L->comp[b];
                if (!walk_block(&L->tables[0][L->dc[c]], &L->tables[1][L->ac[c]], u, nbits, &pos, &dc[c], &after_dc))
                    return FD_ERROR;
            }
        }
    }
    if (!reserve(w, 2 * ((pos - mark) / 8) + 32)) return FD_NOMEM;
    copy_bits(w, u, mark, pos);
    end_segment(w);
    /* What is left must be the last byte's padding: more is extraneous data (libjpeg warns). */
    return nbits - pos < 8 && next_rst == S->nrst ? FD_OK : FD_RESEGMENT_DECLINED;
}

/* The markers before the SOS as they are, but the DC tables extended (fd_huff_extend_dc). */
static int copy_header(const uint8_t *d, size_t sos, struct writer *w) {
    uint8_t bits[16], vals[256 + 12];
    memcpy(w->buf, d, 2), w->len = 2;
    fd_segment seg;
    for (size_t p = 2; p < sos; p = seg.end) {
        if (fd_next_segment(d, sos, p, 0, &seg) != FD_SEGMENT_OK) return FD_RESEGMENT_DECLINED; /* read_header accepted each */
        unsigned m = seg.code, len = (unsigned)(seg.end - seg.at - 2);
        if (!reserve(w, 2 + len + 12 * (len / 17 + 1))) return FD_NOMEM;
        if (m == 0xDD) continue; /* the source's DRI: the new one goes before the SOS */
        if (m != 0xC4) {
            memcpy(w->buf + w->len, d + p, 2 + len), w->len += 2 + len;
            continue;
        }
        size_t at = w->len;
        w->len += 4;
        for (const uint8_t *s = d + seg.start, *end = d + seg.end; s < end;) {
            unsigned n = 0;
            for (int l = 0; l < 16; l++) n += s[1 + l];
            if (s[0] >> 4 == 0) {
                int nn = fd_huff_extend_dc(s + 1, s + 17, bits, vals);
                w->buf[w->len] = s[0], memcpy(w->buf + w->len + 1, bits, 16), memcpy(w->buf + w->len + 17, vals, (size_t)nn);
                w->len += 17 + (size_t)nn;
            } else {
                memcpy(w->buf + w->len, s, 17 + n), w->len += 17 + n;
            }
            s += 17 + n;
        }
        size_t seglen = w->len - at - 2;
        if (seglen > 0xFFFF) return FD_RESEGMENT_DECLINED;
        w->buf[at] = 0xFF, w->buf[at + 1] = 0xC4, w->buf[at + 2] = (uint8_t)(seglen >> 8), w->buf[at + 3] = (uint8_t)seglen;
    }
    return FD_OK;
}

static const uint8_t DRI[] = {0xFF, 0xDD, 0x00, 0x04};

int fd_resegment(const uint8_t *d, size_t size, int chunks, uint8_t **out, size_t *out_size, fd_result *res) {
    struct layout *L = calloc(1, sizeof(*L));
    struct writer w = {0};
    struct scan S = {0};
    int st = L ? FD_RESEGMENT_DECLINED : FD_NOMEM;
    if (!L || !read_header(d, size, L) || (st = unstuff(d, size, L->scan, L->restart, &S)) != FD_OK) goto done;
    unsigned interval = fd_restart_interval(L->mx, chunks);
    st = FD_NOMEM;
    w.cap = size + size / 8 + 1024;
    if (!(w.buf = malloc(w.cap))) goto done;
    if ((st = copy_header(d, L->sos, &w)) != FD_OK) goto done;
    st = FD_NOMEM;
    if (!reserve(&w, 6 + L->scan - L->sos)) goto done;
    memcpy(w.buf + w.len, DRI, 4);
    w.buf[w.len + 4] = (uint8_t)(interval >> 8), w.buf[w.len + 5] = (uint8_t)interval;
    memcpy(w.buf + w.len + 6, d + L->sos, L->scan - L->sos);
    w.len += 6 + L->scan - L->sos;
    st = write_scan(L, &w, &S, interval);
    if (st == FD_OK && !reserve(&w, 2)) st = FD_NOMEM;
    if (st != FD_OK) goto done;
    w.buf[w.len++] = 0xFF, w.buf[w.len++] = 0xD9;
    *out = w.buf, *out_size = w.len, w.buf = NULL;
done:
    res->status = st;
    if (st == FD_ERROR) snprintf(res->message, sizeof(res->message), "Corrupt JPEG data: bad Huffman code or premature end of data");
    else if (st == FD_NOMEM) snprintf(res->message, sizeof(res->message), "out of memory");
    free(w.buf);
    free(S.u);
    free(S.rst);
    free(L);
    return st;
}
