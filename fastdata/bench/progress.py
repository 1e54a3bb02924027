"""The bench's progress: an estimate up front, then a bar with the time left.

On a terminal the bar is one line on stderr, redrawn as each step begins
and twice a second meanwhile; elsewhere (a log, a pipe, CI) each step gets one plain line instead. The
time left is each remaining step's last measured length (a variant's
warm-up and timed steps apart), and for steps not measured yet the
variant's own guess (:attr:`~.harness.Variant.expect`), scaled by how the
guesses have fared so far on this machine.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO


def duration(seconds: float) -> str:
    """``42 s``, ``1 min 30 s``, ``6 min`` (rounded to what a person plans with)."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    if seconds < 600:
        whole = round(seconds / 10.0) * 10
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    return f"{round(seconds / 60)} min"


def clock(seconds: float) -> str:
    """``0:42``, ``1:05``: the bar's time left."""
    seconds = max(0, round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def estimate(variants: Sequence[Any], rounds: int, warmup: int) -> float:
    """Seconds the interleaved run of ``variants`` should take, from their own guesses."""
    return sum(rounds * v.expect + warmup * _warm_guess(v) for v in variants)


def _warm_guess(v: Any) -> float:
    return v.expect_warm if v.expect_warm is not None else v.expect


class Progress:
    """Told by :func:`~.harness.run_interleaved` when each step begins and ends."""

    def __init__(self, variants: Sequence[Any], rounds: int, warmup: int, *, stream: TextIO | None = None,
                 tty: bool | None = None, clock_fn=time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.rounds, self.warmup = rounds, warmup
        self._clock = clock_fn
        self._order = [(v, rnd < warmup) for rnd in range(warmup + rounds) for v in variants]
        self._done = 0
        self._measured: dict[tuple[int, bool], float] = {}
        self._guessed = self._actual = 0.0
        self._drawn = False
        self._lock = threading.Lock()
        self._current: tuple[int, int, str, str, float, float, float] | None = None
        self._halt = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- what the harness calls
    def begin(self, step: int, total: int, label: str, variant: Any, warm: bool) -> None:
        self._done = step - 1
        left = self.left()
        if self.tty:
            after = left - self._guess(variant, warm)  # what is left once this step is done
            with self._lock:
                self._current = (step, total, label, variant.name, left, after, self._clock())
                self._draw()
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, name="bench-progress", daemon=True)
                self._ticker.start()
        else:
            print(f"[{step}/{total}] {label}: {variant.name} (about {clock(left)} left)", file=self.stream, flush=True)

    def end(self, variant: Any, warm: bool, seconds: float) -> None:
        key = (id(variant), warm)
        if key not in self._measured:  # the first of its kind calibrates the guesses
            self._guessed += _warm_guess(variant) if warm else variant.expect
            self._actual += seconds
        self._measured[key] = seconds

    def skip(self, variant: Any, warm: bool) -> None:
        self._measured[(id(variant), warm)] = 0.0  # a failed variant's later steps take no time

    def close(self) -> None:
        self._halt.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self.tty and self._drawn:
                print(file=self.stream, flush=True)
                self._drawn = False
            self._current = None

    # -- the estimate
    def scale(self) -> float:
        """How much longer than guessed the steps measured so far took (1 before any)."""
        if self._guessed <= 0 or self._actual <= 0:
            return 1.0
        return min(4.0, max(0.25, self._actual / self._guessed))

    def left(self) -> float:
        """Seconds left, from the current step (included) on."""
        return sum(self._guess(v, warm) for v, warm in self._order[self._done:])

    def _guess(self, v: Any, warm: bool) -> float:
        known = self._measured.get((id(v), warm))
        return known if known is not None else self.scale() * (_warm_guess(v) if warm else v.expect)

    def _tick(self) -> None:
        while not self._halt.wait(0.5):
            with self._lock:
                if self._current is not None:
                    self._draw()

    def _draw(self) -> None:
        """Redraw the bar (the lock held): the time left counts down within a step, down to what the rest takes."""
        assert self._current is not None
        step, total, label, name, left, after, since = self._current
        left = max(after, left - (self._clock() - since))
        width = shutil.get_terminal_size((100, 20)).columns
        bar_width = 24
        filled = int(bar_width * (step - 1) / max(1, total))
        head = f"bench [{'#' * filled}{'.' * (bar_width - filled)}] {step}/{total} ~{clock(left)} left  {label}: "
        line = head + name
        if len(line) > width - 1:
            line = line[: max(len(head), width - 2)] + "…"
        print(f"\r{line}\x1b[K", end="", file=self.stream, flush=True)
        self._drawn = True
