"""``decode``: encoded bytes -> upright RGB uint8 pixels, optionally only a
region and at a reduced DCT scale."""

from __future__ import annotations

import logging
import numbers
from typing import Any

import numpy as np

from ..errors import ConfigError, DecodeError
from . import pillow_image
from .backends import RecoverableWarning, decode_pil, get_backend
from .info import ImageInfo, info_from_pillow, is_jpeg, parse_jpeg_header
from .orientation import box_to_stored, box_to_upright, orient
from .scaling import enclose, scale_denominator, scaled_extent, snap_box

DEFAULT_MAX_PIXELS = 178_956_970
"""Largest width x height decoded by default: Pillow's DecompressionBombError
threshold (twice ``PIL.Image.MAX_IMAGE_PIXELS``), about 0.5 GB of RGB."""

_log = logging.getLogger("fastdata.decode")


def decode(
    data: bytes,
    *,
    backend: str = "auto",
    min_size: int | tuple[int, int] | None = None,
    crop: tuple[int, int, int, int] | None = None,
    name: str | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
    info: ImageInfo | None = None,
) -> np.ndarray:
    """Decode an encoded image to upright RGB pixels.

    Args:
        data: encoded file bytes (any bytes-like object). JPEG goes to
            ``backend``; every other format (PNG, GIF, BMP, WebP, TIFF, ...)
            to Pillow whatever ``backend`` says.
        backend: ``"auto"`` (fastest installed: simplejpeg, then PyTurboJPEG,
            then Pillow), ``"simplejpeg"``, ``"turbo"`` or ``"pil"``.
        min_size: ``(height, width)`` (or one int for both) the caller needs,
            in the upright frame. A JPEG is then decoded at the smallest of
            1/8, 1/4, 1/2, 1 that keeps the used region at least this large,
            and the result is that much smaller (``ceil``-rounded): resize it
            yourself. ``None``: full size.
        crop: ``(top, left, height, width)`` in upright full-size pixels; only
            that region is returned (at the chosen scale, edges rounded to
            whole decoded pixels). Must lie inside the image.
        name: what errors call the image, e.g. ``"train.rec record 17"``.
        max_pixels: refuse images with more pixels than this (checked from
            the header, before decoding); ``None`` disables the check.
        info: :func:`read_info`'s result for ``data`` when the caller already
            has it (skips parsing the header again).

    Returns:
        ``(H, W, 3)`` uint8, C-contiguous and writable. Grayscale is
        expanded, CMYK/YCCK converted as Pillow does, EXIF orientation
        applied, transparency composited on white (see ``pillow_image``).

    Raises:
        DecodeError: corrupt, truncated, unsupported or too-large input; the
            message starts with ``name``.
        MissingDependencyError: an explicitly named backend is not installed.
        ConfigError: ``crop`` or ``min_size`` that cannot apply to this image.
    """
    arr = decode_view(data, backend=backend, min_size=min_size, crop=crop, name=name, max_pixels=max_pixels, info=info)
    if not (arr.flags.c_contiguous and arr.flags.writeable):
        arr = np.array(arr, order="C")
    return arr


def decode_view(
    data: bytes,
    *,
    backend: str = "auto",
    min_size: int | tuple[int, int] | None = None,
    crop: tuple[int, int, int, int] | None = None,
    name: str | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
    info: ImageInfo | None = None,
) -> np.ndarray:
    """:func:`decode` without the final copy: the result may be a strided or
    read-only view (cropped, oriented). For callers that copy anyway, e.g. a resize."""
    if crop is not None:
        _check_int_box(crop)
    pixels, sub = decode_region(
        data, crop, backend=backend, min_size=min_size, name=name, max_pixels=max_pixels, info=info
    )
    t, l, h, w = snap_box(sub, pixels.shape[:2])
    return pixels[t : t + h, l : l + w]


def decode_region(
    data: bytes,
    box: tuple[float, float, float, float] | None = None,
    *,
    backend: str = "auto",
    min_size: int | tuple[int, int] | None = None,
    name: str | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
    info: ImageInfo | None = None,
) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Decode the pixels covering an upright ``box`` whose edges may be fractional.

    For resizers that sample a sub-pixel box (exact ``Resize + CenterCrop``).
    Arguments as in :func:`decode`; ``box`` is ``(top, left, height, width)``
    in upright full-size pixels, ``None`` for the whole image.

    Returns:
        ``(pixels, sub_box)``: upright uint8 ``(h, w, 3)`` covering the box
        (possibly a view, possibly at 1/n DCT scale), and the box in those
        pixels' coordinates as floats.
    """
    if not isinstance(data, (bytes, bytearray)):
        data = bytes(data)
    label = name or f"image ({len(data)} bytes)"
    if not data:
        raise DecodeError(f"{label}: empty input, no image bytes")
    if is_jpeg(data):
        if info is None:
            info = parse_jpeg_header(data, name=label)
        check_pixels(info, max_pixels, label)
        stored = stored_box(box, info, label)
        arr, n = _decode_jpeg(data, info, stored, min_size, backend, label)
    else:
        with pillow_image.open_image(data, label) as img:
            info = info_from_pillow(img)
            check_pixels(info, max_pixels, label)
            stored = stored_box(box, info, label)
            pillow_image.load(img, label)
            arr, n = pillow_image.to_rgb_array(img), 1
    return _cover(arr, stored, info, n)


def _decode_jpeg(
    data: bytes, info: ImageInfo, box: tuple[float, float, float, float], min_size: Any, backend: str, label: str
) -> tuple[np.ndarray, int]:
    """The whole stored-frame image decoded at 1/n, and n."""
    n = jpeg_scale(info, box, min_size)
    used, decoder = get_backend(backend)
    try:
        arr = decoder(data, info, n, label)
    except RecoverableWarning as warning:
        _log.debug("%s: %s warned %r; decoding with Pillow, which accepts it", label, used, str(warning))
        arr = decode_pil(data, info, n, label)
    if arr.ndim == 3 and arr.shape[2] == 4:
        arr = pillow_image.cmyk_to_rgb(arr)
    return arr, n


def _cover(
    arr: np.ndarray, box: tuple[float, float, float, float], info: ImageInfo, n: int
) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Cut the decoded pixels covering stored ``box``, orient them, locate the box."""
    sub, (y0, y1, x0, x1) = scaled_region(box, info, arr.shape[:2], n)
    region = orient(arr[y0:y1, x0:x1], info.orientation)
    return region, box_to_upright(sub, info.orientation, region.shape[:2])


def jpeg_scale(info: ImageInfo, box: tuple[float, float, float, float], min_size: Any) -> int:
    """The DCT scale denominator that keeps stored ``box`` at least ``min_size``
    (upright ``(height, width)`` or one int; ``None``: 1)."""
    if min_size is None:
        return 1
    mh, mw = _pair(min_size, "min_size")
    if info.orientation >= 5:
        mh, mw = mw, mh
    return scale_denominator(box[2], box[3], mh, mw)


def scaled_region(
    box: tuple[float, float, float, float], info: ImageInfo, decoded: tuple[int, int], n: int
) -> tuple[tuple[float, float, float, float], tuple[int, int, int, int]]:
    """The whole pixels of a 1/n decode of size ``decoded`` that cover stored
    ``box``, as ``(y0, y1, x0, x1)``, and the box located in them (stored
    frame, fractional): ``(sub_box, (y0, y1, x0, x1))``. Shared by the compiled
    crop decoder (``native.py``), so both cut the same pixels."""
    sh, sw = info.stored_size
    dh, dw = decoded
    ry, rx = scaled_extent(sh, dh, n), scaled_extent(sw, dw, n)
    t, l, h, w = box[0] * ry, box[1] * rx, box[2] * ry, box[3] * rx
    y0, y1 = enclose(t, h, dh)
    x0, x1 = enclose(l, w, dw)
    return (t - y0, l - x0, h, w), (y0, y1, x0, x1)


def check_pixels(info: ImageInfo, max_pixels: int | None, label: str) -> None:
    """Refuse, from the header alone, an image with more than ``max_pixels`` pixels (``None``: any size).

    Raises:
        DecodeError: naming ``label``, the size and how to lift the guard.
    """
    if max_pixels is not None and info.pixels > max_pixels:
        raise DecodeError(
            f"{label}: {info.width}x{info.height} = {info.pixels} pixels exceeds max_pixels={max_pixels} "
            "(a decompression bomb guard; pass a larger max_pixels, or None, if the image is trusted)"
        )


def _pair(value: Any, what: str) -> tuple[int, int]:
    if isinstance(value, numbers.Integral):
        value = (value, value)
    if len(value) != 2 or not all(isinstance(v, numbers.Integral) and int(v) > 0 for v in value):
        raise ConfigError(f"{what} must be a positive int or (height, width), got {value!r}")
    return int(value[0]), int(value[1])


def _check_int_box(crop: Any) -> None:
    if len(crop) != 4 or not all(isinstance(v, numbers.Integral) for v in crop):
        raise ConfigError(f"crop must be (top, left, height, width) ints, got {crop!r}")


def stored_box(box: Any, info: ImageInfo, label: str) -> tuple[float, float, float, float]:
    """The upright box (or the whole image) as a box in the stored frame.

    Raises:
        ConfigError: ``box`` is not 4 numbers, or does not lie inside the image (naming ``label``).
    """
    sh, sw = info.stored_size
    if box is None:
        return (0, 0, sh, sw)
    if len(box) != 4 or not all(isinstance(v, numbers.Real) for v in box):
        raise ConfigError(f"crop box must be (top, left, height, width) numbers, got {box!r}")
    t, l, h, w = box
    eps = 1e-6
    if t < -eps or l < -eps or h <= 0 or w <= 0 or t + h > info.height + eps or l + w > info.width + eps:
        raise ConfigError(f"{label}: crop {tuple(box)!r} does not lie inside the {info.width}x{info.height} (WxH) image")
    return box_to_stored((t, l, h, w), info.orientation, (sh, sw))
