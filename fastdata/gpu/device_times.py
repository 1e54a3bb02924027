"""Device seconds of the GPU stage's steps, from CUDA event pairs.

A host clock around a kernel launch measures the launch, not the work; an
event recorded before and after the step on the stream that runs it gives
the device's own time once both have completed. Pairs are read when
:meth:`DeviceTimes.totals` is called, or when more than :data:`HELD` wait,
so a run that never asks holds a bounded number of events.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from typing import Any

import torch

__all__ = ["DeviceTimes"]

HELD = 64


class DeviceTimes:
    """Seconds per step on the device (``decode``, ``resample``); nothing off CUDA."""

    def __init__(self) -> None:
        self._pending: deque[tuple[str, Any, Any]] = deque()
        self._done: Counter[str] = Counter()
        self._lock = threading.Lock()  # the decode and resample threads record, the training loop reads

    def start(self, device: torch.device) -> Any:
        """An event on the current stream, or None off CUDA."""
        if device.type != "cuda":
            return None
        event = torch.cuda.Event(enable_timing=True)  # pragma: no cover - needs CUDA
        event.record()  # pragma: no cover
        return event  # pragma: no cover

    def stop(self, step: str, started: Any) -> None:
        """Close the step begun with ``started`` (from :meth:`start`) on the current stream."""
        if started is None:
            return
        end = torch.cuda.Event(enable_timing=True)  # pragma: no cover - needs CUDA
        end.record()  # pragma: no cover
        with self._lock:  # pragma: no cover
            self._pending.append((step, started, end))
            if len(self._pending) > HELD:
                self._settle()

    def _settle(self) -> None:
        while self._pending and self._pending[0][2].query():  # pragma: no cover - needs CUDA
            step, a, b = self._pending.popleft()
            self._done[step] += a.elapsed_time(b) / 1000.0

    def totals(self) -> dict[str, float]:
        """Device seconds per step over the pairs that have completed."""
        with self._lock:
            self._settle()
            return dict(self._done)
