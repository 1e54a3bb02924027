"""``CropPlan``: what a decode-aware transform decided for one image, before
any pixel is decoded.

A transform draws its random numbers once, from the image's header size, and
answers a plan (:meth:`fastdata.transforms.RandomResizedCrop.plan` and the
others). Everything after that draws nothing: the per-sample decode in a
worker (:func:`fastdata.transforms.execute`), the batch call of loader
threads (:func:`fastdata.decode.batch.batch_request`) and the GPU decode
(:mod:`fastdata.gpu`) each execute the same plan, which is why the three
give the same crop and flip for the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CropPlan"]


@dataclass(frozen=True, slots=True)
class CropPlan:
    """One image's crop, resize and flip.

    Attributes:
        box: ``(top, left, height, width)`` of the source kept, in upright
            full-size pixels (EXIF orientation applied); edges may be fractional.
        size: output ``(height, width)``.
        flip: mirror the output left-right.
        min_size: the DCT scale allowed: decode at the smallest 1/n that keeps
            ``box`` at least this ``(height, width)``; None decodes at full scale.
        snap: round the box's edges to whole decoded pixels before resampling
            (RandomResizedCrop: a shift under one decoded pixel, just another
            random box); False resamples the exact box (the evaluation resize).
    """

    box: tuple[float, float, float, float]
    size: tuple[int, int]
    flip: bool = False
    min_size: tuple[int, int] | None = None
    snap: bool = True
