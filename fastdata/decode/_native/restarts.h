/* Lossless rewrite of a baseline JPEG with restart markers, so that the crop
 * decoder can skip the segments a crop does not need (segments.h). */
#ifndef FD_RESTARTS_H
#define FD_RESTARTS_H

#include <stddef.h>
#include <stdint.h>

#include "cropdecode.h"

/* The same DCT coefficients (so the same pixels) and every APPn/COM marker,
 * with a restart marker every MCUs_per_row / d MCUs, d the largest divisor of
 * the MCUs per row not above chunks (1: one per MCU row; interval.h).
 * First fd_resegment (resegment.h: the source's data cut into segments);
 * what it declines libjpeg re-encodes, with Huffman tables fitted to the
 * image.
 * FD_OK: *out (malloc'd, the caller frees) holds *out_size bytes.
 * FD_UNSUPPORTED: not a single-scan-able 8-bit Huffman JPEG of 1 (unsubsampled)
 * or 3 YCbCr/RGB components, e.g. progressive, arithmetic, CMYK.
 * FD_ERROR: corrupt or truncated (any libjpeg warning). FD_NOMEM. */
int fd_add_restarts(const uint8_t *data, size_t size, int chunks, uint8_t **out, size_t *out_size,
                    fd_result *res);

#endif
