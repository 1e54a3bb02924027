/* The one walk over a JPEG's marker segments (SOI, APPn, DQT, DHT, SOFn,
 * DRI, ... SOS), shared by every C reader of JPEG headers: the crop path's
 * segments.c and resegment.c (through fastdata/decode/_native/baseline.h) and
 * the converter's structural check (fastdata/formats/_native/jpeg_check.c).
 * Both extensions have this folder on their include path; it includes nothing
 * of theirs. It reads framing only; what a marker means, and which ones a
 * caller accepts, stays with the caller. The Python twin is
 * fastdata/jpeg/markers.py.
 * Header-only and without libjpeg, so either extension builds without the other. */
#ifndef FD_MARKERS_H
#define FD_MARKERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    unsigned code;  /* the byte after 0xFF: 0xC0 SOF0, 0xC4 DHT, 0xDA SOS, ... */
    size_t at;      /* offset of the marker's 0xFF (the last one, after fill bytes) */
    size_t start;   /* first byte after the length field (for a standalone marker: after the code) */
    size_t end;     /* one past the segment's last byte: where the next marker starts */
} fd_segment;

/* What fd_next_segment found at pos; anything but FD_SEGMENT_OK ends a walk. */
enum {
    FD_SEGMENT_OK = 0,
    FD_SEGMENT_JUNK,       /* no 0xFF where a marker should start */
    FD_SEGMENT_TRUNCATED,  /* the data ends inside the marker code or the length field */
    FD_SEGMENT_STANDALONE, /* TEM, RSTn, SOI, EOI: no length field; *seg filled, start == end */
    FD_SEGMENT_BAD_LENGTH, /* a length below 2, or one that runs past the end */
};

/* Flag: skip 0xFF fill bytes before the marker code (B.1.1.2 allows any
 * number). Without it the code must follow the first 0xFF. */
#define FD_SEGMENT_FILL 1u

/* 1 for a start-of-frame marker, one that carries the image size: SOF0-SOF15
 * less DHT 0xC4, JPG 0xC8 and DAC 0xCC (markers.py: FRAMES). */
static inline int fd_is_frame(unsigned code) {
    return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC;
}

/* 1 when data starts with SOI (0xFF 0xD8): the walk's first segment is at 2. */
static inline int fd_starts_jpeg(const uint8_t *d, size_t size) { return size >= 2 && d[0] == 0xFF && d[1] == 0xD8; }

/* The marker segment at data[pos] of a size-byte buffer. Reads nothing at or
 * past size; *seg is filled for FD_SEGMENT_OK and FD_SEGMENT_STANDALONE.
 * The next segment starts at seg->end. Inline: the converter's check walks a
 * file in ~100 ns, and a call per segment cost it 5%. */
static inline int fd_next_segment(const uint8_t *d, size_t size, size_t pos, unsigned flags, fd_segment *seg) {
    if (pos >= size) return FD_SEGMENT_TRUNCATED;
    if (d[pos] != 0xFF) return FD_SEGMENT_JUNK;
    if (flags & FD_SEGMENT_FILL)
        while (pos + 1 < size && d[pos + 1] == 0xFF) pos++;
    if (pos + 1 >= size) return FD_SEGMENT_TRUNCATED;
    seg->code = d[pos + 1];
    seg->at = pos;
    /* no length field: TEM, RST0-7, SOI, EOI (ITU T.81 B.1.1.3) */
    if (seg->code == 0x01 || (seg->code >= 0xD0 && seg->code <= 0xD9)) {
        seg->start = seg->end = pos + 2;
        return FD_SEGMENT_STANDALONE;
    }
    if (pos + 4 > size) return FD_SEGMENT_TRUNCATED;
    size_t len = (size_t)d[pos + 2] << 8 | d[pos + 3];
    if (len < 2 || len > size - pos - 2) return FD_SEGMENT_BAD_LENGTH;
    seg->start = pos + 4;
    seg->end = pos + 2 + len;
    return FD_SEGMENT_OK;
}

#endif
