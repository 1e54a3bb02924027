"""The worker's share of ``decode="cuda"``: read the record and its header,
let the transform plan the crop, and hand over the still-encoded bytes with
their :class:`~fastdata.decode.plan.CropPlan`.

Planning is the one made for every executor (:mod:`fastdata.loading.sample_plans`):
the same draws, from the same stream, in the same order as the CPU path, so
every sample's box and flip equal the CPU path's for the same seed. Images
the GPU decoder does not take (not JPEG, CMYK/YCCK, progressive, an EXIF
rotation, a crop that needs zero padding, too many pixels) are finished here
by the CPU executor with the plan already drawn, and rejoin their batch as
pixels.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ..datasets.policy import DATA_ERRORS
from ..decode import EncodedImage
from ..decode.info import ImageInfo
from ..decode.native import decode_geometry
from ..decode.plan import CropPlan
from ..errors import ConfigError
from ..loading.keyed import KeyedDataset
from ..loading.sample_plans import PlannedSample, SamplePlans
from ..transforms.base import Source
from .cpu_crops import crop_batch
from .share import CPUShare

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
        by_share: cropped on the CPU as part of the hybrid's CPU share.
        seconds: the worker's seconds on this sample's CPU crop or finish;
            ``plan_s``: its part of the batch's reading and planning (both
            for the share's controller, which must tell them apart: planning
            costs the same whichever side decodes).
    """

    data: bytes | None
    box: Box
    plan: CropPlan | None
    size: tuple[int, int]
    pixels: np.ndarray | None
    target: Any
    key: Any
    name: str
    by_share: bool = False
    seconds: float = 0.0
    plan_s: float = 0.0


def hwc(image: Any) -> np.ndarray:
    """A sample's image as HWC uint8 (a transform with ``output="tensor"`` gives CHW)."""
    if isinstance(image, torch.Tensor):
        return np.ascontiguousarray(image.permute(1, 2, 0).numpy())
    return np.ascontiguousarray(image)


class GPUSamples(Dataset):
    """What ``decode="cuda"``'s workers index with sample keys: :class:`GPUSample`.

    A batch's keys are read and planned together; of the samples the GPU
    decoder takes, the first ``round(share x their number)`` (the hybrid's
    CPU share, read from ``share`` as the batch starts) are cropped here in
    one compiled call (:func:`~fastdata.gpu.cpu_crops.crop_batch`) and travel
    as pixels, the rest as bytes. Each sample keeps its plan either way.

    Args:
        keyed: the dataset under its sample keys.
        accepts: what the GPU decoder takes.
        share: the CPU share (None: 0, everything the GPU takes goes to it).

    Raises:
        ConfigError: a dataset or transform ``decode="cuda"`` cannot plan.
    """

    clock: Any = None  # set by the loader: its workers' stage times (Loader.stats)

    def __init__(self, keyed: KeyedDataset, accepts: Accepts, share: CPUShare | None = None) -> None:
        plans = sample_plans(keyed)
        self.plans, self.keyed, self.accepts, self.share = plans, keyed, accepts, share
        self.backend = getattr(plans.transform, "backend", "auto")

    def __len__(self) -> int:
        return len(self.keyed)

    def __getitems__(self, keys: list[Any]) -> list[GPUSample]:
        # torch's DataLoader fetches a batch's samples through here: where a
        # worker's batch begins, and its samples' time (Loader.stats)
        if self.clock is not None:
            self.clock.batch_started()
        return self._samples(keys, self.clock)

    def timed(self, keys: list[Any], clock: Any) -> list[GPUSample]:
        """A batch's samples, timed on ``clock`` (loader threads call this)."""
        return self._samples(keys, clock)

    def __getitem__(self, key: Any) -> GPUSample:
        return self._samples([key], None)[0]

    def _samples(self, keys: list[Any], clock: Any) -> list[GPUSample]:
        span = clock.span if clock is not None else _untimed
        t0 = time.perf_counter()
        with span("read+plan"):
            drawn = self.plans.plans(keys)
            share = self.share.get() if self.share is not None else 0.0
            taken = {i: s for i, s in enumerate(drawn) if s is not None and self.accepts.takes(s.info)}
            takes = list(taken)
            size = taken[takes[0]].plan.size if takes else None
            to_cpu = [i for i in takes[: round(share * len(takes))] if taken[i].plan.size == size]
            out: list[GPUSample | None] = [None] * len(keys)
            chosen = set(to_cpu)
            for i in takes:
                if i not in chosen:
                    out[i] = self._encoded(taken[i], keys[i])
        plan_s = (time.perf_counter() - t0) / max(1, len(keys))  # the batch's planning, spread over its samples
        redo = [i for i in range(len(keys)) if out[i] is None and i not in chosen]
        if to_cpu and size is not None:  # (a size: to_cpu holds taken samples)
            t1 = time.perf_counter()
            with span("decode+collate"):  # the share: one C call that crops every sample it took
                pixels, failed = crop_batch([taken[i] for i in to_cpu], size, self.backend)
            each = (time.perf_counter() - t1) / len(to_cpu)
            for j, i in enumerate(to_cpu):
                p = taken[i]
                if j not in failed:
                    out[i] = GPUSample(None, p.plan.box, p.plan, (p.info.height, p.info.width), pixels[j],
                                       p.target, keys[i], p.name, by_share=True, seconds=each)
            redo += [to_cpu[j] for j in failed]
        for i in sorted(redo):  # the CPU finishes an image the GPU decoder does not take: timed apart from reading
            t1 = time.perf_counter()
            with span("redo"):
                redone = self._redo(keys[i], drawn[i])
            redone.seconds = time.perf_counter() - t1
            out[i] = redone
        samples: list[GPUSample] = []
        for sample in out:
            assert sample is not None  # for the type checker: each key was encoded, cropped or redone above
            sample.plan_s = plan_s
            samples.append(sample)
        return samples

    def _encoded(self, sample: PlannedSample, key: Any) -> GPUSample:
        plan, info = sample.plan, sample.info
        if plan.snap:
            box = _snapped(info, plan, sample.name)
        else:
            top, left, height, width = plan.box
            box = (float(top), float(left), float(height), float(width))
        return GPUSample(sample.data, box, plan, (info.height, info.width), None, sample.target, key, sample.name)

    def _redo(self, key: Any, sample: PlannedSample | None) -> GPUSample:
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


def _untimed(name: str) -> Any:
    return _UNTIMED


def sample_plans(keyed: KeyedDataset) -> SamplePlans:
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
    n, (y, x, h, w), _ = decode_geometry(info, plan.box, plan.min_size, True, name)
    top, left = y * n, x * n
    bottom, right = min((y + h) * n, info.height), min((x + w) * n, info.width)
    return float(top), float(left), float(bottom - top), float(right - left)
