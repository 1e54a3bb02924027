"""``Loader``: what ``make_loader`` returns -- a torch DataLoader with fastdata's
order, seeding, collate and prefetcher, that advances its epoch and resumes
mid-epoch, on the same set-up or another (built in :mod:`fastdata.loading.make`)."""

from __future__ import annotations

import os
import traceback
from collections.abc import Generator, Iterator, Mapping
from typing import Any

from torch.utils.data import DataLoader

from ..errors import ConfigError
from ..order.generators import Seeding
from ..order.progress import Order, Pass, unread_after
from ..order.unread import Unread
from ..remote import hooks as remote_hooks
from .executors import Stage
from .sampler import ShardedSampler
from .seeding import WorkerSeeder
from .state import LoaderState, dataset_digest
from .stats import LoaderStats, LoaderTiming
from .threaded import ThreadedBatches

__all__ = ["Loader"]


class Loader:
    """Iterable of ``(images, targets)`` batches built by :func:`make_loader`.

    Each ``iter()`` starts the next epoch by itself (the first is epoch 0, or
    what :meth:`set_epoch`/:meth:`load_state_dict` chose); an abandoned pass
    counts as an epoch. ``len()`` is this rank's batches per full epoch.
    It is a ``torch.distributed.checkpoint`` ``Stateful``: :meth:`state_dict`
    is the same on every rank and loads into a job of any size.
    """

    def __init__(self, dataloader: DataLoader | ThreadedBatches, order: Order, seeder: WorkerSeeder,
                 prefetcher: Stage | None, *, dataset: Any, seeding: Seeding, workers: str = "") -> None:
        # order: the sampler of a map-style dataset, or the feed of a stream
        self.dataloader, self.order, self.prefetcher = dataloader, order, prefetcher
        self.dataset, self.seeding, self._seeder = dataset, seeding, seeder
        self.workers = workers  # what the workers are and why ("2 threads (auto: ...)")
        self._epoch, self._consumed, self._running = 0, 0, False
        self._unread: Unread | None = None  # what this pass started from; None: the whole epoch
        self._token: object | None = None
        self._active: Generator[Any, None, None] | None = None
        self._timing = LoaderTiming(dataloader, prefetcher)  # stats(): the loop's waits, the workers' stages

    @property
    def epoch(self) -> int:
        """The epoch of the pass in progress, or of the next one."""
        return self._epoch

    @property
    def batch_size(self) -> int:
        return int(self.dataloader.batch_size)  # type: ignore[arg-type]  # torch types it Optional; make_loader always sets it

    @property
    def rank(self) -> int:
        return self.order.rank

    @property
    def world_size(self) -> int:
        return self.order.world_size

    @property
    def seed(self) -> int:
        return self.order.seed

    def __len__(self) -> int:
        return len(self.dataloader)

    def indices(self, epoch: int | None = None) -> Any:
        """The dataset indices this rank reads in ``epoch`` (default: the pass
        now running, or the next one), in the order it reads them: a NumPy
        array of the rank's whole share (training pads shares to equal sizes by
        repeating a few samples, and its batches drop a last partial batch). To
        see which samples each rank gets, call it on each rank, or build loaders
        with ``rank=``/``world_size=`` in one process.

        Raises:
            ConfigError: a stream (its order is per shard and worker, not an index list).
        """
        if not isinstance(self.order, ShardedSampler):  # the one order with indices
            raise ConfigError("loader.indices() lists map-style datasets' samples; a stream's order is per shard")
        return self.order.share_of(self._epoch if epoch is None else int(epoch)).records(total=self.order.length)

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass epoch ``epoch``, from its start."""
        self._epoch, self._consumed, self._running, self._token = int(epoch), 0, False, None
        self._unread = None

    def __iter__(self) -> Iterator[Any]:
        if self._running:  # the previous pass was abandoned: move on
            self._epoch, self._consumed, self._unread = self._epoch + 1, 0, None
        epoch = self._epoch
        self._running, token = True, object()
        self._token = token
        self.order.set_epoch(epoch)
        self.order.set_unread(self._unread)
        self._read_ahead(epoch)
        self._seeder.epoch = epoch  # read when this epoch's workers start
        self._active = self._count(iter(self.prefetcher if self.prefetcher is not None else self.dataloader), token)
        return self._active

    def _read_ahead(self, epoch: int) -> None:
        """A remote map-style dataset: the first shards of this rank's order
        start downloading while the workers start (each worker reads ahead
        from the shard it opens); a no-op for local files."""
        shards: Any = getattr(self.dataset, "shards", None)  # duck-typed: a dataset of shards
        paths = getattr(shards, "paths", None)
        if not isinstance(self.order, ShardedSampler) or not paths or not remote_hooks.is_localized(os.path.dirname(paths[0])):
            return
        shards.read_ahead(self.order.share_of(epoch, self._unread).records(total=self.order.length))

    def _count(self, batches: Iterator[Any], token: object) -> Generator[Any, None, None]:
        try:
            for batch in self._timing.timed(batches):
                if self._token is token:
                    self._consumed += 1
                yield batch
        except Exception as exc:
            self._drop_workers(exc)
            raise
        if self._token is token:
            self._epoch, self._consumed, self._running, self._token = self._epoch + 1, 0, False, None
            self._unread = None

    def _drop_workers(self, exc: BaseException) -> None:
        # The error's traceback holds torch's frames, which hold this pass's
        # DataLoader iterator, in a reference cycle that only a GC pass frees. If
        # that pass first runs in a process forked later (the next loader's
        # workers), the iterator's __del__ there asks a process that is not the
        # workers' parent whether they live: "AssertionError: can only test a
        # child process", once per child. Stop the workers here, in their parent;
        # a stopped iterator's __del__ does nothing.
        for frame, _ in traceback.walk_tb(exc.__traceback__):
            for workers in frame.f_locals.values():
                if hasattr(workers, "_shutdown_workers") and hasattr(workers, "_workers"):
                    workers._shutdown_workers()
        self._stop_persistent_workers()  # the next pass starts fresh ones

    def _stop_persistent_workers(self) -> None:
        if isinstance(self.dataloader, ThreadedBatches):
            self.dataloader.close()
            return
        workers = getattr(self.dataloader, "_iterator", None)
        if workers is not None and hasattr(workers, "_shutdown_workers"):
            workers._shutdown_workers()
            self.dataloader._iterator = None

    def _pass(self) -> Pass:
        return Pass(self.order.world_size, self.order.interleave, self.order.remainder, self.batch_size,
                    bool(self.dataloader.drop_last))

    def _state(self, epoch: int, unread: Unread) -> LoaderState:
        s, total = self.order, self.order.length
        return LoaderState(
            epoch=epoch, read=total - len(unread), unread=unread.text(), seed=s.seed, dataset_length=total,
            dataset_digest=dataset_digest(self.dataset), kind="map-style" if s.interleave else "stream",
            shuffle_buffer=s.window, train=s.train, seeding=self.seeding,
        )

    def state_dict(self) -> dict[str, Any]:
        """Where the whole job is: the epoch, the positions of its reading
        sequence that no rank has read (``unread``), and the settings that fix
        the sequence (seed, dataset, train...). Plain ints, bools and strings.

        It assumes every rank has taken as many batches of this pass as this
        one (a rank with fewer batches in all, in evaluation, counts them
        all): save after the same step on every rank, or after the loop.
        Saved after the loop ends it points at the start of the next epoch.
        Exact augmentation across a resume needs ``seeding="sample"`` (the default).
        """
        total = self.order.length
        start = self._unread if self._unread is not None else Unread.whole(total)
        left = unread_after(start, self._pass(), self._consumed, total)
        if len(left) == 0:  # every rank's pass is over
            return self._state(self._epoch + 1, Unread.whole(total)).to_dict()
        return self._state(self._epoch, left).to_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue where ``state`` was taken, on this job's ranks: the next
        pass yields this rank's part of the positions the saved job had not
        read (each read once across the ranks, with the same augmentation);
        later epochs are this job's from their start. World size, batch size
        and workers may differ from the saving job's.

        Raises:
            ConfigError: a malformed state, or one of another dataset (length,
                shards), seed (training only: an eval pass reads in order
                whatever the seed), kind (stream or map-style), shuffle_buffer,
                train or seeding; the message names the field.
        """
        saved = LoaderState.from_dict(state)
        total = self.order.length
        saved.check_compatible(self._state(0, Unread.whole(total)))
        unread = Unread.parse(saved.unread, total)
        if saved.read != total - len(unread):
            raise ConfigError(f"loader state says read={saved.read} but its unread spans leave "
                              f"{total - len(unread)} of {total} read; pass the dict Loader.state_dict() returned")
        self._stop_persistent_workers()  # a stream's workers take the unread positions when they start
        self.set_epoch(saved.epoch)
        self._unread = unread if len(unread) < total else None

    def stats(self, since: LoaderStats | None = None) -> LoaderStats:
        """Where the time went: the training loop's wait for each batch and the
        workers' seconds per stage (reading, decoding, collating...), totalled
        since the first pass began, or over the window since ``since`` (an
        earlier ``stats()``). Plain numbers; see :class:`LoaderStats`. The
        stages are also ``fastdata.*`` ranges in ``torch.profiler`` traces.
        """
        now = self._timing.snapshot()
        return now if since is None else now.since(since)

    def close(self) -> None:
        """End the current pass, release the prefetcher's stream and stop persistent workers.

        The position stays (``state_dict()`` still says where the pass
        stopped); iterating again starts the next epoch, as after any
        abandoned pass.
        """
        if self._active is not None:
            self._active.close()
            self._active = None
        if self.prefetcher is not None:
            self.prefetcher.close()
        self._stop_persistent_workers()

    def __repr__(self) -> str:
        return (
            f"Loader({type(self.dataset).__name__}, batch_size={self.batch_size}, batches={len(self)}, "
            f"rank={self.rank}/{self.world_size}, workers={self.workers or '?'}"
            + (f", decode={self.prefetcher!r}" if self.prefetcher is not None and self.prefetcher.decodes else "") + ")"
        )

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
