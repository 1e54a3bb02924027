"""RandomResizedCrop (training) and CenterCrop (evaluation), decode-aware."""

from __future__ import annotations

import math

import numpy as np

from .. import rng
from ..decode.plan import CropPlan
from .base import Source, Transform, as_size, check_output, dct_min_size

Box = tuple[int, int, int, int]  # (top, left, height, width)


def sample_resized_crop(
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    generator: np.random.Generator,
) -> Box:
    """torchvision's ``RandomResizedCrop.get_params`` drawing from ``generator``.

    Up to 10 tries: area uniform in ``scale`` x image area, aspect ratio
    log-uniform in ``ratio``, sides rounded, accepted if it fits; the
    position is then uniform. Otherwise the central crop of the whole image,
    its aspect clamped to ``ratio``.

    Returns:
        ``(top, left, height, width)`` inside the image.
    """
    area = height * width
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target_area = area * generator.uniform(scale[0], scale[1])
        aspect = math.exp(generator.uniform(log_lo, log_hi))
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(generator.integers(0, height - h + 1))
            left = int(generator.integers(0, width - w + 1))
            return top, left, h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w = width
        h = round(w / min(ratio))
    elif in_ratio > max(ratio):
        h = height
        w = round(h * max(ratio))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


class RandomResizedCrop(Transform):
    """Crop a random area/aspect box and resize it to ``size`` (torchvision's
    sampling; antialiased resize).

    On :class:`~fastdata.decode.EncodedImage` input the box is sampled from
    the header's size, and only that region is kept, decoded at the smallest
    DCT scale (1/8, 1/4, 1/2, 1) that keeps it at least 1.5 x ``size``
    (``base.DCT_MARGIN``). Its edges are then snapped to whole decoded pixels
    (a shift under one decoded pixel: just another random box).

    Args:
        size: output ``(height, width)``, or an int for a square.
        scale: range of the box area as a fraction of the image area.
        ratio: range of the box aspect ratio (width / height).
        generator: draw from this NumPy generator. Default: the per-process
            (or per-sample) :func:`fastdata.rng.generator` at each call, which
            DataLoader workers reseed; a generator given here is copied into
            every worker, so workers would repeat each other's crops.
        output: ``"numpy"`` (HWC uint8, the default, for ``fast_collate``) or
            ``"tensor"`` (CHW uint8 torch tensor).
        backend: JPEG decoder for encoded input (see ``fastdata.decode``).
    """

    decode_aware = True

    def __init__(
        self,
        size: int | tuple[int, int],
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3 / 4, 4 / 3),
        *,
        generator: np.random.Generator | None = None,
        output: str = "numpy",
        backend: str = "auto",
    ) -> None:
        self.size = as_size(size)
        if scale[0] > scale[1] or ratio[0] > ratio[1] or scale[0] <= 0 or ratio[0] <= 0:
            raise ValueError(f"scale and ratio must be positive (min, max) pairs, got scale={scale}, ratio={ratio}")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.generator = generator
        self.output = check_output(output)
        self.backend = backend

    @property
    def output_size(self) -> tuple[int, int]:
        return self.size

    def get_params(self, height: int, width: int) -> Box:
        """The box this call would crop from a ``height x width`` image."""
        return sample_resized_crop(height, width, self.scale, self.ratio, self.generator or rng.generator())

    def plan(self, height: int, width: int, orientation: int = 1,
             generator: np.random.Generator | None = None) -> CropPlan:
        """The crop of an upright ``height x width`` image (see
        :class:`~fastdata.decode.plan.CropPlan`), drawn by :meth:`get_params`
        (which subclasses may override) from ``generator``, else the current stream."""
        # At a DCT scale the box edges fall between decoded pixels; snapping them
        # (< 1 decoded pixel) keeps the fast resize and is just another random box.
        with rng.using(generator):
            box = self.get_params(height, width)
        return CropPlan(box, self.size, False, dct_min_size(self.size), True)

    def apply(self, src: Source) -> np.ndarray:
        return src.execute(self.plan(src.height, src.width, src.orientation))

    def __repr__(self) -> str:
        return f"RandomResizedCrop(size={self.size}, scale={self.scale}, ratio={tuple(round(r, 4) for r in self.ratio)})"


def center_crop_box(height: int, width: int, size: tuple[int, int]) -> Box:
    """torchvision's centre box (``round`` of half the margin) for a crop that fits."""
    ch, cw = size
    return round((height - ch) / 2.0), round((width - cw) / 2.0), ch, cw


def center_crop_padded(arr: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Centre crop of pixels smaller than ``size`` on some side: zero padding
    as torchvision adds (floor of half the shortfall before, the rest after)."""
    h, w = arr.shape[:2]
    ch, cw = size
    pad_top = (ch - h) // 2 if ch > h else 0
    pad_left = (cw - w) // 2 if cw > w else 0
    padded = np.zeros((max(h, ch), max(w, cw), arr.shape[2]), np.uint8)
    padded[pad_top : pad_top + h, pad_left : pad_left + w] = arr
    t, l, _, _ = center_crop_box(padded.shape[0], padded.shape[1], size)
    return padded[t : t + ch, l : l + cw]


class CenterCrop(Transform):
    """Cut the central ``size`` box (zero-padded where the image is smaller).

    Encoded input decodes only that box. Args as in
    :class:`RandomResizedCrop` (``size``, ``output``, ``backend``).
    """

    decode_aware = True

    def __init__(self, size: int | tuple[int, int], *, output: str = "numpy", backend: str = "auto") -> None:
        self.size = as_size(size)
        self.output = check_output(output)
        self.backend = backend

    @property
    def output_size(self) -> tuple[int, int]:
        return self.size

    def plan(self, height: int, width: int, orientation: int = 1,
             generator: np.random.Generator | None = None) -> CropPlan | None:
        """The central box at full scale; None when the image is smaller than
        ``size`` on a side (zero padding needs the whole image). Draws nothing."""
        ch, cw = self.size
        if ch > height or cw > width:
            return None
        return CropPlan(center_crop_box(height, width, self.size), self.size)

    def apply(self, src: Source) -> np.ndarray:
        plan = self.plan(src.height, src.width, src.orientation)
        return src.execute(plan) if plan is not None else center_crop_padded(src.full(), self.size)

    def __repr__(self) -> str:
        return f"CenterCrop(size={self.size})"
