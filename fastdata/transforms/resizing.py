"""Resize (shorter side or exact size) and the fused evaluation transform
``Resize(r) + CenterCrop(c)``, decode-aware."""

from __future__ import annotations

import numpy as np

from .base import Source, Transform, as_size, check_output, dct_min_size
from .crop import center_crop_box, center_crop_padded


def resized_size(height: int, width: int, size: int | tuple[int, int]) -> tuple[int, int]:
    """torchvision's ``Resize`` output size: an int sets the shorter side and
    scales the longer one (truncated to int); a pair is ``(height, width)``."""
    if not isinstance(size, (int, np.integer)):
        return as_size(size)
    if width <= height:
        return int(size * height / width), int(size)
    return int(size), int(size * width / height)


class Resize(Transform):
    """Resize so the shorter side is ``size`` (int) or to ``(height, width)``.

    Encoded JPEGs are decoded at the smallest DCT scale that stays at least
    1.5 x the output size (``base.DCT_MARGIN``), then resized (antialiased). Args: ``output`` and
    ``backend`` as in :class:`RandomResizedCrop`.
    """

    decode_aware = True

    def __init__(self, size: int | tuple[int, int], *, output: str = "numpy", backend: str = "auto") -> None:
        checked = as_size(size)
        self.size: int | tuple[int, int] = int(size) if isinstance(size, (int, np.integer)) else checked
        self.output = check_output(output)
        self.backend = backend

    def apply(self, src: Source) -> np.ndarray:
        out = resized_size(src.height, src.width, self.size)
        return src.resized((0, 0, src.height, src.width), out, min_size=dct_min_size(out), snap=False)

    def __repr__(self) -> str:
        return f"Resize(size={self.size})"


class ResizedCenterCrop(Transform):
    """``Resize(resize_size)`` then ``CenterCrop(crop_size)`` in one step: the
    crop is mapped back to the source, and only that region is decoded (at
    the cheapest DCT scale) and resized. ``Compose`` builds this on its own
    from an adjacent ``Resize(int)`` and ``CenterCrop``.

    The crop's source box has fractional edges; it is resampled exactly
    (Pillow ``BILINEAR`` with a sub-pixel box, what torchvision's two steps
    compute, without resizing the rest of the image). Falls back to the two
    steps when the crop is larger than the resized image (zero padding).
    """

    decode_aware = True

    def __init__(
        self,
        resize_size: int | tuple[int, int] = 256,
        crop_size: int | tuple[int, int] = 224,
        *,
        output: str = "numpy",
        backend: str = "auto",
    ) -> None:
        self.resize = Resize(resize_size, backend=backend)
        self.crop_size = as_size(crop_size)
        self.output = check_output(output)
        self.backend = backend

    def apply(self, src: Source) -> np.ndarray:
        h2, w2 = resized_size(src.height, src.width, self.resize.size)
        ch, cw = self.crop_size
        if ch > h2 or cw > w2:
            return center_crop_padded(self.resize.apply(src), self.crop_size)
        top, left, _, _ = center_crop_box(h2, w2, self.crop_size)
        sy, sx = src.height / h2, src.width / w2
        box = (top * sy, left * sx, ch * sy, cw * sx)
        return src.resized(box, self.crop_size, min_size=dct_min_size(self.crop_size), snap=False)

    def __repr__(self) -> str:
        return f"ResizedCenterCrop(resize_size={self.resize.size}, crop_size={self.crop_size})"
