/* The header of a single-scan baseline JPEG, as the crop path's two
 * rewriters need it: segments.c (keep only a crop's restart segments) and
 * resegment.c (add restart markers). Both take only files they understand
 * exactly, so the rules are strict and shared: one walk (markers.h, in
 * fastdata/jpeg/_native), one set of rules, two callers. */
#ifndef FD_BASELINE_H
#define FD_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#include "markers.h"

typedef struct {
    unsigned width, height;
    int ncomp;                /* 1 or 3 */
    int id[3], h[3], v[3];    /* each frame component's id and sampling factors */
    int hmax, vmax, hmin, vmin;
    unsigned restart;         /* the DRI interval; 0: no DRI */
    size_t sof;               /* offset of the SOF marker */
    size_t sos;               /* offset of the SOS marker */
    size_t scan;              /* first entropy-coded byte */
} fd_baseline;

/* Called for each marker segment up to and including the SOS, once the rules
 * below accept it; returning 0 declines the file. */
typedef int (*fd_segment_fn)(void *ctx, const uint8_t *data, const fd_segment *seg);

/* 1 and *h filled when data starts with SOI, its markers follow each other
 * with no fill bytes or junk between them, it has one SOF0/SOF1 frame of 8-bit
 * samples and 1 or 3 components (sampling factors 1-4, a lone component 1x1),
 * no other SOFn or DNL, a DRI (if any) of the right length, and a first scan
 * of every component with Ss=0, Se=63, Ah=Al=0. Else 0: the caller leaves the
 * file to libjpeg, which reports whatever is wrong with it.
 * each (may be NULL) sees every accepted segment and may decline more. */
int fd_read_baseline(const uint8_t *data, size_t size, fd_baseline *h, fd_segment_fn each, void *ctx);

#endif
