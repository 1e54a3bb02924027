"""Streaming (iterable) datasets: shards read front to back, split across
distributed ranks and DataLoader workers so each record is read once per epoch.

The order is :mod:`fastdata.order.partition`'s, a pure function of
``(seed, epoch, rank, world_size)``: shards permuted, cut into rank ranges,
shuffled within windows of ``shuffle_buffer`` records; each sample's
transforms run under ``sample_generator(seed, epoch, index)``, so an
augmentation depends on the sample, not on which worker read it. Nothing
reseeds a global generator. ``make_loader`` reads a stream in its own order
through :meth:`ShardStream.read`.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch.utils.data

from ..errors import ConfigError
from ..order.generators import KeyScope, SampleKey, Seeding
from ..order.partition import Deal, Share
from ..order.ranks import Place, resolve_place
from ._shared import SharedSlots
from .base import SampleSettings, ShardLabels, build_record
from .imaging import Transform
from .policy import DATA_ERRORS
from .shards import ShardSource
from .sources import PathArg

DEFAULT_SHUFFLE_BUFFER = 512

Record = tuple[int, int, int, Any, Any]  # (global index, shard, local index, bytes, label)


class ShardStream(ShardLabels, SampleSettings, torch.utils.data.IterableDataset):
    """Base of the streaming datasets (not public API); see the module docstring.

    ``len(stream)`` is this rank's sample count per epoch (all its workers
    together). Call :meth:`set_epoch` before each epoch, as with
    ``DistributedSampler``; the value reaches persistent workers too.
    Under ``on_error="skip"/"warn"`` a corrupt sample is dropped (and counted
    in ``skipped``), so an epoch then yields fewer than ``len`` samples.
    ``shards`` and the order settings (``seed``, ``shuffle``,
    ``shuffle_buffer``, ``drop_last``, ``place``) are set by :class:`FormatStream`.
    """

    seed: int
    shuffle: bool
    shuffle_buffer: int
    drop_last: bool
    place: Place
    rank: int  # place.rank and place.world_size, read per sample
    world_size: int
    _epoch: SharedSlots  # the epoch, shared with persistent workers

    @property
    def epoch(self) -> int:
        return self._epoch[0]

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next iteration streams."""
        self._epoch[0] = int(epoch)

    @property
    def num_samples(self) -> int:
        """Samples in the whole dataset (all ranks)."""
        return len(self.shards)

    def __len__(self) -> int:
        return self.share(0).size(len(self.shards))

    def share(self, epoch: int) -> Share:
        """This rank's share of ``epoch`` in the stream's own order."""
        return Share(
            self.seed, epoch, self.rank, self.world_size, remainder="drop" if self.drop_last else "even",
            shuffle=self.shuffle, window=self.shuffle_buffer if self.shuffle else 0,
        )

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        info = torch.utils.data.get_worker_info()
        if info is None:
            self.place.check_unchanged("this stream")
        deal = Deal() if info is None else Deal(info.id, info.num_workers)
        return self.read(self.share(self.epoch), deal)

    def read(self, share: Share, deal: Deal, *, seeding: Seeding = "sample", reseed: bool = False) -> Iterator[Any]:
        """The samples ``deal`` takes of ``share`` (a rank's order for one
        epoch), each window's records read in file order and yielded in
        ``share``'s; transforms run under the sample's key (see
        :class:`fastdata.order.KeyScope` for ``seeding`` and ``reseed``)."""
        records, groups = share.reading(self.shards.counts)
        self.shards.read_ahead(records[deal.positions(len(records))])  # remote shards: fetch the next while one is read
        scope = KeyScope(seeding, rank=share.rank, reseed=reseed)
        # a per-sample generator costs ~50 us: only make one when a transform runs
        seeded = self.decode and (self.transform is not None or self.target_transform is not None)
        chunks = (records[positions] for positions in deal.chunks(len(records), share.window, groups))
        for index, shard, local, data, label in self._records(chunks):
            try:
                with scope(SampleKey(index, share.seed, share.epoch)) if seeded else nullcontext():
                    item = build_record(self, shard, local, data, label)
            except DATA_ERRORS as exc:
                if self.on_error == "raise":
                    raise
                self._skips.record(exc, "dropped from this epoch")
                continue
            yield item  # outside the key's scope: the consumer must not draw from this sample's generator

    def _records(self, chunks: Iterator[np.ndarray]) -> Iterator[Record]:
        """The records of each chunk of global indices, in chunk order, each
        chunk read in file order (sequential reads). The next chunk is read
        while this one is handed out, a record read per record handed out, so
        freed memory is reused at once: handing out a whole window before
        reading the next let the allocator return it to the OS and fault it
        in again, which doubled the cost of a read."""
        ready: list[Record | None] = []
        for chunk in chunks:
            shard = np.searchsorted(self.shards.ends, chunk, side="right")
            places = list(zip(chunk.tolist(), shard.tolist(), (chunk - self.shards.starts[shard]).tolist()))
            if not ready and bool((np.diff(chunk) > 0).all()):  # already in file order: hold nothing
                for place in places:
                    record = self._record(*place)
                    if record is not None:
                        yield record
                continue
            got: list[Record | None] = [None] * len(chunk)
            for step, j in enumerate(np.argsort(chunk, kind="stable").tolist()):
                got[j] = self._record(*places[j])
                if step < len(ready):
                    record, ready[step] = ready[step], None
                    if record is not None:
                        yield record
            yield from (record for record in ready[len(chunk):] if record is not None)
            ready = got
        yield from (record for record in ready if record is not None)

    def _record(self, index: int, shard: int, local: int) -> Record | None:
        """Record ``local`` of ``shard`` (global ``index``), or None when ``on_error`` drops it."""
        try:
            data, label = self.shards.read(shard, local)
        except DATA_ERRORS as exc:
            if self.on_error == "raise":
                raise
            self._skips.record(exc, "dropped from this epoch")
            return None
        return index, shard, local, data, label

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.num_samples} samples in {len(self.shards.paths)} shards, "
            f"rank {self.rank}/{self.world_size}, epoch {self.epoch})"
        )


class FormatStream(ShardSource, ShardStream):
    """Shards of any registered format streamed in order (see :class:`ShardStream`).

    Args:
        path, transform, target_transform: as for
            :class:`~fastdata.datasets.shards.FormatDataset`.
        seed: the same on every rank; fixes shard order, buffer shuffle and
            per-sample augmentation streams. Default 0.
        shuffle: False streams shards in order with no buffer (evaluation).
        shuffle_buffer: samples held (as encoded bytes) for shuffling; memory
            is about ``shuffle_buffer`` x the mean record size per worker.
        rank, world_size: this process's place; default from torch.distributed.
        drop_last: give every rank ``N // world_size`` samples.
        **source_keywords: ``format``, ``classes``, ``decode``, ``on_error``
            and the format's own options, as for ``FormatDataset`` (the
            class's signature lists them).
    """

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        seed: int = 0,
        shuffle: bool = True,
        shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
        **source_keywords: Any,
    ) -> None:
        if shuffle_buffer < 0:
            raise ConfigError(f"shuffle_buffer must be >= 0, got {shuffle_buffer}")
        super().__init__(path, transform, target_transform, **source_keywords)
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.shuffle_buffer = int(shuffle_buffer)
        self.drop_last = bool(drop_last)
        self.place = resolve_place(rank, world_size, train=self.shuffle)
        self.rank, self.world_size = self.place.rank, self.place.world_size
        self._epoch = SharedSlots(1)


def _spelled_out(init: Any) -> inspect.Signature:
    """``init``'s signature with ``**source_keywords`` replaced by
    :class:`ShardSource`'s keywords, so ``help()`` and ``inspect.signature``
    show every keyword the stream takes while the source lists them once."""
    own = list(inspect.signature(init).parameters.values())[:-1]
    shared = [p for p in inspect.signature(ShardSource.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
    var = [p for p in inspect.signature(ShardSource.__init__).parameters.values() if p.kind is p.VAR_KEYWORD]
    positional = [p for p in own if p.kind is not p.KEYWORD_ONLY]
    return inspect.Signature(positional + shared + [p for p in own if p.kind is p.KEYWORD_ONLY] + var)


# On __init__, not the class: a subclass that writes its own __init__ (the
# per-format streams of fastdata.datasets.named) is then signed by it.
FormatStream.__init__.__signature__ = _spelled_out(FormatStream.__init__)  # type: ignore[attr-defined]  # inspect reads it
