"""Interleaved timing of benchmark variants, with warm-up, repeats and peak RSS."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from . import busy


@dataclasses.dataclass
class Variant:
    """One thing to time.

    Attributes:
        name: row label, unique.
        group: rows in one group are compared against the group's baseline.
        run: called once per round; iterates the pipeline for one pass and
            returns the number of items it processed (images, records, ...).
        baseline: the name of the row (in the same group) this one's ratio is taken against.
        unit: what ``run`` counts ("img", "rec").
        note: shown in the table (e.g. "PIL stand-in: torchvision not installed").
        bytes_per_item: for MB/s columns, when meaningful.
    """

    name: str
    group: str
    run: Callable[[], int | Measured]
    baseline: str | None = None
    unit: str = "img"
    note: str = ""
    bytes_per_item: float | None = None
    setup: Callable[[], Any] | None = None
    teardown: Callable[[], Any] | None = None
    warm: Callable[[], int | Measured] | None = None
    """The warm-up pass (default: ``run``); a shorter one (one epoch) warms caches as well."""
    expect: float = 1.5
    """Roughly how many seconds one timed step takes (setup and teardown included): the up-front estimate."""
    expect_warm: float | None = None
    """The same for a warm-up step (default: ``expect``)."""


@dataclasses.dataclass(frozen=True)
class Measured:
    """What ``Variant.run`` returns when it times itself: ``items`` in ``seconds``
    (e.g. a conversion's time beyond start-up: a whole run's minus a tiny run's)."""

    items: float
    seconds: float


@dataclasses.dataclass
class Result:
    name: str
    group: str
    unit: str
    rates: list[float]
    peak_rss_mb: float
    baseline: str | None
    note: str
    bytes_per_item: float | None
    error: str | None = None
    others: list[float] = dataclasses.field(default_factory=list)
    """Other processes' share of our CPUs during each timed round (see :mod:`.busy`)."""
    seconds: list[float] = dataclasses.field(default_factory=list)
    """How long each timed round's window was (the window ``others`` was measured over)."""

    @property
    def median(self) -> float:
        return statistics.median(self.rates) if self.rates else 0.0

    @property
    def spread(self) -> float | None:
        """The rounds' relative spread, (fastest - slowest) / median (None with fewer than two rounds)."""
        if len(self.rates) < 2 or self.median <= 0:
            return None
        return (max(self.rates) - min(self.rates)) / self.median

    @property
    def busy(self) -> float | None:
        """Other processes' share of our CPUs while this row was timed, weighted by
        each round's length (rounds too short to tell left out: :func:`.busy.weighted`)."""
        if not self.others:
            return None
        if len(self.seconds) != len(self.others):  # built by hand, without windows
            return statistics.fmean(self.others)
        return busy.weighted(self.others, self.seconds)


def run_interleaved(
    variants: Sequence[Variant],
    *,
    rounds: int = 3,
    warmup: int = 1,
    progress: Any = None,
) -> list[Result]:
    """Time every variant ``rounds`` times, one pass of each per round.

    The first ``warmup`` rounds are run and discarded (page cache, worker
    start-up, lazy imports). A variant that raises is reported with its error
    and left out of later rounds; the others go on. ``progress`` is a
    :class:`~.progress.Progress` (told when each step begins and ends) or a
    callable given one line per step.
    """
    results = {(v.group, v.name): Result(v.name, v.group, v.unit, [], 0.0, v.baseline, v.note, v.bytes_per_item) for v in variants}
    total = (warmup + rounds) * len(variants)
    step = 0
    for rnd in range(warmup + rounds):
        warm = rnd < warmup
        label = "warm-up" if warm else f"round {rnd - warmup + 1}/{rounds}"
        for v in variants:
            step += 1
            res = results[(v.group, v.name)]
            if res.error:
                if hasattr(progress, "skip"):
                    progress.skip(v, warm)
                continue
            # train and eval rows share names: the group tells their lines apart
            if hasattr(progress, "begin"):
                progress.begin(step, total, f"{label}, {v.group}", v, warm)
            elif progress:
                progress(f"[{step}/{total}] {label}, {v.group}: {v.name}")
            t0 = time.perf_counter()
            try:
                rate, rss, others, window = _timed(v, warm)
            except Exception as exc:  # noqa: BLE001 -- a broken variant must not sink the others
                res.error = f"{type(exc).__name__}: {exc}"[:300]
                continue
            finally:
                if hasattr(progress, "end"):
                    progress.end(v, warm, time.perf_counter() - t0)
            res.peak_rss_mb = max(res.peak_rss_mb, rss)
            if not warm:
                res.rates.append(rate)
                if others is not None:
                    res.others.append(others)
                    res.seconds.append(window)
    if hasattr(progress, "close"):
        progress.close()
    return list(results.values())


def _timed(v: Variant, warm: bool = False) -> tuple[float, float, float | None, float]:
    """Items per second, peak RSS (MB), other processes' share of the CPUs meanwhile and the window's length."""
    if v.setup:
        with sigint_blocked():  # setup starts the variant's workers
            v.setup()
    sampler = _RssSampler()
    sampler.start()
    try:
        before = busy.snapshot(children=_children())
        t0 = time.perf_counter()
        got = (v.warm or v.run)() if warm else v.run()
        dt = time.perf_counter() - t0
        others = busy.others_share(before, busy.snapshot(children=_children()), dt)
    finally:
        peak = sampler.stop()
        if v.teardown:
            v.teardown()
    if isinstance(got, Measured):
        rate = got.items / got.seconds if got.seconds > 0 else 0.0
    else:
        rate = got / dt if dt > 0 else 0.0
    return rate, peak, others, dt


def _children() -> list[int]:
    me = os.getpid()
    return [p for p in _descendants(me) if p != me]


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread while the body starts worker processes and threads.

    A terminal's Ctrl-C goes to the whole process group. Workers forked (or
    spawned: the mask survives exec) meanwhile inherit the blocked mask, so
    the signal reaches this process alone, which stops them in order, instead
    of each worker printing its own KeyboardInterrupt traceback. A Ctrl-C
    during the body stays pending and is raised when it ends.
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _RssSampler(threading.Thread):
    """Peak resident memory of this process plus its children (DataLoader workers), in MB."""

    def __init__(self, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.peak = 0.0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak = max(self.peak, tree_rss_mb(os.getpid()))
            self._halt.wait(self.interval)

    def stop(self) -> float:
        self._halt.set()
        self.join()
        return max(self.peak, tree_rss_mb(os.getpid()))


def tree_rss_mb(pid: int) -> float:
    """RSS of ``pid`` and all its descendants, from /proc (0 where /proc is absent)."""
    total = 0
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total / 1024


def _descendants(pid: int) -> Iterable[int]:
    stack, seen = [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        yield p
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except OSError:
            continue
