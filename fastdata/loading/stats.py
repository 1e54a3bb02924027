"""``Loader.stats()``: how long the training loop waited for each batch and
where the workers' time went, as plain numbers.

The loop's wait is timed in the main process around each ``next()``; the
workers' stages come from a :class:`~.clock.StageClock` that
:func:`instrument` hands the workers before they start; a GPU decode adds
its main-process stage (``GPUBatches.times``, host seconds) and, on CUDA,
the device seconds of its decode and resample (CUDA events).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from torch.utils.data import DataLoader

from .clock import STAGES, StageClock, TimedCollate, named_range
from .threaded import ThreadedBatches

__all__ = ["LoaderStats", "LoaderTiming", "instrument"]

_NOTES = {
    "read+decode+transform": "read+decode+transform: one dataset[index] call per sample (a dataset that does not say its stages)",
    "decode+transform": "decode+transform: per sample, a decode-aware transform decodes while it crops and resizes",
    "decode+collate": "decode+collate: one C call per batch that decodes, crops, resizes and fills the batch",
    "read+plan": "read+plan: the stored bytes, the header and the crop drawn, per sample",
    "redo": "redo: samples the batch call left to dataset[index], or the CPU finish of images the GPU decoder does not take",
}


@dataclass(frozen=True)
class LoaderStats:
    """What a loader measured over a window (all seconds; plain numbers).

    A :meth:`Loader.stats` call gives the totals since the loader's first
    pass began; ``later.since(earlier)`` gives the window between two calls.

    Attributes:
        seconds: wall time of the window.
        batches: batches the training loop received.
        wait_s: time the loop spent inside ``next()`` waiting for them.
        workers: worker processes or threads (0: the main process builds batches).
        worker_kind: ``"processes"``, ``"threads"`` or ``"main process"``.
        worker_batches: batches the workers finished.
        worker_busy_s: their seconds building them, summed over workers
            (0 where no call marks a batch's start: streams, ``decode="cuda"``'s workers).
        worker_stages: seconds per stage, summed over workers (see :mod:`.clock`).
        stage: a GPU decode's main-process seconds per step, host clock
            (``wait`` for the workers, ``decode``, ``cpu``, ``resample``).
        device: its device seconds per step (CUDA events; empty without CUDA).
        notes: what the stage names above cover.
        cpu_share: a GPU decode's share of GPU-decodable samples cropped on
            the CPU at the end of the window (None: no GPU decode).
    """

    seconds: float = 0.0
    batches: int = 0
    wait_s: float = 0.0
    workers: int = 0
    worker_kind: str = "main process"
    worker_batches: int = 0
    worker_busy_s: float = 0.0
    worker_stages: dict[str, float] = field(default_factory=dict)
    stage: dict[str, float] = field(default_factory=dict)
    device: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    cpu_share: float | None = None

    @property
    def wait_share(self) -> float:
        """Fraction of the wall time the loop spent waiting for data."""
        return self.wait_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def batches_per_s(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else 0.0

    @property
    def worker_busy_share(self) -> float | None:
        """Fraction of the workers' wall time spent building batches (None: not measured)."""
        if self.worker_busy_s <= 0 or self.seconds <= 0:
            return None
        return min(1.0, self.worker_busy_s / (self.seconds * max(1, self.workers)))

    def since(self, earlier: LoaderStats) -> LoaderStats:
        """The window from ``earlier`` (a previous ``stats()`` of the same loader) to this one."""
        def minus(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
            return {k: v - b.get(k, 0.0) for k, v in a.items()}

        return LoaderStats(
            seconds=self.seconds - earlier.seconds, batches=self.batches - earlier.batches,
            wait_s=self.wait_s - earlier.wait_s, workers=self.workers, worker_kind=self.worker_kind,
            worker_batches=self.worker_batches - earlier.worker_batches,
            worker_busy_s=self.worker_busy_s - earlier.worker_busy_s,
            worker_stages=minus(self.worker_stages, earlier.worker_stages),
            stage=minus(self.stage, earlier.stage), device=minus(self.device, earlier.device), notes=self.notes,
            cpu_share=self.cpu_share,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields and the shares, for JSON."""
        return asdict(self) | {"notes": list(self.notes), "wait_share": self.wait_share,
                               "batches_per_s": self.batches_per_s, "worker_busy_share": self.worker_busy_share}


def instrument(batches: DataLoader | ThreadedBatches) -> StageClock:
    """Give the workers of ``batches`` a clock, before any worker starts.

    DataLoader: its :class:`KeyedDataset` marks where a batch begins and times
    the samples; its ``collate_fn`` is wrapped in :class:`TimedCollate`.
    Threads time their own batches (:meth:`ThreadedBatches._build`).
    """
    if isinstance(batches, ThreadedBatches):
        clock = StageClock(0)
        batches.time_with(clock)
        return clock
    clock = StageClock(batches.num_workers)
    if hasattr(batches.dataset, "clock"):  # KeyedDataset, the GPU decode's GPUSamples: they time their batches
        batches.dataset.clock = clock
    if batches.collate_fn is not None and not isinstance(batches.collate_fn, TimedCollate):
        batches.collate_fn = TimedCollate(batches.collate_fn, clock)
    return clock


class LoaderTiming:
    """The main-process half: the loop's waits, and a snapshot of everything as :class:`LoaderStats`."""

    def __init__(self, batches: DataLoader | ThreadedBatches, stage: Any) -> None:
        self.clock = instrument(batches)
        self.stage = stage  # the prefetcher, or a GPU decode's GPUBatches (with ``times``)
        if isinstance(batches, ThreadedBatches):
            self.workers, self.kind = batches.threads, "threads"
        else:
            self.workers = batches.num_workers
            self.kind = "processes" if self.workers > 0 else "main process"
        self.started: float | None = None  # the first pass's start: where the totals begin
        self.wait_s, self.batches = 0.0, 0

    def timed(self, batches: Iterator[Any]) -> Iterator[Any]:
        """``batches`` with the time each ``next()`` took counted as the loop's wait."""
        clock = time.perf_counter
        if self.started is None:
            self.started = clock()
        wait = named_range("fastdata.wait")
        while True:
            t0 = clock()
            with wait:
                batch = next(batches, _END)
            self.wait_s += clock() - t0
            if batch is _END:
                return
            self.batches += 1
            yield batch

    def snapshot(self) -> LoaderStats:
        totals = self.clock.totals()
        stages = {k: totals[k] for k in STAGES if totals[k] > 0}
        times = getattr(self.stage, "times", None)
        host = {k: float(v) for k, v in times.items() if k != "batches"} if times is not None else {}
        device_times = getattr(self.stage, "device_times", None)
        device = device_times() if callable(device_times) else {}
        seconds = time.perf_counter() - self.started if self.started is not None else 0.0
        return LoaderStats(
            seconds=seconds, batches=self.batches, wait_s=self.wait_s, workers=self.workers, worker_kind=self.kind,
            worker_batches=int(totals["batches"]), worker_busy_s=totals["busy"], worker_stages=stages,
            stage=host, device=device, notes=tuple(note for k, note in _NOTES.items() if k in stages),
            cpu_share=getattr(self.stage, "cpu_share", None),
        )


_END = object()
