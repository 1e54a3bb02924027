"""Pillow: every non-JPEG format, the "pil" JPEG backend, and turning any
Pillow mode into RGB the same way everywhere.

Mode rules (what every backend returns):

* grayscale, bilevel, palette, CMYK and others: Pillow's ``convert("RGB")``
  (CMYK JPEGs use Adobe's inverted polarity, as Pillow assumes).
* transparency (RGBA, LA, PA, palette or gray with a ``transparency`` key):
  composited over :data:`BACKGROUND` (white), not dropped, so transparent
  pixels do not come out as whatever colour the encoder left under them.
* 16/32-bit integer gray (``I;16*``, ``I``): scaled from 0-65535 to 0-255.
  Pillow's own ``convert("RGB")`` clips at 255 instead, which turns a real
  16-bit image almost white; an 8-bit-range image in a 16-bit file therefore
  comes out dark here, as its bit depth says it is.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from ..errors import DecodeError

BACKGROUND = (255, 255, 255)
"""RGB colour that transparent pixels are composited onto."""

_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
_WIDE_GRAY = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})


def open_image(data: bytes, name: str | None) -> Any:
    """``PIL.Image.open`` on bytes, with Pillow's failures as DecodeError."""
    from PIL import Image

    try:
        return Image.open(io.BytesIO(data))
    except Image.UnidentifiedImageError as exc:
        raise DecodeError(
            f"{name or 'image bytes'}: not an image format Pillow recognises ({len(data)} bytes starting {bytes(data[:8])!r})"
        ) from exc
    except Image.DecompressionBombError as exc:
        raise DecodeError(f"{name or 'image bytes'}: {exc} (raise PIL.Image.MAX_IMAGE_PIXELS to allow it)") from exc
    except Exception as exc:  # Pillow raises many types for unreadable bytes
        raise DecodeError(f"{name or 'image bytes'}: not an image Pillow can read ({type(exc).__name__}: {exc})") from exc


def load(img: Any, name: str | None) -> None:
    """Decode the pixels; truncated or corrupt data raises DecodeError.

    Relies on Pillow's default ``ImageFile.LOAD_TRUNCATED_IMAGES = False``;
    a program that sets it True gets truncated files filled with grey here.
    """
    try:
        img.load()
    except Exception as exc:
        raise DecodeError(f"{name or 'image bytes'}: cannot decode ({type(exc).__name__}: {exc})") from exc


def to_rgb_array(img: Any) -> np.ndarray:
    """A loaded Pillow image as RGB uint8 ``(H, W, 3)`` (see the module rules).

    The result may be read-only (it can share Pillow's bytes).
    """
    from PIL import Image

    mode = img.mode
    if mode == "RGB":
        return np.asarray(img)
    if mode in _WIDE_GRAY:
        return _wide_gray(img)
    if mode in _ALPHA_MODES or "transparency" in img.info:
        rgba = img.convert("RGBA")
        base = Image.new("RGBA", rgba.size, (*BACKGROUND, 255))
        return np.asarray(Image.alpha_composite(base, rgba).convert("RGB"))
    return np.asarray(img.convert("RGB"))


def _wide_gray(img: Any) -> np.ndarray:
    raw = np.asarray(img).astype(np.int64)
    gray = ((np.clip(raw, 0, 65535) * 255 + 32767) // 65535).astype(np.uint8)
    rgb = np.repeat(gray[:, :, None], 3, axis=2)
    trns = img.info.get("transparency")
    if isinstance(trns, int):  # one gray value marks fully transparent pixels
        rgb[raw == trns] = BACKGROUND
    return rgb


def cmyk_to_rgb(cmyk: np.ndarray) -> np.ndarray:
    """Adobe (inverted) CMYK ``(H, W, 4)`` uint8 as libjpeg outputs it -> RGB.

    Bit-exact with Pillow's ``CMYK;I`` load plus ``convert("RGB")``:
    with stored (inverted) values ``c, k``, ``R = k - round(k (255 - c) / 255)``.
    """
    k = cmyk[:, :, 3:4].astype(np.uint32)
    tmp = (255 - cmyk[:, :, :3].astype(np.uint32)) * k + 128
    return (k - (((tmp >> 8) + tmp) >> 8)).astype(np.uint8)
