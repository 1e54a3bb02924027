"""Compose: chain transforms, fusing ``Resize + CenterCrop`` into one
region decode."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import rng
from ..decode.plan import CropPlan
from .base import Source, Transform, check_output, dct_min_size, to_output
from .crop import CenterCrop, RandomResizedCrop
from .flip import RandomHorizontalFlip
from .planner import planner_of
from .resizing import Resize, ResizedCenterCrop


class Compose(Transform):
    """Apply ``transforms`` in order.

    Decode-aware (``decode_aware`` is True) when the first transform is, so a
    dataset hands it an :class:`~fastdata.decode.EncodedImage`. An adjacent
    ``Resize`` and ``CenterCrop`` run as one :class:`ResizedCenterCrop`, and
    ``RandomResizedCrop`` then ``RandomHorizontalFlip`` as one step that
    mirrors while resizing (same random draws, same pixels).
    Callables that are not fastdata transforms receive the current HWC uint8
    ndarray and may return anything; a non-array result is returned as is.

    Args:
        transforms: fastdata transforms and/or plain callables.
        output: ``"numpy"`` (HWC uint8) or ``"tensor"`` (CHW uint8) for the
            final result; the members' own ``output`` settings are ignored.
    """

    def __init__(self, transforms: Iterable[Callable[[Any], Any]], *, output: str = "numpy") -> None:
        self.transforms = list(transforms)
        self.output = check_output(output)
        first = self.transforms[0] if self.transforms else None
        self.decode_aware = bool(getattr(first, "decode_aware", False))
        self.backend = getattr(first, "backend", "auto")
        self.steps = _fuse(self.transforms)
        planner = planner_of(self.steps[0]) if len(self.steps) == 1 else None
        if planner is not None:  # a chain that is one crop plans as that crop does
            self.plan = planner
            self.output_size: tuple[int, int] | None = getattr(self.steps[0], "output_size", None)

    def apply(self, src: Source) -> Any:
        x: Any = src
        for step in self.steps:
            if isinstance(step, Transform):
                x = step.apply(x if isinstance(x, Source) else Source(x, step.backend))
            else:
                x = step(x.full() if isinstance(x, Source) else x)
        return x.full() if isinstance(x, Source) else x

    def __call__(self, image: Any) -> Any:
        result = self.apply(image if isinstance(image, Source) else Source(image, self.backend))
        return to_output(result, self.output) if isinstance(result, np.ndarray) else result

    def __repr__(self) -> str:
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"


def _fuse(transforms: list[Callable[[Any], Any]]) -> list[Callable[[Any], Any]]:
    steps: list[Callable[[Any], Any]] = []
    i = 0
    while i < len(transforms):
        t = transforms[i]
        nxt = transforms[i + 1] if i + 1 < len(transforms) else None
        if type(t) is Resize and type(nxt) is CenterCrop:
            steps.append(ResizedCenterCrop(t.size, nxt.size, backend=t.backend))
            i += 2
        elif type(t) is RandomResizedCrop and type(nxt) is RandomHorizontalFlip:
            steps.append(_CropThenFlip(t, nxt))
            i += 2
        else:
            steps.append(t)
            i += 1
    return steps


class _CropThenFlip(Transform):
    """RandomResizedCrop + RandomHorizontalFlip in one resize: the box is drawn,
    then the flip, as the two steps draw them; the compiled decoder writes the
    mirrored pixels directly."""

    decode_aware = True

    def __init__(self, crop: RandomResizedCrop, flip: RandomHorizontalFlip) -> None:
        self.crop, self.flip, self.backend = crop, flip, crop.backend
        self.output_size = crop.size

    def plan(self, height: int, width: int, orientation: int = 1,
             generator: np.random.Generator | None = None) -> CropPlan:
        with rng.using(generator):
            box, flip = self.crop.get_params(height, width), self.flip.draw()
        return CropPlan(box, self.crop.size, flip, dct_min_size(self.crop.size), True)

    def apply(self, src: Source) -> np.ndarray:
        return src.execute(self.plan(src.height, src.width, src.orientation))
