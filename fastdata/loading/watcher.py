"""``fastdata.watch(loader)``: is this training loop waiting for data?

Wrapped around the loader inside the user's own loop, it times each step's
wait in ``next()`` and the loop body after it, and every ``every`` steps and
at the end prints the steps per second, the share of time spent waiting,
the stage that takes the workers' time (from :meth:`Loader.stats`) and one
lever, chosen from those numbers by :func:`~.verdict.judge`.

The first batch of each pass is reported apart ("start-up"): it waits for
workers to start and for the queue to fill, which a long pass pays once.
Where the passes are too short for a steady state (:func:`steady_batches`)
that start-up is much of every epoch, so it is counted like any other wait,
and the summary says so.
Times are host times: on CUDA the step's time is what the host spent in it
(a loss ``.item()`` or the allocator's back-pressure makes it wait for the
device); ``sync=True`` synchronises after each step to measure the device.
"""

from __future__ import annotations

import sys
import time
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import torch

from .stats import LoaderStats
from .verdict import ShortPasses, Verdict, judge

__all__ = ["SHORT_PASS", "Watch", "WatchReport", "loader_dict", "steady_batches", "watch"]

SHORT_PASS = 4
"""The fewest batches a pass needs for a steady state (more with many workers:
:func:`steady_batches`). A shorter pass counts its first batch's wait: training
on such a dataset pays the start-up every epoch, and leaving it out would leave
out most of the waiting (with one batch a pass, all of it)."""


def steady_batches(workers: int) -> int:
    """The batches a pass needs for a steady state with ``workers`` workers:
    while the loop waits for a pass's first batch each worker builds one, so
    only the batches after the first ``workers`` show the loader's pace, and two
    of them are the least to measure it by."""
    return max(SHORT_PASS, workers + 2)

TIMELINE_STEPS = 1_000_000
"""Per-step times kept for :attr:`Watch.timeline` (16 MB); later steps only count in the totals."""


@dataclass(frozen=True)
class WatchReport:
    """What a :class:`Watch` measured over its steps (seconds; plain numbers).

    ``wait_share`` is ``wait_s / (wait_s + step_s)``; ``startup_s`` is the
    waits of each pass's first batch. Those are left out of ``wait_s`` unless
    the passes are shorter than ``steady_batches`` (``startup_counted``;
    ``pass_batches``: the longest whole pass seen, 0 when none ended).
    """

    steps: int
    wait_s: float
    step_s: float
    startup_s: float
    verdict: Verdict
    loader: LoaderStats | None = None
    notes: tuple[str, ...] = field(default=())
    startup_counted: bool = False
    pass_batches: int = 0
    steady_batches: int = SHORT_PASS

    @property
    def seconds(self) -> float:
        return self.wait_s + self.step_s

    @property
    def wait_share(self) -> float:
        return self.verdict.wait_share

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "seconds": self.seconds, "steps_per_s": self.steps_per_s,
                "wait_s": self.wait_s, "step_s": self.step_s, "startup_s": self.startup_s,
                "startup_counted": self.startup_counted, "pass_batches": self.pass_batches,
                "steady_batches": self.steady_batches,
                "wait_share": self.wait_share, **self.verdict.to_dict(), "loader": loader_dict(self.loader)}

    def lines(self) -> list[str]:
        """The summary, as printed at the end."""
        if self.startup_counted:
            startup = (f"start-up {self.startup_s:.2f} s counted: a pass is {self.pass_batches} batch(es), fewer than "
                       f"the {self.steady_batches} a steady state needs, so every epoch pays it")
        else:
            startup = f"start-up {self.startup_s:.2f} s not counted"
        out = [f"fastdata.watch: {self.steps} steps in {self.seconds:.1f} s ({self.steps_per_s:.1f} steps/s; {startup})"]
        per = 1000 / max(1, self.steps)
        out.append(f"  waiting for data: {self.wait_share:.0%} of the time ({self.wait_s * per:.1f} ms a step); "
                   f"the step itself: {self.step_s * per:.1f} ms")
        s = self.loader
        if s is not None and s.worker_stages:
            total = sum(s.worker_stages.values())
            parts = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(s.worker_stages.items(), key=lambda kv: -kv[1]))
            busy = f"{s.worker_busy_share:.0%} busy; " if s.worker_busy_share is not None else ""
            who = f"{s.workers} {s.worker_kind}" if s.workers else s.worker_kind
            out.append(f"  workers ({who}): {busy}{parts}")
        out.append(f"  verdict: {self.verdict.verdict} -- {self.verdict.suggestion}")
        return out


class Watch:
    """Iterable over ``loader``'s batches that times them (see :func:`watch`)."""

    def __init__(self, loader: Iterable[Any], *, every: int = 100, out: TextIO | None = None,
                 sync: bool = False) -> None:
        if every < 0:
            raise ValueError(f"every must be >= 0 (0: only the summary), got {every}")
        self.loader, self.every, self.out, self.sync = loader, int(every), out, bool(sync)
        self.steps, self.wait_s, self.step_s, self.startup_s = 0, 0.0, 0.0, 0.0
        self.timeline = {"wait": array("d"), "step": array("d")}  # per step, seconds
        self.pass_starts: list[int] = []  # the steps (0-based) that began a pass: their wait is start-up
        self.pass_lengths: list[int] = []  # batches of each pass that ran to its end
        self._stats = getattr(loader, "stats", None)
        self._start = self._stats() if callable(self._stats) else None
        self._window = (0, 0.0, 0.0, self._start)  # steps, wait, step time, loader stats at the window's start
        self._in_with = False

    def __enter__(self) -> Watch:
        self._in_with = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._in_with = False
        self._print(self.report().lines())

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]  # any iterable is watched; len() needs a sized one

    def __iter__(self) -> Iterator[Any]:
        clock, first = time.perf_counter, True
        batches = iter(self.loader)
        sync = self.sync and torch.cuda.is_available()
        while True:
            t0 = clock()
            batch = next(batches, _END)
            t1 = clock()
            if batch is _END:
                if not first:
                    self.pass_lengths.append(self.steps - self.pass_starts[-1])
                break
            yield batch
            if sync:
                torch.cuda.synchronize()
            self._count(t1 - t0, clock() - t1, first)
            first = False
        if not self._in_with:
            self._print(self.report().lines())

    def _count(self, wait: float, step: float, first: bool) -> None:
        self.steps += 1
        if first:
            self.startup_s += wait
            self.pass_starts.append(self.steps - 1)
        else:
            self.wait_s += wait
        self.step_s += step
        if len(self.timeline["wait"]) < TIMELINE_STEPS:
            self.timeline["wait"].append(wait)
            self.timeline["step"].append(step)
        if self.every and self.steps % self.every == 0:
            self._print([self._window_line()])

    @property
    def steady_batches(self) -> int:
        """:func:`steady_batches` for the loader's workers (none known: :data:`SHORT_PASS`)."""
        return steady_batches(self._start.workers if self._start is not None else 0)

    @property
    def short_passes(self) -> bool:
        """Whether the passes that ended were too short for a steady state."""
        return bool(self.pass_lengths) and max(self.pass_lengths) < self.steady_batches

    def _counted_wait(self) -> float:
        return self.wait_s + self.startup_s if self.short_passes else self.wait_s

    def _window_line(self) -> str:
        steps0, wait0, step0, stats0 = self._window
        stats = self._stats() if callable(self._stats) else None
        window = stats.since(stats0) if stats is not None and stats0 is not None else None
        waited = self._counted_wait()
        self._window = (self.steps, waited, self.step_s, stats)
        wait, step = waited - wait0, self.step_s - step0
        share = wait / (wait + step) if wait + step > 0 else 0.0
        v = self._judge(share, window)
        rate = (self.steps - steps0) / (wait + step) if wait + step > 0 else 0.0
        where = f"; most worker time: {v.dominant} ({v.dominant_share:.0%})" if v.dominant else ""
        return (f"fastdata.watch: steps {steps0 + 1}-{self.steps}: {rate:.1f} steps/s, waiting for data {share:.0%} "
                f"of the time{where} -> {v.verdict}: {v.suggestion}")

    def _judge(self, share: float, stats: LoaderStats | None, loader_ratio: float | None = None) -> Verdict:
        prefetcher = getattr(self.loader, "prefetcher", None)
        waited = self._counted_wait()
        short = ShortPasses(max(self.pass_lengths), self.startup_s / waited if waited > 0 else 0.0) \
            if self.short_passes else None
        return judge(share, stats, dataset=getattr(self.loader, "dataset", None),
                     gpu_decode=type(prefetcher).__name__ == "GPUBatches", loader_ratio=loader_ratio, short=short)

    def report(self, *, loader_ratio: float | None = None) -> WatchReport:
        """The steps so far, judged (:class:`WatchReport`); ``loader_ratio``: the
        loader alone's rate over the step alone's where both were measured."""
        waited = self._counted_wait()
        counted = waited + self.step_s
        share = waited / counted if counted > 0 else 0.0
        stats = self._stats() if callable(self._stats) else None
        window = stats.since(self._start) if stats is not None and self._start is not None else None
        return WatchReport(self.steps, waited, self.step_s, self.startup_s,
                           self._judge(share, window, loader_ratio), window,
                           startup_counted=self.short_passes, pass_batches=max(self.pass_lengths, default=0),
                           steady_batches=self.steady_batches)

    def _print(self, lines: list[str]) -> None:
        out = self.out if self.out is not None else sys.stderr
        for line in lines:
            print(line, file=out, flush=True)


def loader_dict(stats: LoaderStats | None) -> dict[str, Any] | None:
    """``stats.to_dict()`` beside a report's own ``wait_share``: the loader's
    share is over its wall time, every pass's first batch included, so it is
    named ``wait_share_all_batches`` where both stand in one object."""
    if stats is None:
        return None
    d = stats.to_dict()
    d["wait_share_all_batches"] = d.pop("wait_share")
    return d


def watch(loader: Iterable[Any], *, every: int = 100, out: TextIO | None = None, sync: bool = False) -> Watch:
    """Time the training loop around ``loader`` and say whether it waits for data.

    Usage::

        with fastdata.watch(loader, every=100) as w:
            for images, targets in w:
                step(images, targets)
        w.report()  # the numbers: steps/s, wait share, verdict, suggestion

    Every ``every`` steps (0: never) and when the ``with`` block ends (or,
    without ``with``, when a pass ends) it prints to ``out`` (default
    stderr) the steps per second, the share of time spent waiting for data,
    the stage that dominates the workers' time and one suggestion. Works
    with any iterable; a fastdata loader adds the stages (:meth:`Loader.stats`).

    Args:
        loader: what the loop iterates (a fastdata Loader, a DataLoader...).
        every: steps between progress lines.
        out: where to print (a text stream).
        sync: synchronise CUDA after each step, so the step's time is the device's.

    Raises:
        ValueError: a negative ``every``.
    """
    return Watch(loader, every=every, out=out, sync=sync)


_END = object()
