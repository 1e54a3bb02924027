/* Huffman tables for resegment.c (see huffman.h). */
#include "huffman.h"

/* libjpeg's jpeg_make_d_derived_tbl, checks included (0: libjpeg refuses it). */
int fd_huff_table(struct htable *t, const uint8_t *bits, const uint8_t *vals, int dc) {
    int32_t code = 0;
    int k = 0;
    memset(t, 0, sizeof(*t));
    for (int l = 1; l <= 16; l++) {
        t->valoff[l] = k - code;
        t->maxcode[l] = bits[l - 1] ? code + bits[l - 1] - 1 : -1;
        for (int i = 0; i < bits[l - 1]; i++, k++, code++) {
            /* More codes than l bits hold: refused below anyway, but not
             * before they would be written past the end of look and skip. */
            if (code >= (int32_t)1 << l) return 0;
            uint8_t sym = vals[k];
            t->vals[k] = sym;
            int r = sym >> 4, size = sym & 15;
            unsigned skip = size ? (unsigned)(l + size) | (unsigned)(r + 1) << 5 : r == 15 ? (unsigned)l | 16u << 5 : (unsigned)l | 1u << 10;
            if (l <= LOOK)
                for (int32_t e = code << (LOOK - l); e < (code + 1) << (LOOK - l); e++)
                    t->look[e] = (uint16_t)(l << 8 | sym), t->skip[e] = (uint16_t)skip;
            if (dc && sym > 15) return 0; /* libjpeg: a bad DC table */
        }
        if (code >= (int32_t)1 << l) return 0; /* an all-ones code */
        code <<= 1;
    }
    t->maxcode[17] = INT32_MAX;
    t->defined = 1;
    return 1;
}

/* The code of each DC category in a table of these counts and values. */
void fd_huff_dc_codes(struct htable *t, const uint8_t *bits, const uint8_t *vals) {
    int32_t code = 0;
    for (int l = 1, k = 0; l <= 16; l++, code <<= 1)
        for (int i = 0; i < bits[l - 1]; i++, k++, code++)
            if (vals[k] < 16 && !t->size[vals[k]]) t->code[vals[k]] = (uint16_t)code, t->size[vals[k]] = (uint8_t)l;
}

/* A DC table's counts and values with a code for every category 0..11 it
 * lacks: a segment starts from prediction 0, so its first DC difference is
 * the whole DC value, which an optimised table may have no code for (it only
 * saw differences). The new codes take the unused end of the code space, so
 * every existing code stays the same; where 16 bits leave no room for them
 * the table is kept as it is. Returns the number of values; nvals holds
 * up to 12 more than vals. */
int fd_huff_extend_dc(const uint8_t *bits, const uint8_t *vals, uint8_t *nbits, uint8_t *nvals) {
    int n = 0, longest = 0, k = 0;
    int32_t next = 0; /* the first unused code of the longest length */
    uint8_t have[16] = {0};
    for (int l = 1; l <= 16; l++) {
        if (bits[l - 1]) {
            next = (next << (l - longest)) + bits[l - 1], longest = l;
            for (int i = 0; i < bits[l - 1]; i++) have[vals[n + i] & 15] |= vals[n + i] < 16;
        }
        n += bits[l - 1];
    }
    memcpy(nbits, bits, 16), memcpy(nvals, vals, (size_t)n);
    for (int c = 0; c <= 11; c++)
        if (!have[c]) nvals[n + k++] = (uint8_t)c;
    for (int l = longest > 0 ? longest : 1; k && n + k <= 256 && l <= 16; l++)
        if (((int32_t)1 << l) - 1 - (next << (l - longest)) >= k) { /* the all-ones code stays unused */
            nbits[l - 1] = (uint8_t)(nbits[l - 1] + k);
            return n + k;
        }
    return n;
}

