"""A whole batch through the compiled crop decoder in one call.

Loader threads (``Workers(kind="threads")``) build a batch sample by sample:
each sample takes the GIL back after its decode, and ``fast_collate`` then
copies it into the batch (for an NCHW batch a strided transpose). Here the
per-sample work left in Python is only the planning (header, box, flip,
DCT scale: the same functions as :func:`fastdata.decode.decode_resized`),
and one C call decodes every sample straight into its slot of the batch,
the GIL released for the whole batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .decoder import DEFAULT_MAX_PIXELS, check_pixels
from .info import ImageInfo, is_jpeg
from .native import cropdecode, decode_geometry

Request = tuple[int, tuple[int, int, int, int], tuple[float, float, float, float], int, bool]


copy_into = getattr(cropdecode, "copy_into", None)
"""``copy_into(out_hwc, slot, image)``: an ``(H, W, 3)`` uint8 image (packed
pixels) into slot ``slot`` of a batch given as for :func:`decode_batch`, the
GIL released; None without the compiled decoder (or a build older than it)."""


def batch_available() -> bool:
    """Whether the compiled decoder has the batch entry point (a build older than it has not)."""
    return cropdecode is not None and hasattr(cropdecode, "decode_batch")


def batch_request(
    data: bytes,
    info: ImageInfo,
    box: tuple[float, float, float, float] | None,
    *,
    min_size: Any = None,
    snap: bool = True,
    flip: bool = False,
    name: str = "image",
) -> Request | None:
    """What :func:`decode_batch` needs for one sample: the plan that
    :func:`~fastdata.decode.decode_resized` would make for the same
    arguments, or ``None`` for input it leaves to the pure-Python path.

    Raises:
        DecodeError: an image above the default ``max_pixels``.
    """
    if info.format != "JPEG" or info.mode == "CMYK" or not is_jpeg(data):
        return None
    check_pixels(info, DEFAULT_MAX_PIXELS, name)
    n, region, sub = decode_geometry(info, box, min_size, snap, name)
    return n, region, sub, info.orientation, bool(flip)


def decode_batch(out_hwc: np.ndarray, items: list[tuple[int, bytes, Request]]) -> list[tuple[int, int, str]]:
    """Decode ``(slot, data, request)`` items into ``out_hwc[slot]``.

    ``out_hwc``: the batch as a writable ``(N, H, W, 3)`` uint8 view, of
    NHWC or NCHW memory (``batch.permute(0, 2, 3, 1).numpy()``). Returns
    ``(position in items, status, message)`` for the items the decoder did
    not write; the caller redoes those its own way.
    """
    flat = [(slot, data, *request) for slot, data, request in items]
    return cropdecode.decode_batch(out_hwc, flat, DEFAULT_MAX_PIXELS)
