/* CRC-32C (Castagnoli) arithmetic for fastdata.formats._speedups: the
 * polynomial multiply that crc32c_combine and the interleaved hardware CRC
 * both rest on, and the hardware CRC itself where the CPU has one. */
#ifndef FD_CRC32C_HW_H
#define FD_CRC32C_HW_H

#include <stddef.h>
#include <stdint.h>

/* a * b modulo the Castagnoli polynomial, both bit-reflected (x^0 is the top bit). */
uint32_t fd_crc32c_multmodp(uint32_t a, uint32_t b);

/* x^(n 2^k) modulo the polynomial: with k = 3, the operator that appends n zero bytes. */
uint32_t fd_crc32c_x2nmodp(unsigned long long n, unsigned k);

/* Fills the tables; call once before anything else here. Returns the name of
 * the instruction set the hardware CRC uses ("sse4.2"), or NULL where this
 * CPU or this build has none: fd_crc32c_hw must then not be called. */
const char *fd_crc32c_init(void);

/* The CRC-32C of n bytes at p continuing from crc, with the usual pre- and
 * post-inversion, so fd_crc32c_hw(fd_crc32c_hw(0, a), b) is the CRC of a + b. */
uint32_t fd_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n);

#endif
