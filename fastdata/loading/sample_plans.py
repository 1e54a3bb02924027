"""The read-and-plan half of a sample, made once for every executor that runs plans.

Per sample key: read the stored bytes (``dataset.encoded``), read the header,
and let the transform draw its plan (``dataset.planner()``) under the
sample's random stream, then run the label transform under the same stream.
These are the draws ``dataset[key]`` makes, in the same order, so a plan
executed by the loader threads' batch call (:mod:`.batched`) or on the GPU
(:mod:`fastdata.gpu`) gives the crop and flip of the per-sample path.

A sample that cannot be planned here comes back as None, and the executor
builds it with ``dataset[key]`` under the same key (same draws): an image
the transform must see whole (a centre crop that needs padding), a key
without a sample stream, and a damaged record or header, which then meets
the dataset's ``on_error`` policy and its messages exactly as on the
per-sample path.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any

from torch.utils.data import Subset

from ..datasets.policy import DATA_ERRORS
from ..decode.info import ImageInfo, read_info
from ..decode.plan import CropPlan
from ..order.generators import SampleKey, use
from ..order.seeds import SampleStreams
from .keyed import KeyedDataset

__all__ = ["PlannedSample", "SamplePlans"]

_local = threading.local()


def _thread_streams() -> SampleStreams:
    """This thread's reusable sample generator (a thread plans one sample at a time)."""
    streams = getattr(_local, "streams", None)
    if streams is None:
        streams = _local.streams = SampleStreams()
    return streams


@dataclass(slots=True)
class PlannedSample:
    """One sample, read and planned, not decoded."""

    data: bytes
    info: ImageInfo
    plan: CropPlan
    target: Any
    name: str


class SamplePlans:
    """Plans the samples of a :class:`KeyedDataset` (see the module docstring).

    :meth:`of` returns None for a dataset whose samples are not planned crops
    (``dataset.planner()`` is None or missing) or for per-worker seeding.
    """

    def __init__(self, keyed: KeyedDataset, dataset: Any, indices: list[Any]) -> None:
        self.keyed, self.dataset, self._indices = keyed, dataset, indices

    @classmethod
    def of(cls, keyed: Any) -> SamplePlans | None:
        if not isinstance(keyed, KeyedDataset) or keyed.scope.seeding != "sample":
            return None
        dataset, indices = keyed.dataset, []
        while isinstance(dataset, Subset):  # torch's Subset maps indices and keeps the dataset's transform
            indices.append(dataset.indices)
            dataset = dataset.dataset
        planner = getattr(dataset, "planner", None)
        if not callable(planner) or planner() is None:
            return None
        return cls(keyed, dataset, indices)

    @property
    def transform(self) -> Any:
        return self.dataset.transform

    def planner(self) -> Any:
        """The planner in force now (None if the dataset's transform was changed to one without)."""
        return self.dataset.planner()

    def _plan(self, planner: Any, index: int) -> PlannedSample | None:
        for indices in self._indices:
            index = indices[index]
        ds = self.dataset
        if not 0 <= index < len(ds):
            return None  # dataset[key] raises the IndexError with its message
        data, target, name = ds.encoded(index)
        info = read_info(data, name=name)
        plan = planner(info.height, info.width, info.orientation, None)
        if plan is None:
            return None
        if ds.target_transform is not None:
            target = ds.target_transform(target)
        return PlannedSample(data, info, plan, target, name)

    def plans(self, keys: list[Any]) -> list[PlannedSample | None]:
        """The planned sample of each key, None where ``dataset[key]`` is to build it."""
        planner, scope = self.planner(), self.keyed.scope
        out: list[PlannedSample | None] = []
        if planner is None:
            return [None] * len(keys)
        # A label transform runs under the sample's stream too and might keep the
        # generator: then a new one per sample, as dataset[key] makes.
        streams = _thread_streams() if self.dataset.target_transform is None else None
        for key in keys:
            if isinstance(key, SampleKey):
                scope.enter_epoch(key)  # a worker process's first key of an epoch reseeds its streams
        with use(streams.generator) if streams is not None else contextlib.nullcontext():
            for key in keys:
                if not isinstance(key, SampleKey):
                    out.append(None)
                    continue
                try:
                    if streams is not None:
                        out.append(self._plan(planner, scope.sample_stream(key, streams)))
                    else:
                        with scope(key) as index:
                            out.append(self._plan(planner, index))
                except DATA_ERRORS:  # dataset[key] meets it again and reports or skips it as on_error says
                    out.append(None)
        return out
