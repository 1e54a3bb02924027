/* The fast way to put restart markers into a baseline JPEG: cut its own
 * entropy-coded data into segments, without decoding a coefficient. */
#ifndef FD_RESEGMENT_H
#define FD_RESEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "cropdecode.h"

/* Not rewritten here: the caller re-encodes the file with libjpeg instead. */
#define FD_RESEGMENT_DECLINED (-1)

/* 1: fd_add_restarts tries fd_resegment first; 0: libjpeg only (tests, benchmarks). */
extern int fd_allow_resegment;

/* The JPEG with a DRI of `interval(MCUs per row)` MCUs and the restart
 * markers it implies; everything else is copied: every marker before the
 * scan (EXIF, ICC, COM, the Huffman and quantisation tables) byte for byte,
 * and each MCU's Huffman-coded bits, except the DC code of the first block
 * of each component in a segment, which becomes the absolute DC value
 * (prediction starts again from 0 after a restart marker). So the
 * coefficients, and the pixels, are those of the source.
 * FD_OK: *out (malloc'd) holds *out_size bytes. FD_ERROR: a bad Huffman code
 * or data that ends inside the scan (libjpeg reports both). FD_NOMEM.
 * FD_RESEGMENT_DECLINED: anything else unusual (not a single baseline scan
 * of all components, restart markers already there, a DC table with no code
 * for a value the new segments start with, bytes between the scan and EOI). */
int fd_resegment(const uint8_t *data, size_t size, int chunks, uint8_t **out, size_t *out_size, fd_result *res);

#endif
