/* Huffman tables and bit-level reading and writing for resegment.c, which
 * cuts a JPEG's entropy-coded data into restart segments. Reading decodes
 * exactly as libjpeg's jdhuff.c does (same table checks, same end-of-block
 * rule), so the blocks found are the ones libjpeg sees. */
#ifndef FD_HUFFMAN_H
#define FD_HUFFMAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOOK 9 /* codes up to this long decode with one table look-up */

struct htable {
    uint16_t look[1 << LOOK]; /* code length << 8 | symbol, 0: a longer code */
    uint16_t skip[1 << LOOK]; /* AC: bits to skip (code and value) | (zeros run + 1) << 5 | end of block << 10 */
    int32_t maxcode[18];      /* largest code of each length, -1: none */
    int32_t valoff[17];       /* symbol index of a code of length l: code + valoff[l] */
    uint8_t vals[256];
    uint16_t code[16];        /* DC tables: the code of each category in the extended table */
    uint8_t size[16];         /* (fd_huff_extend_dc), and its length (0: none) */
    int defined;
};

/* The table of these code counts per length and values (as in a DHT
 * segment); 0 where libjpeg refuses it (jpeg_make_d_derived_tbl's checks). */
int fd_huff_table(struct htable *t, const uint8_t *bits, const uint8_t *vals, int dc);

/* t's DC codes (code, size) from these counts and values: those of
 * fd_huff_extend_dc, while t decodes with the source's own. */
void fd_huff_dc_codes(struct htable *t, const uint8_t *bits, const uint8_t *vals);

/* A DC table's counts and values with a code for every category 0..11 it
 * lacks (see huffman.c). Returns the number of values; nvals holds up to 12
 * more than vals. */
int fd_huff_extend_dc(const uint8_t *bits, const uint8_t *vals, uint8_t *nbits, uint8_t *nvals);

/* Reading: u is the entropy-coded data with stuffed zeros taken out, then
 * enough zero bytes for the reads past its end (64 bits from any position). */
static inline uint64_t peek(const uint8_t *u, size_t pos) {
    uint64_t w;
    memcpy(&w, u + (pos >> 3), 8);
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#else
    const uint8_t *p = u + (pos >> 3);
    w = 0;
    for (int i = 0; i < 8; i++) w = w << 8 | p[i];
#endif
    return w << (pos & 7);
}

static inline int decode(const struct htable *t, const uint8_t *u, size_t *pos) {
    uint64_t w = peek(u, *pos);
    unsigned e = t->look[w >> (64 - LOOK)];
    if (e) {
        *pos += e >> 8;
        return (int)(e & 0xFF);
    }
    for (int l = LOOK + 1; l <= 16; l++) {
        int32_t code = (int32_t)(w >> (64 - l));
        if (code <= t->maxcode[l]) {
            *pos += (size_t)l;
            return t->vals[code + t->valoff[l]];
        }
    }
    return -1;
}

/* One block: *dc gets its DC difference, *after_dc the position after the DC
 * code and bits. Ends where libjpeg's decode_mcu ends it (k may run past 63).
 * 0: a bad code, or the block ends past nbits (libjpeg: data ends early). */
static inline int walk_block(const struct htable *dct, const struct htable *act, const uint8_t *u, size_t nbits,
                             size_t *pos, int64_t *dc, size_t *after_dc) {
    int s = decode(dct, u, pos);
    if (s < 0) return 0;
    if (s) {
        uint32_t r = (uint32_t)(peek(u, *pos) >> (64 - s));
        *pos += (size_t)s;
        *dc += r < (1u << (s - 1)) ? (int64_t)r - ((int64_t)1 << s) + 1 : (int64_t)r;
    }
    *after_dc = *pos;
    /* The AC codes: bits kept in a register (w, avail valid bits) between
     * loads, which shortens the chain from one code to the next. */
    size_t p = *pos;
    uint64_t w = peek(u, p);
    int avail = 56;
    for (int k = 1; k < 64;) {
        if (avail < 32) w = peek(u, p), avail = 56; /* a code and its value take at most 31 */
        unsigned e = act->skip[w >> (64 - LOOK)];
        if (e) { /* most codes: one look-up */
            unsigned n = e & 31;
            p += n, w <<= n, avail -= (int)n;
            if (e >> 10) break;
            k += (int)(e >> 5 & 31);
            continue;
        }
        int sym = decode(act, u, &p);
        if (sym < 0) return 0;
        int r = sym >> 4;
        s = sym & 15;
        p += (size_t)s, w = peek(u, p), avail = 56;
        if (s) k += r + 1;
        else if (r != 15) break;
        else k += 16;
    }
    *pos = p;
    return p <= nbits;
}

/* Writing: bits into a growing buffer, 0xFF bytes stuffed with a zero. */
struct writer {
    uint8_t *buf;
    size_t len, cap;
    uint64_t acc;
    int n; /* bits in acc not yet written, < 32 between calls */
};

static inline int reserve(struct writer *w, size_t extra) {
    if (w->cap - w->len >= extra) return 1;
    size_t cap = w->cap * 2 > w->len + extra ? w->cap * 2 : w->len + extra;
    uint8_t *bigger = realloc(w->buf, cap);
    if (!bigger) return 0;
    w->buf = bigger, w->cap = cap;
    return 1;
}

static inline void put_byte(struct writer *w, uint8_t b) {
    w->buf[w->len++] = b;
    if (b == 0xFF) w->buf[w->len++] = 0; /* byte stuffing */
}

/* n <= 32 bits, bits < 2^n. Room for 8 bytes must be reserved. */
static inline void put(struct writer *w, uint32_t bits, int n) {
    w->acc = w->acc << n | bits;
    w->n += n;
    if (w->n < 32) return;
    w->n -= 32;
    uint32_t v = (uint32_t)(w->acc >> w->n);
    if (((~v - 0x01010101u) & v & 0x80808080u) == 0) { /* no 0xFF byte: ~v has no zero byte */
        uint8_t *p = w->buf + w->len;
        p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
        w->len += 4;
    } else {
        for (int sh = 24; sh >= 0; sh -= 8) put_byte(w, (uint8_t)(v >> sh));
    }
}

/* Bits [a, b) of the source. Room for 2 * (b - a) / 8 + 8 bytes must be reserved. */
static inline void copy_bits(struct writer *w, const uint8_t *u, size_t a, size_t b) {
    for (; b - a >= 32; a += 32) put(w, (uint32_t)(peek(u, a) >> 32), 32);
    if (b > a) put(w, (uint32_t)(peek(u, a) >> (64 - (b - a))), (int)(b - a));
}

/* Pad the segment with one bits to a byte boundary, as libjpeg does. */
static inline void end_segment(struct writer *w) {
    if (w->n & 7) put(w, (1u << (8 - (w->n & 7))) - 1, 8 - (w->n & 7));
    while (w->n >= 8) w->n -= 8, put_byte(w, (uint8_t)(w->acc >> w->n));
}

#endif
