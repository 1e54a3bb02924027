/* How many MCUs a restart segment holds: the one rule that both ways of
 * adding restart markers follow (restarts.c through libjpeg, resegment.c by
 * cutting the data), so both give the same segments. A leaf: restarts.c
 * calls resegment.c, and both read this, so neither calls the other back. */
#ifndef FD_INTERVAL_H
#define FD_INTERVAL_H

/* MCUs per restart segment for mx MCUs per row: the MCUs per row split into
 * d equal runs, d the largest divisor of mx not above chunks. When that
 * leaves runs more than 4x longer than asked (a prime mx), one MCU per
 * segment: on hymenoptera that decoded crops as fast as 3-MCU runs, for a
 * file 5% larger instead of 3%. */
static inline unsigned fd_restart_interval(unsigned mx, int chunks) {
    unsigned want = chunks > 1 ? (unsigned)chunks : 1, d = want;
    while (d > 1 && mx % d) d--;
    if (d * 4 < (want < mx ? want : mx)) d = mx;
    return mx / d;
}

#endif
