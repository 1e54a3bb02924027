"""From measured times to a verdict and one lever: is the training loop
waiting for data, which stage is slow, and which of fastdata's levers fits.

Shared by :func:`fastdata.watch` and ``fastdata doctor``; it only reads
numbers (a wait share, a :class:`~.stats.LoaderStats` window), so the rules
are tested without timing anything.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from .settings import cpus_per_rank
from .stats import LoaderStats

__all__ = ["INPUT_BOUND_SHARE", "ShortPasses", "Verdict", "judge", "times"]

INPUT_BOUND_SHARE = 0.10
"""Above this share of wall time spent waiting for data, a loop is input-bound.
Below it the wait is the queue's start-up and jitter: a faster loader would
gain the loop at most that much."""

SATURATED = 0.80
"""Workers busier than this are the limit; below it the hand-over to the loop is."""

FEW_BATCHES = 20
"""Below this many batches the workers' busy share is mostly the queue filling and draining
(a pass's first and last batches), so it does not decide between workers and hand-over."""

_DECODING = {"read+decode+transform": "reading, decoding and transforming samples",
             "decode+transform": "decoding and transforming samples",
             "decode+collate": "decoding into the batch", "redo": "decoding samples the batch call left"}


@dataclass(frozen=True)
class Verdict:
    """``verdict`` is ``"input-bound"`` or ``"compute-bound"``; ``wait_share``
    the fraction of wall time spent waiting for data; ``dominant`` the stage
    that took most of the workers' time (None when not measured) and
    ``dominant_share`` its fraction of their stage time; ``suggestion`` one
    sentence drawn from these numbers."""

    verdict: str
    wait_share: float
    dominant: str | None
    dominant_share: float | None
    suggestion: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ShortPasses:
    """Passes too short for a steady state, whose first batches' waits are
    counted: ``batches`` a pass, and ``startup_share``, the fraction of the
    counted wait that those first batches took."""

    batches: int
    startup_share: float


def dominant_stage(stats: LoaderStats | None) -> tuple[str | None, float | None]:
    """The stage with the most seconds (workers' stages, else a GPU decode's main-process steps)."""
    if stats is None:
        return None, None
    # a stream's workers time their collate only (nothing marks where their batches
    # begin): that alone would name the collate the slow stage
    measured = stats.worker_busy_s > 0
    stages = {k: v for k, v in stats.worker_stages.items() if v > 0} if measured else {}
    if not stages:
        stages = {f"gpu {k}": v for k, v in stats.stage.items() if k != "wait" and v > 0}
    if not stages:
        return None, None
    name = max(stages, key=stages.__getitem__)
    return name, stages[name] / sum(stages.values())


def judge(wait_share: float, stats: LoaderStats | None = None, *, dataset: Any = None,
          gpu_decode: bool = False, loader_ratio: float | None = None,
          short: ShortPasses | None = None) -> Verdict:
    """The verdict for a loop that waited ``wait_share`` of its wall time.

    Args:
        wait_share: fraction of the loop's wall time spent in ``next()``.
        stats: the loader's window over the same steps (None: a loader
            without stats, such as torch's own DataLoader).
        dataset: the dataset read, to name the conversion lever for an image folder.
        gpu_decode: the loader already decodes on the GPU.
        loader_ratio: the loader alone's batches per second over the step
            alone's, both measured (``fastdata doctor``); None where only the
            loop was timed, and the suggestion then gives no ratio.
        short: where passes are too short for a steady state (their first
            batches' waits are in ``wait_share``); None otherwise.
    """
    dominant, share = dominant_stage(stats)
    verdict = "input-bound" if wait_share > INPUT_BOUND_SHARE else "compute-bound"
    if verdict == "compute-bound":
        suggestion = _compute_bound(wait_share, stats, loader_ratio)
    else:
        suggestion = _input_bound(wait_share, stats, dominant, dataset, gpu_decode, short)
    return Verdict(verdict, wait_share, dominant, share, suggestion)


def _compute_bound(wait_share: float, stats: LoaderStats | None, loader_ratio: float | None) -> str:
    # the only "Nx" figure is the measured one: the workers' busy share is not a
    # ratio of rates (workers that pause on a full queue look idle however fast they are)
    busy = stats.worker_busy_share if stats is not None else None
    waits = f"the loop waits {wait_share:.0%} of the time" + (f", workers {busy:.0%} busy" if busy else "")
    if loader_ratio:
        return (f"the loader alone is {times(loader_ratio)} as fast as the step alone ({waits}): "
                "data is not the bottleneck")
    return f"{waits}: data is not the bottleneck"


def times(ratio: float) -> str:
    """``ratio`` as printed everywhere ("10.3x", "0.12x"): at least two significant figures."""
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:#.2g}x"


def _input_bound(wait_share: float, stats: LoaderStats | None, dominant: str | None, dataset: Any,
                 gpu_decode: bool, short: ShortPasses | None = None) -> str:
    waits = f"the loop waits {wait_share:.0%} of the time"
    if short is not None and short.startup_share > 0.5:
        # every pass starts with an empty queue: its first batch is built while the
        # loop waits, and the workers' busy share says nothing of the steady state
        return (f"{waits}, mostly for each pass's first batch: a pass is {short.batches} batch(es) and the workers "
                "cannot work ahead across passes; more images a pass (or a smaller batch size) spread that "
                "start-up over more steps")
    # in short passes the busy share is mostly the queue filling and draining, as in few batches
    if stats is None:
        return f"{waits} for data: add workers, or load with fastdata.make_loader, whose stats() name the slow stage"
    busy = stats.worker_busy_share
    if busy is not None and busy < SATURATED and stats.batches >= FEW_BATCHES and short is None:
        return (f"{waits} while the workers are only {busy:.0%} busy: the hand-over is the limit, not the "
                f"workers ({_handover(stats)})")
    doing = _DECODING.get(dominant or "", f"in {dominant}" if dominant else "building batches")
    head = f"{waits}; workers are {busy:.0%} busy {doing}" if busy is not None else f"{waits}; {dominant or 'loading'} dominates"
    if dominant in _DECODING:
        return f"{head}: {_decode_lever(stats, dataset, gpu_decode)}"
    if dominant in ("read+plan", "read"):
        return f"{head}: reading is the limit (slow storage?): convert to shards on a local disk (fastdata convert)"
    if dominant == "collate":
        return f"{head}: copying images into batches is the limit: smaller stored images (fastdata convert --resize 256)"
    if dominant == "pin":
        return f"{head}: pinning batches is the limit: pass Workers(pin_memory=False) or use worker processes"
    return f"{head}: add workers"


def _decode_lever(stats: LoaderStats, dataset: Any, gpu_decode: bool) -> str:
    cpus = cpus_per_rank()
    levers = []
    if not gpu_decode and torch.cuda.is_available():
        levers.append("decode on the GPU, which is available here (make_loader(..., decode='cuda'))")
    if type(dataset).__name__ == "ImageFolder":
        levers.append("convert with restart markers (fastdata convert SRC OUT --format recordio: a crop then decodes "
                      "only the segments it covers; --resize 256 shrinks what is decoded)")
    if stats.workers < cpus:
        levers.append(f"add workers ({stats.workers} of {cpus} CPUs in use)")
    if not levers:
        # only levers this machine has: a GPU is named above, and only where torch sees a CUDA device
        levers.append(f"every CPU decodes already ({cpus}): store smaller images "
                      "(fastdata convert SRC OUT --resize 256: fewer pixels to decode)")
    return "; or ".join(levers)


def _handover(stats: LoaderStats) -> str:
    if stats.stage:
        steps = {k: v for k, v in stats.stage.items() if k != "wait"}
        if steps:
            slow = max(steps, key=steps.__getitem__)
            per = 1000 * steps[slow] / max(1, stats.batches)
            return f"the GPU stage's {slow} takes {per:.1f} ms a batch on the host"
    if stats.worker_kind == "threads":
        return "loader threads share the GIL with the step: try Workers(kind='processes') or a larger prefetch_factor"
    return "raise Workers(prefetch_factor=...) so more batches wait ready"
