"""Resize (shorter side or exact size) and the fused evaluation transform
``Resize(r) + CenterCrop(c)``, decode-aware."""

from __future__ import annotations

import numpy as np

from ..decode.plan import CropPlan
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


def resized_center_box(height: int, width: int, resize: int | tuple[int, int],
                       crop: tuple[int, int]) -> tuple[float, float, float, float] | None:
    """The source box that ``Resize(resize)`` then ``CenterCrop(crop)`` keep of a
    ``height`` x ``width`` image, in source pixels; None when the crop needs zero padding."""
    h2, w2 = resized_size(height, width, resize)
    ch, cw = crop
    if ch > h2 or cw > w2:
        return None
    top, left, _, _ = center_crop_box(h2, w2, crop)
    sy, sx = height / h2, width / w2
    return (top * sy, left * sx, ch * sy, cw * sx)


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

    @property
    def output_size(self) -> tuple[int, int] | None:
        return None if isinstance(self.size, int) else self.size  # an int keeps each image's aspect

    def plan(self, height: int, width: int, orientation: int = 1,
             generator: np.random.Generator | None = None) -> CropPlan:
        """The whole image, resampled exactly (draws nothing)."""
        out = resized_size(height, width, self.size)
        return CropPlan((0, 0, height, width), out, False, dct_min_size(out), False)

    def apply(self, src: Source) -> np.ndarray:
        return src.execute(self.plan(src.height, src.width, src.orientation))

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

    @property
    def output_size(self) -> tuple[int, int]:
        return self.crop_size

    def plan(self, height: int, width: int, orientation: int = 1,
             generator: np.random.Generator | None = None) -> CropPlan | None:
        """The crop's box mapped back to the source; None when the crop is
        larger than the resized image (zero padding). Draws nothing."""
        box = resized_center_box(height, width, self.resize.size, self.crop_size)
        if box is None:
            return None
        return CropPlan(box, self.crop_size, False, dct_min_size(self.crop_size), False)

    def apply(self, src: Source) -> np.ndarray:
        plan = self.plan(src.height, src.width, src.orientation)
        if plan is None:
            return center_crop_padded(self.resize.apply(src), self.crop_size)
        return src.execute(plan)

    def __repr__(self) -> str:
        return f"ResizedCenterCrop(resize_size={self.resize.size}, crop_size={self.crop_size})"
