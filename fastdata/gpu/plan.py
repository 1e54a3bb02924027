"""The worker's share of ``decode="cuda"``: read the record and its header,
let the transform plan the crop, and hand over the still-encoded bytes with
their :class:`~fastdata.decode.plan.CropPlan`.

Planning is the one made for every executor (:mod:`fastdata.loading.planned`):
the same draws, from the same stream, in the same order as the CPU path, so
every sample's box and flip equal the CPU path's for the same seed. Images
the GPU decoder does not take (not JPEG, CMYK/YCCK, progressive, an EXIF
rotation, a crop that needs zero padding, too many pixels) are finished here
by the CPU executor with the plan already drawn, and rejoin their batch as
pixels.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ..datasets.policy import DATA_ERRORS
from ..decode import EncodedImage
from ..decode.info import ImageInfo
from ..decode.native import plan as native_plan
from ..decode.plan import CropPlan
from ..errors import ConfigError
from ..loading.keyed import KeyedDataset
from ..loading.planned import SamplePlans
from ..transforms.base import Source

Box = tuple[float, float, float, float]  # (top, left, height, width), upright full-size pixels

_UNTIMED = contextlib.nullcontext()

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
class GPUSample:
    """One sample as a worker hands it over: bytes and their plan for the GPU, or finished pixels.

    Attributes:
        data: the encoded bytes (``None`` when ``pixels`` is set).
        box: the source box the GPU resamples: the plan's box, its edges
            snapped as the CPU executor's DCT-scaled decode snaps them.
        plan: the transform's plan (None: the CPU path built the sample whole).
        size: ``(height, width)`` of the image from its header.
        pixels: the CPU path's HWC uint8 output for an image the GPU does not take.
        target, key: the sample's target and key (the key reruns the CPU path in
            the main process for an image the GPU decoder rejects).
        name: the record, for messages.
    """

    data: bytes | None
    box: Box
    plan: CropPlan | None
    size: tuple[int, int]
    pixels: np.ndarray | None
    target: Any
    key: Any
    name: str


def hwc(image: Any) -> np.ndarray:
    """A sample's image as HWC uint8 (a transform with ``output="tensor"`` gives CHW)."""
    if isinstance(image, torch.Tensor):
        return np.ascontiguousarray(image.permute(1, 2, 0).numpy())
    return np.ascontiguousarray(image)


class GPUSamples(Dataset):
    """What ``decode="cuda"``'s workers index with sample keys: :class:`GPUSample`.

    Args:
        keyed: the dataset under its sample keys.
        accepts: what the GPU decoder takes.

    Raises:
        ConfigError: a dataset or transform ``decode="cuda"`` cannot plan.
    """

    clock: Any = None  # set by the loader: its workers' stage times (Loader.stats)

    def __init__(self, keyed: KeyedDataset, accepts: Accepts) -> None:
        plans = planned(keyed)
        self.plans, self.keyed, self.accepts = plans, keyed, accepts
        self.backend = getattr(plans.transform, "backend", "auto")

    def __len__(self) -> int:
        return len(self.keyed)

    def __getitems__(self, keys: list[Any]) -> list[GPUSample]:
        # torch's DataLoader fetches a batch's samples through here: where a
        # worker's batch begins, and its samples' time (Loader.stats)
        if self.clock is not None:
            self.clock.batch_started()
        return [self._sample(key, self.clock) for key in keys]

    def __getitem__(self, key: Any) -> GPUSample:
        return self._sample(key, None)

    def _sample(self, key: Any, clock: Any) -> GPUSample:
        with clock.span("read+plan") if clock is not None else _UNTIMED:
            (sample,) = self.plans.plans([key])
            if sample is not None and self.accepts.takes(sample.info):
                plan, info = sample.plan, sample.info
                box = _snapped(info, plan, sample.name) if plan.snap else tuple(float(v) for v in plan.box)
                return GPUSample(sample.data, box, plan, (info.height, info.width), None, sample.target, key,
                                 sample.name)
        # the CPU finishes an image the GPU decoder does not take: timed apart from reading
        with clock.span("redo") if clock is not None else _UNTIMED:
            if sample is not None:
                try:  # the CPU executor with the draws already made: the pixels of decode="cpu"
                    pixels = Source(EncodedImage(sample.data, sample.name), self.backend).execute(sample.plan)
                    info = sample.info
                    return GPUSample(None, sample.plan.box, sample.plan, (info.height, info.width), pixels,
                                     sample.target, key, sample.name)
                except DATA_ERRORS:
                    pass  # dataset[key] meets it again and reports or skips it as on_error says
            image, target = self.keyed[key]
            return GPUSample(None, (0.0, 0.0, 0.0, 0.0), None, (0, 0), hwc(image), target, key, str(key))


def planned(keyed: KeyedDataset) -> SamplePlans:
    """The plan half of ``keyed``'s samples.

    Raises:
        ConfigError: a dataset or transform ``decode="cuda"`` cannot plan.
    """
    plans = SamplePlans.of(keyed)
    if plans is None:
        raise ConfigError(
            f"decode='cuda' runs fastdata datasets (ImageFolder, open_dataset(...)) with seeding='sample' "
            f"whose transform is one planned crop (RandomResizedCrop with or without RandomHorizontalFlip, "
            f"CenterCrop, Resize, Resize + CenterCrop), not {_what(keyed)}; use decode='cpu'"
        )
    return plans


def _what(keyed: Any) -> str:
    dataset = getattr(keyed, "dataset", keyed)
    transform = getattr(dataset, "transform", None)
    return f"{type(dataset).__name__} with transform {transform!r}"


def _snapped(info: ImageInfo, plan: CropPlan, name: str) -> Box:
    """The plan's box with its edges where the CPU executor's DCT-scaled decode
    puts them (whole pixels at 1/n), in full-size pixels, so both executors
    resample the same part of the image."""
    n, (y, x, h, w), _ = native_plan(info, plan.box, plan.min_size, True, name)
    top, left = y * n, x * n
    bottom, right = min((y + h) * n, info.height), min((x + w) * n, info.width)
    return float(top), float(left), float(bottom - top), float(right - left)
