"""Where the workers' time goes: seconds per loading stage, summed in shared memory.

Worker processes cannot hand the main process a Python object cheaply, and
putting a timing record into each batch would change what users receive.
So each process adds its seconds into its own row of one small float64
tensor in shared memory (the pattern of :class:`~fastdata.datasets._shared.SharedSlots`:
fork inherits the mapping, spawn sends it through torch's reductions), and
the main process reads the sums when :meth:`Loader.stats` is called. An
add is a NumPy scalar add under a lock, about 0.3 us: nothing beside a
sample's milliseconds.

The stages are named for what the timed call does, because the executors
split the work differently (``ARCHITECTURE.md``):

* per sample (worker processes, the main process, threads over a dataset
  without plans): a fastdata dataset says which part of ``dataset[index]``
  it is in (:mod:`fastdata.datasets.stages`): ``read`` (the stored bytes or
  the file) and ``decode+transform`` (a decode-aware transform decodes while
  it crops and resizes: one call); any other dataset's call is one
  ``read+decode+transform``. Then ``collate``.
* loader threads over planned crops (:mod:`.batched`): ``read+plan`` per
  sample, then ``decode+collate``, one C call that decodes, crops, resizes
  and writes every sample into its batch slot; ``redo`` is samples the call
  left to ``dataset[index]``.
* ``pin``: copying a thread's batch to pinned memory.

Each stage is also a ``torch.profiler`` range named ``fastdata.<stage>``
(and an NVTX range where CUDA is available), opened only while a profiler
runs: ``record_function`` costs about 5 us even when nothing records.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any

import torch
from torch.autograd.profiler import record_function

from ..datasets._shared import process_slot

__all__ = ["NO_CLOCK", "STAGES", "StageClock", "TimedCollate", "named_range"]

STAGES = ("read", "decode+transform", "read+decode+transform", "read+plan", "decode+collate", "redo", "collate", "pin")
_COLUMN = {name: i for i, name in enumerate(STAGES)}
_RANGE = {name: "fastdata." + name for name in STAGES}  # the profiler's names, made once
_BUSY, _BATCHES = len(STAGES), len(STAGES) + 1  # seconds building whole batches, and how many

_CLOCKS: weakref.WeakSet[StageClock] = weakref.WeakSet()


def _new_locks_after_fork() -> None:
    # a lock a loader thread held when a worker process forked stays held in the child
    for clock in list(_CLOCKS):
        clock._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_after_fork)

_profiler_on = torch._C._autograd._profiler_enabled
_nvtx: bool | None = None



def _use_nvtx() -> bool:
    global _nvtx
    if _nvtx is None:
        _nvtx = torch.cuda.is_available()  # decided once: it does not initialise CUDA
    return _nvtx


class _Range:
    """A named range while a profiler records (``torch.profiler`` and, with CUDA, NVTX)."""

    __slots__ = ("_rf", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._rf: record_function | None = None

    def __enter__(self) -> None:
        if _profiler_on():
            self._rf = record_function(self.name)
            self._rf.__enter__()
            if _use_nvtx():
                torch.cuda.nvtx.range_push(self.name)

    def __exit__(self, *exc: object) -> None:
        if self._rf is not None:
            if _use_nvtx():
                torch.cuda.nvtx.range_pop()
            self._rf.__exit__(None, None, None)
            self._rf = None


def named_range(name: str) -> _Range:
    """``with named_range("fastdata.wait"):`` -- a profiler range, free when none records."""
    return _Range(name)


class _Span:
    __slots__ = ("clock", "column", "range", "t0")

    def __init__(self, clock: StageClock, stage: str) -> None:
        self.clock, self.column, self.range = clock, _COLUMN[stage], _Range(_RANGE[stage])

    def __enter__(self) -> None:
        self.range.__enter__()
        self.t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.clock.add(self.column, time.perf_counter() - self.t0)
        self.range.__exit__()


class StageClock:
    """Seconds per stage and per process (row 0: the main process and its
    threads; row ``1 + id``: DataLoader worker ``id``), in shared memory.

    Args:
        workers: DataLoader worker processes that will write (0 for none).
    """

    def __init__(self, workers: int = 0) -> None:
        table = torch.zeros((1 + max(0, int(workers)), len(STAGES) + 2), dtype=torch.float64)
        try:
            table.share_memory_()
        except RuntimeError:  # no usable /dev/shm: the workers' seconds stay in the workers
            pass
        self._setup(table)

    def _setup(self, table: torch.Tensor) -> None:
        self._table, self._sums = table, table.numpy()  # NumPy's scalar add is 40x cheaper than torch's
        self._lock = threading.Lock()
        self._batch_started: float | None = None  # a worker process's batch in progress (one thread)
        _CLOCKS.add(self)

    def __getstate__(self) -> dict[str, Any]:
        return {"table": self._table}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["table"])

    def _row(self) -> int:
        return min(process_slot(), self._sums.shape[0] - 1)

    def add(self, column: int, seconds: float) -> None:
        row = self._row()
        with self._lock:
            self._sums[row, column] += seconds

    def span(self, stage: str) -> _Span:
        """``with clock.span("collate"):`` adds the block's seconds to ``stage``."""
        return _Span(self, stage)

    def batch_started(self) -> None:
        """A worker process begins a batch (its samples come next, then the collate)."""
        self._batch_started = time.perf_counter()

    def batch_done(self, started: float | None = None) -> None:
        """A batch is built: its seconds since ``started`` (or :meth:`batch_started`) count as busy."""
        start = started if started is not None else self._batch_started
        self._batch_started = None
        # a stream's samples: no call marks where its batch began, so no busy time
        row, seconds = self._row(), (time.perf_counter() - start) if start is not None else 0.0
        with self._lock:
            self._sums[row, _BUSY] += seconds
            self._sums[row, _BATCHES] += 1

    def totals(self) -> dict[str, float]:
        """Seconds per stage, ``busy`` seconds and ``batches``, summed over every process."""
        with self._lock:
            sums = self._sums.sum(axis=0)
        out = {name: float(sums[i]) for i, name in enumerate(STAGES)}
        return out | {"busy": float(sums[_BUSY]), "batches": float(sums[_BATCHES])}


class _NoSpan:
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


class _NoClock:
    """A clock that keeps nothing: what an executor times with until a loader gives it one."""

    _span = _NoSpan()

    def span(self, stage: str) -> _NoSpan:
        return self._span

    def batch_done(self, started: float | None = None) -> None:
        pass


NO_CLOCK: Any = _NoClock()


class TimedCollate:
    """A DataLoader's ``collate_fn`` with its seconds counted as the ``collate``
    stage, closing the batch that :meth:`KeyedDataset.__getitems__` began.

    Reads and sets attributes of the collate it wraps (``memory_format``...),
    so code that adjusts ``loader.dataloader.collate_fn`` keeps working.
    """

    __slots__ = ("clock", "inner")

    def __init__(self, inner: Any, clock: StageClock) -> None:
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "clock", clock)

    def __call__(self, samples: Any) -> Any:
        clock = self.clock
        with clock.span("collate"):
            batch = self.inner(samples)
        clock.batch_done()
        return batch

    def __getattr__(self, name: str) -> Any:
        if name in TimedCollate.__slots__ or name.startswith("__"):
            raise AttributeError(name)  # unpickling asks before the slots are set
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.inner, name, value)

    def __getstate__(self) -> tuple[Any, StageClock]:
        return self.inner, self.clock

    def __setstate__(self, state: tuple[Any, StageClock]) -> None:
        object.__setattr__(self, "inner", state[0])
        object.__setattr__(self, "clock", state[1])

    def __repr__(self) -> str:
        return repr(self.inner)
