"""Timing a row in steady state: a pass read over again until it has lasted
the pass time, loaders built and shut down outside the timed part, and each
kind of row's up-front time estimate."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypedDict

from .settings import Settings


def drain(loader) -> int:
    n = 0
    for images, _ in loader:
        n += len(images)
    return n


class Steady(TypedDict):
    """The :class:`Variant` fields :func:`steady` fills."""

    run: Callable[[], int]
    warm: Callable[[], int]
    setup: Callable[[], None]
    teardown: Callable[[], None]


class Expected(TypedDict):
    """A :class:`Variant`'s up-front time estimates (its ``expect`` fields)."""

    expect: float
    expect_warm: float


class SteadyRow(Steady, Expected):
    """Both, for a row that times steady-state epochs."""


def steady(make: Callable[[], Iterable[Any]], min_items: int = 0, min_seconds: float = 0.0) -> Steady:
    """``run``/``warm``/``setup``/``teardown`` for a Variant that times steady-state epochs.

    ``setup`` (untimed) builds the loader with persistent workers and pulls
    one batch, so worker start-up is paid outside the timed pass, as it is
    amortised over a long training run; ``teardown`` shuts the workers down,
    so only one variant's processes are alive at a time. ``run`` reads whole
    epochs until it has ``min_items`` and has lasted ``min_seconds``: on a
    small set one epoch is a fraction of a second, where scheduling noise and
    the pipeline's fill and drain weigh more than in training, and two runs'
    ratios disagree more. ``warm`` (the warm-up pass) reads one epoch.
    """
    held: list[Any] = []

    def setup() -> None:
        loader = make()
        next(iter(loader))
        held.append(loader)

    def warm() -> int:
        return drain(held[0])

    run = repeated(warm, min_seconds, min_items)

    def teardown() -> None:
        loader = held.pop()
        close = getattr(loader, "close", None)
        if close is not None:
            close()
        else:
            shutdown = getattr(getattr(loader, "_iterator", None), "_shutdown_workers", None)
            if shutdown is not None:
                shutdown()
        del loader

    return {"run": run, "warm": warm, "setup": setup, "teardown": teardown}


def repeated(one_pass: Callable[[], int], min_seconds: float, min_items: int = 0) -> Callable[[], int]:
    """``one_pass`` over again until the whole has lasted ``min_seconds`` and
    counted ``min_items`` (at least once; never again after a pass of none)."""

    def run() -> int:
        t0 = time.perf_counter()
        n = one_pass()
        while n > 0 and (n < min_items or time.perf_counter() - t0 < min_seconds):
            n += one_pass()
        return n

    return run


# Rough seconds a step takes beyond its pass (the up-front estimate; the bar then learns the real ones):
# building the loader and starting its workers, the last epoch's overshoot, shutting it down.
_OVERHEAD = {"torch": 0.6, "threads": 0.25, "processes": 0.6, "dali": 1.3}
_EPOCH_GUESS = {"torch": 0.6, "threads": 0.2, "processes": 0.25, "dali": 0.4}


def expect(s: Settings, kind: str) -> Expected:
    """A row's up-front estimate: the pass time plus what a loader of this ``kind`` costs beyond it."""
    return {"expect": s.pass_seconds + _OVERHEAD[kind], "expect_warm": _EPOCH_GUESS[kind] + _OVERHEAD[kind]}
