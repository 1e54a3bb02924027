"""The CPU's share of a hybrid decode, and the controller that sets it.

With a hybrid decode (``decode="auto"`` on CUDA, or ``GPUDecode(cpu_share=...)``)
each batch's GPU-decodable samples are split: a share ``s`` is cropped by the
workers' compiled CPU decoder (:mod:`.cpu_crops`), the rest by the GPU
decoder in the main process. Both sides run at once, so a batch takes about
``max(T_gpu, T_cpu)``, least where they are equal.

The main process sets ``s``; the workers read it when they start a batch
(:class:`CPUShare`, one float64 in shared memory). The controller
(:class:`ShareController`) steers it from the stage's own timers, which
every batch carries back (:class:`BatchCost`): the decode thread's seconds
inside the GPU decoder per GPU image, and the workers' seconds per image in
their batched CPU crop call and per batch for the rest (reading, planning).
From these per-image costs it solves for the share that balances

    T_gpu(s) = (1 - s) M g        (the stage's decode thread, one batch at a time)
    T_cpu(s) = (P + s M c) / W    (W workers, each on its own batches)

and moves part of the way there each batch (``gain``, at most ``step``,
nothing inside ``dead_band``), within ``bounds``. Costs are per image, so a
batch made at an older share (workers run a few batches ahead) still
measures the right thing: the estimate does not chase its own lag, which is
what makes a plain "more CPU while the GPU side is slower" rule oscillate.
With no workers (W = 0) both sides run one after the other on the stage's
thread, and the cheaper side per image takes all it may.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..errors import ConfigError

__all__ = ["BatchCost", "CPUShare", "ShareController", "balancing_share"]

BOUNDS = (0.05, 0.95)
"""Default range of a controlled share: a few images on each side keep both costs measured."""


class CPUShare:
    """The share the workers use, in shared memory (fork inherits it, spawn
    receives it through torch's tensor reductions); picklable."""

    def __init__(self, value: float) -> None:
        self._cell = torch.zeros(1, dtype=torch.float64).share_memory_()
        self.set(value)

    def get(self) -> float:
        return float(self._cell[0])

    def set(self, value: float) -> None:
        if not 0.0 <= float(value) <= 1.0 or math.isnan(float(value)):
            raise ConfigError(f"the CPU share must be within 0..1, got {value!r}")
        self._cell[0] = float(value)

    def __repr__(self) -> str:
        return f"CPUShare({self.get():.3f})"


@dataclass(frozen=True)
class BatchCost:
    """What one batch measured (seconds; counts of samples).

    Attributes:
        gpu_images: samples the GPU decoder was given.
        gpu_s: the stage's decode thread inside the decoder call(s) for them,
            including images it refused and the CPU then finished.
        cpu_images: samples the share sent to the workers' CPU crop call.
        cpu_s: the workers' seconds in that call.
        other_s: the workers' remaining seconds on the batch (reading,
            planning, images the GPU does not take).
    """

    gpu_images: int
    gpu_s: float
    cpu_images: int
    cpu_s: float
    other_s: float


def balancing_share(g: float, c: float, other: float, images: int, workers: int,
                    bounds: tuple[float, float] = (0.0, 1.0)) -> float:
    """The share of ``images`` GPU-decodable samples per batch for the CPU
    that makes both sides take the same time (see the module docstring):
    ``g``/``c`` seconds per image on the GPU/CPU side, ``other`` the workers'
    other seconds per batch, ``workers`` of them (0: one thread does both)."""
    lo, hi = bounds
    if images <= 0:
        return lo
    if workers <= 0:
        return lo if c >= g else hi
    gpu, cpu = images * g, images * c / workers
    if gpu + cpu <= 0:
        return lo
    return min(hi, max(lo, (gpu - other / workers) / (gpu + cpu)))


class ShareController:
    """Moves the CPU share towards :func:`balancing_share` of the measured costs.

    Args:
        share: where the workers read the share (it starts at its value).
        workers: worker processes or threads (0: the main process builds batches).
        bounds: the range the share stays in.
        gain: fraction of the distance to the balancing share moved per batch.
        step: the most the share moves in one batch.
        dead_band: distances below this are left alone (timer noise).
        smoothing: weight of a new batch in the running per-image costs.
    """

    def __init__(self, share: CPUShare, workers: int, *, bounds: tuple[float, float] = BOUNDS, gain: float = 0.5,
                 step: float = 0.1, dead_band: float = 0.01, smoothing: float = 0.3) -> None:
        lo, hi = bounds
        if not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"share bounds must satisfy 0 <= low <= high <= 1, got {bounds!r}")
        self.share, self.workers, self.bounds = share, max(0, int(workers)), (float(lo), float(hi))
        self.gain, self.step, self.dead_band, self.smoothing = gain, step, dead_band, smoothing
        self.g: float | None = None  # seconds per GPU image
        self.c: float | None = None  # seconds per CPU-cropped image
        self.other: float | None = None  # workers' other seconds per batch
        self.images: float | None = None  # GPU-decodable samples per batch
        self.target: float | None = None  # the last balancing share computed
        self.batches = 0
        self.share.set(min(hi, max(lo, share.get())))

    def _mix(self, old: float | None, new: float) -> float:
        return new if old is None else old + self.smoothing * (new - old)

    def observe(self, cost: BatchCost) -> float:
        """Take one batch's costs; returns the share now in force."""
        self.batches += 1
        if cost.gpu_images > 0:
            self.g = self._mix(self.g, cost.gpu_s / cost.gpu_images)
        if cost.cpu_images > 0:
            self.c = self._mix(self.c, cost.cpu_s / cost.cpu_images)
        self.other = self._mix(self.other, max(0.0, cost.other_s))
        self.images = self._mix(self.images, float(cost.gpu_images + cost.cpu_images))
        now = self.share.get()
        if self.g is None or self.c is None:
            return now  # one side not measured yet: the starting share stands
        self.target = balancing_share(self.g, self.c, self.other or 0.0, round(self.images or 0), self.workers,
                                      self.bounds)
        distance = self.target - now
        if abs(distance) < self.dead_band:
            return now
        move = max(-self.step, min(self.step, self.gain * distance))
        now = min(self.bounds[1], max(self.bounds[0], now + move))
        self.share.set(now)
        return now
