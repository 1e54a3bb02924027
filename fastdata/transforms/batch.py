"""The decode-aware transforms whose whole work is one crop-decode call, as a
plan that a batch decoder can run (:mod:`fastdata.decode.batch`).

:func:`batch_planner` returns, for such a transform, a function of the
image's upright ``(height, width)`` (a :class:`~fastdata.transforms.base.Source`'s
size) that makes the transform's random draws in the transform's own order
and says what it would ask the compiled decoder for; ``None`` for any other
transform (a user's callable, a flip alone, a chain ending in something else).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .base import dct_min_size
from .compose import Compose, _CropThenFlip
from .crop import CenterCrop, RandomResizedCrop, center_crop_box
from .resizing import ResizedCenterCrop, resized_size


class Planned(NamedTuple):
    """What ``Source.resized`` is called with for one sample."""

    box: tuple[float, float, float, float]
    size: tuple[int, int]
    min_size: tuple[int, int] | None
    snap: bool
    flip: bool


Planner = Callable[[int, int], "Planned | None"]


def _crop(t: RandomResizedCrop, flip: Any = None) -> Planner:
    min_size = dct_min_size(t.size)

    def planner(height: int, width: int) -> Planned:
        box = t.get_params(height, width)
        return Planned(box, t.size, min_size, True, flip.draw() if flip is not None else False)

    return planner


def resized_center_box(height: int, width: int, t: ResizedCenterCrop) -> tuple[float, float, float, float] | None:
    """The source box that ``t`` (Resize then CenterCrop) keeps of a ``height`` x
    ``width`` image, in source pixels; None when the crop needs zero padding."""
    h2, w2 = resized_size(height, width, t.resize.size)
    ch, cw = t.crop_size
    if ch > h2 or cw > w2:
        return None
    top, left, _, _ = center_crop_box(h2, w2, t.crop_size)
    sy, sx = height / h2, width / w2
    return (top * sy, left * sx, ch * sy, cw * sx)


def _resized_center(t: ResizedCenterCrop) -> Planner:
    min_size = dct_min_size(t.crop_size)

    def planner(height: int, width: int) -> Planned | None:
        box = resized_center_box(height, width, t)
        if box is None:
            return None  # zero padding: the per-sample path
        return Planned(box, t.crop_size, min_size, False, False)

    return planner


def _center(t: CenterCrop) -> Planner:
    def planner(height: int, width: int) -> Planned | None:
        ch, cw = t.size
        if ch > height or cw > width:
            return None
        return Planned(center_crop_box(height, width, t.size), t.size, None, True, False)

    return planner


def batch_planner(transform: Any) -> Planner | None:
    """The planner of ``transform`` (see the module docstring), or None."""
    step = transform
    if type(transform) is Compose:
        if len(transform.steps) != 1:
            return None
        step = transform.steps[0]
    kind = type(step)
    if kind is _CropThenFlip:
        return _crop(step.crop, step.flip)
    if kind is RandomResizedCrop:
        return _crop(step)
    if kind is ResizedCenterCrop:
        return _resized_center(step)
    if kind is CenterCrop:
        return _center(step)
    return None
