"""The doctor's three measurements: the loader alone (its ceiling), the step
alone on one held batch, and both together in a training loop.

Each runs whole passes until it has lasted ``seconds`` and taken
``min_steps`` steps; the first batch of each pass (worker start-up, an
empty queue) is timed apart, as :class:`~fastdata.loading.watcher.Watch`
does, so that the many pass starts of a measurement a few seconds long do not
pass for steady-state waits. Passes too short for a steady state
(:func:`~fastdata.loading.watcher.steady_batches`) count it: training on such
a dataset pays it every epoch (with one batch a pass, every batch is a first).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..loading.stats import LoaderStats
from ..loading.watcher import Watch, WatchReport

__all__ = ["Phase", "alone", "loader_alone", "ratio", "together"]


@dataclass(frozen=True)
class Phase:
    """One measurement: ``steps`` batches, the loop's ``wait_ms`` and
    ``step_ms`` per batch, ``startup_s`` for the passes' first batches (in
    ``wait_ms`` only when ``startup_counted``: passes ``pass_batches`` long,
    fewer than the ``steady_batches`` a steady state needs), and the batch
    size to give images per second."""

    name: str
    steps: int
    wait_ms: float
    step_ms: float
    startup_s: float
    batch_size: int
    startup_counted: bool = False
    pass_batches: int = 0
    steady_batches: int = 0

    @property
    def batches_per_s(self) -> float:
        per = self.wait_ms + self.step_ms
        return 1000.0 / per if per > 0 else 0.0

    @property
    def images_per_s(self) -> float:
        return self.batches_per_s * self.batch_size

    def to_dict(self) -> dict[str, Any]:
        # no per-phase wait share: the report's one wait_share is the training loop's (the "together" phase)
        return asdict(self) | {"batches_per_s": self.batches_per_s, "images_per_s": self.images_per_s}


def _watched(name: str, loader: Any, step: Callable[[Any, Any], None], seconds: float, min_steps: int,
             batch_size: int, loader_ratio: float | None = None) -> tuple[Phase, WatchReport, Watch]:
    w = Watch(loader, every=0, out=io.StringIO())
    deadline = time.perf_counter() + seconds
    with w:
        done = False
        while not done:
            for images, targets in w:
                step(images, targets)
                if w.steps + 1 >= min_steps and time.perf_counter() >= deadline:
                    done = True  # the next step is counted when it finishes; then stop
                    break
    report = w.report(loader_ratio=loader_ratio)
    n = max(1, report.steps)
    phase = Phase(name, report.steps, 1000 * report.wait_s / n, 1000 * report.step_s / n, report.startup_s,
                  batch_size, report.startup_counted, report.pass_batches, report.steady_batches)
    return phase, report, w


def loader_alone(loader: Any, *, seconds: float, min_steps: int, batch_size: int) -> tuple[Phase, Any, LoaderStats | None]:
    """The loader's ceiling: its batches taken as fast as they come. Also
    returns one batch, held for :func:`alone`, and the loader's stats."""
    held: list[Any] = []

    def keep(images: Any, targets: Any) -> None:
        if not held:
            held.append((images, targets))

    phase, report, _ = _watched("loader alone", loader, keep, seconds, min_steps, batch_size)
    return phase, held[0], report.loader


def alone(step: Callable[[Any, Any], None], batch: tuple[Any, Any], *, seconds: float, min_steps: int,
          batch_size: int) -> Phase:
    """The step alone, on one batch over and over (after one untimed warm-up step)."""
    images, targets = batch
    step(images, targets)
    clock, n, total = time.perf_counter, 0, 0.0
    deadline = clock() + seconds
    while n < min_steps or clock() < deadline:
        t0 = clock()
        step(images, targets)
        total += clock() - t0
        n += 1
    return Phase("step alone", n, 0.0, 1000 * total / n, 0.0, batch_size)


def ratio(ceiling: Phase, stepped: Phase) -> float | None:
    """The loader alone's batches per second over the step alone's: the one
    "Nx" figure the table, the verdict, the JSON and the picture give."""
    if ceiling.batches_per_s <= 0 or stepped.batches_per_s <= 0:
        return None
    return ceiling.batches_per_s / stepped.batches_per_s


def together(loader: Any, step: Callable[[Any, Any], None], *, seconds: float, min_steps: int,
             batch_size: int, loader_ratio: float | None = None) -> tuple[Phase, WatchReport, dict[str, list[Any]]]:
    """The training loop: the loader's batches through the step, judged with
    ``loader_ratio`` (:func:`ratio`); also the per-batch timeline (``wait_ms``,
    ``step_ms``, and ``pass_starts``: the batches that began a pass, whose wait
    is start-up)."""
    phase, report, w = _watched("together", loader, step, seconds, min_steps, batch_size, loader_ratio)
    timeline: dict[str, list[Any]] = {"wait_ms": [1000 * v for v in w.timeline["wait"]], "step_ms": [1000 * v for v in w.timeline["step"]],
                "pass_starts": list(w.pass_starts)}
    return phase, report, timeline
