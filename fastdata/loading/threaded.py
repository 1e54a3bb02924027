"""Loader workers as threads of the training process (``Workers(kind="threads")``).

fastdata's compiled crop decoder releases the GIL for the decode and resize,
which are nearly all of a sample's time, so threads share the cores as well
as worker processes do, without what processes cost per batch: a new
shared-memory segment for every batch (torch allocates and zero-fills it,
then the main process maps it again), pickling and a queue round trip
(what that saved: benchmarks/RESULTS.md, "Figures behind the code's constants").

Same contract as a DataLoader over the same sampler: each batch is
``collate_fn([dataset[key] for key in batch_keys])``, yielded in order; up
to ``threads * prefetch_factor`` batches are built ahead. A sample's error
is raised in the caller's thread with the sample's own traceback. Where
the loader's executor builds whole batches itself (the CPU executor's
:class:`~fastdata.loading.batched.BatchedPlans`: one C call for all the
samples of a batch of planned crops), ``batcher`` builds them instead.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import torch
from torch.utils.data import BatchSampler
from torch.utils.data._utils.pin_memory import pin_memory

from .clock import NO_CLOCK, StageClock

__all__ = ["ThreadedBatches"]


class SizedKeys(Protocol):
    """The sampler a pass reads: its keys, and how many (torch's ``Sampler`` types no ``len``)."""

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class ThreadedBatches:
    """Iterable of collated batches built by a pool of ``threads`` threads.

    Stands where :class:`torch.utils.data.DataLoader` does in a
    :class:`~fastdata.loading.Loader` (``batch_size``, ``drop_last``,
    ``len()``, ``dataset``, ``sampler``). With ``persistent`` the pool lives
    until :meth:`close`; otherwise each pass starts and stops its own. With
    ``pin`` (and CUDA) a batch that ``collate_fn`` did not put in pinned
    memory is copied there, in the worker thread. ``batcher(keys)``, when
    given, builds each batch; ``batch_path = False`` sets it aside and keeps
    every sample on ``dataset[key]`` (the same batches, for comparison).
    """

    def __init__(self, dataset: Any, *, batch_size: int, sampler: SizedKeys, collate_fn: Callable[[list[Any]], Any],
                 drop_last: bool, threads: int, prefetch_factor: int = 2, persistent: bool = True,
                 pin: bool = False, batcher: Callable[[list[Any]], Any] | None = None) -> None:
        self.dataset, self.sampler, self.collate_fn = dataset, sampler, collate_fn
        self.batch_size, self.drop_last = int(batch_size), bool(drop_last)
        self.threads, self.prefetch_factor, self.persistent = int(threads), int(prefetch_factor), bool(persistent)
        self.pin = bool(pin) and torch.cuda.is_available()
        self.batch_path = True
        self._batcher = batcher
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.clock: StageClock = NO_CLOCK  # Loader.stats: where the threads' time goes (time_with)

    def __repr__(self) -> str:
        return f"ThreadedBatches(threads={self.threads}, batch_size={self.batch_size}, prefetch_factor={self.prefetch_factor})"

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="fastdata-loader")
            return self._pool

    def time_with(self, clock: StageClock) -> None:
        """Count each batch's stages on ``clock`` (the batch call splits its own)."""
        self.clock = clock
        if self._batcher is not None and hasattr(self._batcher, "clock"):
            self._batcher.clock = clock

    def _build(self, keys: list[Any]) -> Any:
        clock, started = self.clock, time.perf_counter()
        if self.batch_path and self._batcher is not None:
            batch = self._batcher(keys)
        else:
            samples = _samples(self.dataset, keys, clock)
            with clock.span("collate"):
                batch = self.collate_fn(samples)
        if self.pin:
            with clock.span("pin"):
                batch = pin_memory(batch)
        clock.batch_done(started)
        return batch

    def __iter__(self) -> Iterator[Any]:
        pool = self._executor()
        keys = iter(BatchSampler(self.sampler, self.batch_size, self.drop_last))
        pending: collections.deque[Future[Any]] = collections.deque()
        try:
            for batch_keys in keys:
                pending.append(pool.submit(self._build, batch_keys))
                if len(pending) >= self.threads * self.prefetch_factor:
                    break
            while pending:
                batch = pending.popleft().result()
                nxt = next(keys, None)
                if nxt is not None:
                    pending.append(pool.submit(self._build, nxt))
                yield batch
        finally:
            # An abandoned or failed pass: drop what was queued; the few batches
            # being built finish in the background and are discarded.
            for future in pending:
                future.cancel()
            if not self.persistent:
                self.close()

    def close(self) -> None:
        """Stop the pool (it restarts on the next pass)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _samples(dataset: Any, keys: list[Any], clock: StageClock) -> list[Any]:
    timed = getattr(dataset, "timed", None)  # a KeyedDataset times its samples per stage
    if timed is not None and clock is not NO_CLOCK:
        return timed(keys, clock)
    with clock.span("read+decode+transform"):
        return [dataset[key] for key in keys]
