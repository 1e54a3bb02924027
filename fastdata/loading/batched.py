"""Whole batches through the compiled decoder's batch call (loader threads).

With ``Workers(kind="threads")`` a batch is normally
``collate_fn([dataset[key] for key in keys])``. When that would run
fastdata's own pieces only -- a fastdata map-style shard dataset, a
decode-aware crop transform (:func:`fastdata.transforms.batch.batch_planner`),
per-sample seeding and :class:`FastCollate` -- :class:`BatchBuilder` gives
the same batch bit for bit with less work while holding the GIL: per sample
it reads the record and makes the transform's draws under the sample's key,
then one C call decodes every sample into its slot with the GIL released
(:func:`fastdata.decode.batch.decode_batch`). Profiled on 2 threads
(py-spy --gil), the per-sample path held the GIL for the sample's generator
(a quarter of it), the record read, header, box and plan, and for the
transform, dataset and collate wrappers around them; the batch path keeps
the planning only, and writes NCHW slots with a SIMD copy instead of
NumPy's byte-by-byte transpose.

A sample this path does not finish -- a damaged record, a file the compiled
decoder declines or fails on, anything raising while planning -- is built
again by ``dataset[key]`` under the same key (same draws), so the dataset's
``on_error`` policy, its messages and the pure-Python fallback apply to it
exactly as on the per-sample path.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import torch

from ..datasets.base import MapDataset, ShardDataset
from ..datasets.imaging import normalize_label
from ..decode.batch import batch_available, batch_request, decode_batch
from ..decode.info import read_info
from ..decode.native import wants_native
from ..order.generators import SampleKey, use
from ..order.seeds import SampleStreams
from ..transforms.batch import batch_planner
from .collate import FastCollate, _copy, _empty_batch, _source, collate_targets
from .keyed import KeyedDataset

__all__ = ["BatchBuilder"]

_local = threading.local()


def _thread_streams() -> SampleStreams:
    """This thread's reusable sample generator (a loader thread plans one batch at a time)."""
    streams = getattr(_local, "streams", None)
    if streams is None:
        streams = _local.streams = SampleStreams()
    return streams


class BatchBuilder:
    """Builds the batch of a list of sample keys (see the module docstring).

    :meth:`of` returns None for a set-up it does not cover; the caller then
    keeps the per-sample path.
    """

    def __init__(self, keyed: KeyedDataset, dataset: ShardDataset, planner: Any, collate: FastCollate) -> None:
        self.keyed, self.dataset, self.planner, self.collate = keyed, dataset, planner, collate
        self.transform = dataset.transform

    @classmethod
    def of(cls, dataset: Any, collate_fn: Any) -> BatchBuilder | None:
        if not batch_available() or type(collate_fn) is not FastCollate:
            return None
        if not isinstance(dataset, KeyedDataset) or dataset.scope.seeding != "sample":
            return None
        inner = dataset.dataset
        kind = type(inner)
        # A subclass that loads or wraps samples its own way keeps its own path.
        if not isinstance(inner, ShardDataset) or kind._item is not ShardDataset._item:
            return None
        if kind.__getitem__ is not MapDataset.__getitem__ or not inner.decode:
            return None
        planner = batch_planner(inner.transform)
        if planner is None or not wants_native(getattr(inner.transform, "backend", "auto")):
            return None
        return cls(dataset, inner, planner, collate_fn)

    def _plan(self, index: int) -> tuple[bytes, Any, Any] | None:
        """``(data, request, target)`` of sample ``index`` under the stream in
        force, or None for the per-sample path."""
        ds = self.dataset
        if not 0 <= index < len(ds):
            return None
        shard, local = ds.shards.locate(index)
        data, label = ds.shards.read(shard, local)
        info = read_info(data)  # what Source(EncodedImage(data)) reads; the compiled path was checked in of()
        planned = self.planner(info.height, info.width)
        if planned is None:
            return None
        request = batch_request(data, info, planned.box, min_size=planned.min_size, snap=planned.snap, flip=planned.flip)
        if request is None:
            return None
        target = normalize_label(label)
        if ds.target_transform is not None:
            target = ds.target_transform(target)
        return data, (planned.size, request), target

    def _plans(self, keys: list[Any]) -> list[Any]:
        """The plan of each key, None where the per-sample path is to build it."""
        scope, plans = self.keyed.scope, []
        # A label transform runs under the sample's stream too and might keep the
        # generator: then a new one per sample, as dataset[key] makes.
        streams = _thread_streams() if self.dataset.target_transform is None else None
        with use(streams.generator) if streams is not None else contextlib.nullcontext():
            for key in keys:
                if not isinstance(key, SampleKey):
                    plans.append(None)
                    continue
                try:
                    if streams is not None:
                        plans.append(self._plan(scope.sample_stream(key, streams)))
                    else:
                        with scope(key) as index:
                            plans.append(self._plan(index))
                except Exception:  # the per-sample path redoes it and reports or skips it as the dataset says
                    plans.append(None)
        return plans

    def __call__(self, keys: list[Any]) -> Any:
        ds = self.dataset
        if ds.transform is not self.transform or not ds.decode:  # changed since the loader was made
            return self.collate([self.keyed[key] for key in keys])
        plans = self._plans(keys)
        sizes = {p[1][0] for p in plans if p is not None}
        if len(sizes) != 1:
            return self.collate([self.keyed[key] for key in keys])
        (h, w), = sizes
        out = _empty_batch((len(keys), 3, h, w), self.collate.memory_format, self.collate.pin_memory)
        hwc = out.permute(0, 2, 3, 1).numpy()
        items = [(slot, p[0], p[1][1]) for slot, p in enumerate(plans) if p is not None]
        redo = [slot for slot, p in enumerate(plans) if p is None]
        redo += [items[position][0] for position, _, _ in decode_batch(hwc, items)]
        targets = [p[2] if p is not None else None for p in plans]
        for slot in sorted(redo):
            image, targets[slot] = self.keyed[keys[slot]]
            src = _source(image, slot)
            if src.shape != (3, h, w):
                return self.collate([self.keyed[key] for key in keys])  # its error names the sizes
            _copy(out, hwc, slot, src, self.collate.memory_format == torch.channels_last)
        return out, collate_targets(targets)

