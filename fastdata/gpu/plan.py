"""The worker's share of ``decode="cuda"``: read the header, draw the crop and
flip, and hand over the still-encoded bytes.

A :class:`Planner` stands in for the dataset's transform. It draws from the
same generator, in the same order, with the same transform objects as the
CPU path, so the box and flip of every sample equal the CPU path's for the
same seed. Images the GPU decoder does not take (not JPEG, CMYK/YCCK,
progressive, an EXIF rotation, a crop that needs zero padding, too many
pixels) are finished here by the CPU path itself, with the box already drawn,
and rejoin their batch as pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..decode import EncodedImage, read_info
from ..decode.info import ImageInfo
from ..decode.native import plan as native_plan
from ..errors import ConfigError
from ..transforms import CenterCrop, Compose, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop
from ..transforms.base import Source, dct_min_size
from ..transforms.compose import _CropThenFlip
from ..transforms.crop import center_crop_box
from ..transforms.batch import resized_center_box

Box = tuple[float, float, float, float]  # (top, left, height, width), upright full-size pixels

SUPPORTED = (
    "RandomResizedCrop, Compose([RandomResizedCrop, RandomHorizontalFlip]), CenterCrop, "
    "ResizedCenterCrop or Compose([Resize(int), CenterCrop])"
)


# Huffman-coded 8-bit baseline, extended and progressive frames: what nvJPEG decodes.
# Lossless (0xC3), arithmetic-coded (0xC9-0xCB) and 12-bit JPEGs go to the CPU
# path; sent to the GPU, each would fail its batch and be found one call at a time.
_GPU_FRAMES = frozenset({0xC0, 0xC1, 0xC2})


@dataclass(frozen=True)
class Accepts:
    """What the GPU decoder takes; the rest is decoded on the CPU in the worker.

    Picklable and free of CUDA, so worker processes can hold it.
    """

    progressive: bool = False
    max_pixels: int = 36_000_000

    def takes(self, info: ImageInfo) -> bool:
        return (
            info.format == "JPEG"
            and info.frame in _GPU_FRAMES
            and info.precision == 8
            and info.mode in ("RGB", "L")
            and info.orientation == 1
            and (self.progressive or not info.progressive)
            and info.pixels <= self.max_pixels
        )


@dataclass
class Planned:
    """One sample as a worker hands it over: bytes for the GPU, or finished pixels.

    Attributes:
        data: the encoded bytes (``None`` when ``pixels`` is set).
        box: the source box the GPU resamples (the drawn box with its edges
            snapped as the CPU path's DCT-scaled decode snaps them).
        drawn: the box as the transform drew it.
        flip: mirrored left-right.
        size: ``(height, width)`` of the image from its header.
        pixels: the CPU path's HWC uint8 output for an image the GPU does not take.
        name: the record, for messages.
    """

    data: bytes | None
    box: Box
    drawn: Box
    flip: bool
    size: tuple[int, int]
    pixels: np.ndarray | None
    name: str


class Planner:
    """A decode-aware transform that plans instead of decoding (see the module doc).

    Args:
        transform: the dataset's fastdata transform (one of :data:`SUPPORTED`).
        accepts: what the GPU decoder takes.

    Raises:
        ConfigError: a transform ``decode="cuda"`` cannot run on the GPU.
    """

    decode_aware = True

    def __init__(self, transform: Any, accepts: Accepts) -> None:
        self.transform, self.accepts = transform, accepts
        self.crop: RandomResizedCrop | None = None
        self.flip: RandomHorizontalFlip | None = None
        self.center: ResizedCenterCrop | CenterCrop | None = None
        steps: list[Any] = []
        for step in transform.steps if isinstance(transform, Compose) else [transform]:
            steps += [step.crop, step.flip] if isinstance(step, _CropThenFlip) else [step]
        kinds = [type(s) for s in steps]
        if kinds in ([RandomResizedCrop], [RandomResizedCrop, RandomHorizontalFlip]):
            self.crop = steps[0]
            self.flip = steps[1] if len(steps) == 2 else None
            self.size = self.crop.size
        elif kinds in ([ResizedCenterCrop], [CenterCrop]):
            self.center = steps[0]
            self.size = steps[0].crop_size if isinstance(steps[0], ResizedCenterCrop) else steps[0].size
        else:
            raise ConfigError(f"decode='cuda' runs {SUPPORTED} on the GPU, not {transform!r}; use decode='cpu'")

    def __repr__(self) -> str:
        return f"Planner({self.transform!r})"

    def __call__(self, image: EncodedImage) -> Planned:
        if not isinstance(image, EncodedImage):
            raise ConfigError(f"decode='cuda' needs the dataset to hand over encoded bytes, got {type(image).__name__}")
        info = read_info(image.data, name=image.name or None)
        size = (info.height, info.width)
        if self.crop is not None:
            drawn = tuple(float(v) for v in self.crop.get_params(info.height, info.width))
            flip = self.flip.draw() if self.flip is not None else False
            fits, snap = True, True
        else:
            drawn, fits = self._center_box(info)
            flip, snap = False, False
        if not (fits and self.accepts.takes(info)):
            return Planned(None, drawn, drawn, flip, size, self._on_cpu(image, drawn, flip), image.name)
        box = _snapped(info, drawn, self.size, image.name) if snap else drawn
        return Planned(image.data, box, drawn, flip, size, None, image.name)

    def _center_box(self, info: ImageInfo) -> tuple[Box, bool]:
        ch, cw = self.size
        if isinstance(self.center, CenterCrop):
            t, l, h, w = center_crop_box(info.height, info.width, self.size)
            return (float(t), float(l), float(h), float(w)), ch <= info.height and cw <= info.width
        box = resized_center_box(info.height, info.width, self.center)  # type: ignore[arg-type]
        if box is None:
            return (0.0, 0.0, float(info.height), float(info.width)), False
        return box, True

    def _on_cpu(self, image: EncodedImage, box: Box, flip: bool) -> np.ndarray:
        # The CPU path's own code with the draws already made: the same pixels as decode="cpu".
        src = Source(image, getattr(self.transform, "backend", "auto"))
        if self.crop is not None:
            return src.resized(box, self.size, min_size=dct_min_size(self.size), snap=True, flip=flip)
        return self.center.apply(src)  # type: ignore[union-attr]  # draws nothing: the CPU path itself


def _snapped(info: ImageInfo, box: Box, size: tuple[int, int], name: str) -> Box:
    """``box`` with its edges where the CPU path's DCT-scaled decode puts them
    (whole pixels at 1/n, n chosen for ``size``), in full-size pixels, so both
    paths resample the same part of the image."""
    n, (y, x, h, w), _ = native_plan(info, box, dct_min_size(size), True, name)
    top, left = y * n, x * n
    bottom, right = min((y + h) * n, info.height), min((x + w) * n, info.width)
    return float(top), float(left), float(bottom - top), float(right - left)
