/* converters/jpeg_check.py's structural JPEG check, in C (see jpeg_check.c). */
#ifndef FD_JPEG_CHECK_H
#define FD_JPEG_CHECK_H

#include <stddef.h>

enum { FD_JPEG_NO = 0, FD_JPEG_YES = 1 };

/* FD_JPEG_YES with *height and *width set when data is a well-framed JPEG
 * that converters/jpeg_check.py:passthrough_size accepts; else FD_JPEG_NO.
 * has_limit/limit: Pillow's Image.MAX_IMAGE_PIXELS (height * width above it is refused). */
int fd_jpeg_passthrough(const unsigned char *data, size_t n, int has_limit, unsigned long long limit,
                        unsigned *height, unsigned *width);

#endif
