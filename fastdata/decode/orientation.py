"""EXIF orientation: turning stored pixels upright, and boxes back to storage.

Orientation ``o`` says how to transform the stored image ``S`` (``H x W``) to
the upright one ``U``. Writing ``T = S.transpose(1, 0, 2)``:

=====  =====================  ======================
``o``  upright ``U``          ``U[i, j]``
=====  =====================  ======================
1      ``S``                  ``S[i, j]``
2      ``S[:, ::-1]``         ``S[i, W-1-j]``
3      ``S[::-1, ::-1]``      ``S[H-1-i, W-1-j]``
4      ``S[::-1]``            ``S[H-1-i, j]``
5      ``T``                  ``S[j, i]``
6      ``T[:, ::-1]``         ``S[H-1-j, i]`` (rotate 90 clockwise)
7      ``T[::-1, ::-1]``      ``S[H-1-j, W-1-i]``
8      ``T[::-1]``            ``S[j, W-1-i]`` (rotate 90 counter-clockwise)
=====  =====================  ======================

Because each is a flip and/or transpose of the whole frame, cropping the
stored box that :func:`box_to_stored` returns and then orienting it gives the
same pixels as orienting first and cropping the upright box.
"""

from __future__ import annotations

import numpy as np

Box = tuple[float, float, float, float]  # (top, left, height, width)


def orient(arr: np.ndarray, orientation: int) -> np.ndarray:
    """The upright view of stored HWC pixels (a view, not a copy)."""
    if orientation <= 1 or orientation > 8:
        return arr
    if orientation == 2:
        return arr[:, ::-1]
    if orientation == 3:
        return arr[::-1, ::-1]
    if orientation == 4:
        return arr[::-1]
    t = arr.swapaxes(0, 1)
    if orientation == 5:
        return t
    if orientation == 6:
        return t[:, ::-1]
    if orientation == 7:
        return t[::-1, ::-1]
    return t[::-1]


def box_to_stored(box: Box, orientation: int, stored_size: tuple[int, int]) -> Box:
    """Map an upright-frame box to the stored-frame box holding the same pixels.

    Args:
        box: ``(top, left, height, width)`` in the upright frame (ints or floats).
        orientation: EXIF orientation 1-8.
        stored_size: ``(H, W)`` of the stored image.
    """
    t, l, h, w = box
    sh, sw = stored_size
    if orientation <= 1 or orientation > 8:
        return box
    # Stored rows come from upright rows (1-4) or upright columns (5-8),
    # read forwards or backwards; likewise stored columns.
    if orientation in (2, 3, 4):
        rows = (t, h) if orientation == 2 else (sh - t - h, h)
        cols = (l, w) if orientation == 4 else (sw - l - w, w)
    else:
        rows = (l, w) if orientation in (5, 8) else (sh - l - w, w)
        cols = (t, h) if orientation in (5, 6) else (sw - t - h, h)
    return (rows[0], cols[0], rows[1], cols[1])


# The inverse of each orientation's transform: rotations 6 and 8 undo each
# other, every other one is its own inverse.
_INVERSE = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 8, 7: 7, 8: 6}


def box_to_upright(box: Box, orientation: int, upright_size: tuple[int, int]) -> Box:
    """Map a stored-frame box to the upright frame (inverse of :func:`box_to_stored`).

    Args:
        box: ``(top, left, height, width)`` in the stored frame.
        orientation: EXIF orientation 1-8.
        upright_size: ``(H, W)`` of the upright image.
    """
    return box_to_stored(box, _INVERSE.get(orientation, 1), upright_size)
