"""What every fastdata map-style dataset shares: indexing, seeding, the error policy.

``__getitem__`` takes an ``int`` or an :class:`fastdata.rng.SampleKey` and runs
the sample's transforms under that key's generator (:class:`fastdata.order.KeyScope`,
the one place a key is honoured); the subclass only says how to load one
sample (:meth:`MapDataset._item`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch.utils.data

from ..errors import DecodeError, FastDataError, FormatError
from ..formats import registry
from ..order.generators import SampleKey, sample_scope
from ..transforms.planner import Planner, planner_of
from .imaging import Transform, build_item, is_decode_aware, normalize_label
from .policy import DATA_ERRORS, SkipCounter, check_policy
from .shardset import ShardSet
from .stages import stage

MAX_CONSECUTIVE_SKIPS = 64


class SampleSettings:
    """How a stored record becomes a sample (``transform``,
    ``target_transform``, ``decode``) and what an unreadable one does
    (``on_error``): the settings every dataset and stream takes, set here
    once (not public API)."""

    def __init__(
        self,
        *,
        transform: Transform | None,
        target_transform: Transform | None,
        decode: bool,
        on_error: str,
    ) -> None:
        self.transform = transform
        self.target_transform = target_transform
        self.decode = bool(decode)
        self.on_error = check_policy(on_error)
        self._skips = SkipCounter(on_error)

    @property
    def skipped(self) -> int:
        """Samples replaced (map-style) or dropped (streams) under
        ``on_error="skip"/"warn"``, summed over this process and its DataLoader workers."""
        return self._skips.total


class MapDataset(SampleSettings, torch.utils.data.Dataset):
    """Base of the map-style datasets (not public API)."""

    def __len__(self) -> int:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _item(self, index: int) -> tuple[Any, Any]:  # pragma: no cover
        raise NotImplementedError

    def encoded(self, index: int) -> tuple[bytes, Any, str]:
        """The read half of sample ``index``: its stored bytes, its target
        (before ``target_transform``) and its name for messages. Nothing is
        decoded and no transform runs."""
        raise NotImplementedError(f"{type(self).__name__} does not hand out encoded samples")

    def planner(self) -> Planner | None:
        """How this dataset's samples are planned when a loader executes them
        itself (:mod:`fastdata.loading.sample_plans`): the transform's ``plan``
        when each sample is its stored bytes through that one crop, else None
        (then ``dataset[key]`` builds every sample). A subclass that builds
        samples another way than ``encoded`` + ``transform`` returns None."""
        if not self.decode or not is_decode_aware(self.transform):
            return None
        return planner_of(self.transform)

    def __getitem__(self, key: int | SampleKey) -> tuple[Any, Any]:
        """``(image, target)`` of sample ``key`` (an int or a SampleKey).

        Raises:
            IndexError: the index is out of range.
            FormatError, DecodeError: a corrupt sample under ``on_error="raise"``.
        """
        with sample_scope(key) as index:
            n = len(self)
            if index < 0:
                index += n
            if not 0 <= index < n:
                raise IndexError(f"index {key} out of range for a dataset of {n} samples")
            if self.on_error == "raise":
                return self._item(index)
            return self._item_or_next(index, n)

    def _item_or_next(self, index: int, n: int) -> tuple[Any, Any]:
        first = None  # one skip per sample replaced, however many corrupt ones were tried in its place
        for step in range(min(n, MAX_CONSECUTIVE_SKIPS)):
            j = (index + step) % n
            try:
                item = self._item(j)
            except DATA_ERRORS as exc:
                first = first or exc
                last = exc
                continue
            if first is not None:
                self._skips.record(first, f"returning sample {j} in place of sample {index}")
            return item
        raise FastDataError(
            f"{min(n, MAX_CONSECUTIVE_SKIPS)} consecutive samples from index {index} are unreadable "
            f"(last: {last}); the dataset looks broken rather than holding a few corrupt records"
        ) from last

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} samples, decode={self.decode}, on_error={self.on_error!r})"


def build_record(owner: Any, shard: int, local: int, data: bytes, label: Any) -> tuple[Any, Any]:
    """``(image, target)`` of the stored record ``local`` of ``owner.shards``'
    shard ``shard`` under ``owner``'s ``decode`` and transforms (a dataset or a stream).

    Raises:
        DecodeError: the image does not decode; the message names shard and
            record and, when the converter listed it (``sources.jsonl``), the
            file the record was converted from (as :meth:`ShardSet.read` does
            for a FormatError).
    """
    try:
        return build_item(
            data,
            normalize_label(label),
            owner.shards.name(shard, local),
            decode=owner.decode,
            transform=owner.transform,
            target_transform=owner.target_transform,
        )
    except DecodeError as exc:
        origin = owner.shards.source(shard, local)
        if origin is None:
            raise
        raise DecodeError(f"{exc} (source file {origin})") from exc


def stack_targets(labels: Sequence[Any]) -> np.ndarray:
    """One array of targets: int64 for class indices, float32 ``(N, K)`` for
    equal-length label vectors, an object array otherwise."""
    values = [normalize_label(v) for v in labels]
    if all(isinstance(v, int) for v in values):
        return np.asarray(values, dtype=np.int64)
    if all(isinstance(v, (int, float)) for v in values):
        return np.asarray(values, dtype=np.float64)
    try:
        return np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for v in values])
    except ValueError:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out


def load_targets(path: str, expected: int) -> np.ndarray:
    """A converter's targets file: a 1-D integer ``.npy`` of ``expected`` entries.

    Raises:
        FormatError: the file is missing, unreadable or of the wrong length.
    """
    try:
        targets = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise FormatError(f"cannot read the targets file ({exc})", path=path, hint="re-run the conversion") from exc
    if targets.ndim != 1 or targets.shape[0] != expected or targets.dtype.kind not in "iu":
        raise FormatError(
            f"holds {targets.dtype} {targets.shape} but the dataset has {expected} samples",
            path=path,
            hint="re-run the conversion",
        )
    return targets.astype(np.int64, copy=False)


class ShardLabels:
    """``classes``, ``class_to_idx`` and ``targets`` of a dataset over a
    :class:`ShardSet` (``self.shards``); a mixin for map-style and streams.

    ``targets`` is built on first access: from the converter's targets file
    when the manifest names one, else by reading every record's label once
    (for RecordIO and TFRecord that reads every record). The array is then
    kept and pickled with the dataset.
    """

    shards: ShardSet
    _classes: list[str] | None
    _targets: np.ndarray | None
    _names_tried = False

    @property
    def classes(self) -> list[str]:
        """Class names; ``classes[t]`` names target ``t``. Unless given or in
        the manifest, what the format finds in the shards (its ``class_names``
        hook: im2rec's ``.lst``, TFRecord's ``image/class/text``), tried once;
        else ``str(t)`` for ``t`` in ``0..max(targets)`` (one pass over labels)."""
        if self._classes is None and not self._names_tried:
            self._names_tried = True
            hook = registry.get(self.shards.format).class_names
            if hook is not None:
                self._classes = hook([self.shards.reader(k) for k in range(len(self.shards.paths))])
        if self._classes is None:
            targets = self.targets
            if targets.dtype.kind != "i":
                raise FastDataError(
                    f"{self.shards.paths[0]}: labels are not class indices ({targets.dtype}), so there are no classes"
                )
            self._classes = [str(t) for t in range(int(targets.max()) + 1 if len(targets) else 0)]
        return self._classes

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    @property
    def targets(self) -> np.ndarray:
        """Every sample's target, shape ``(N,)`` int64 (or ``(N, K)`` float32 vectors)."""
        if self._targets is None:
            if self.shards.targets_file is not None:
                self._targets = load_targets(self.shards.targets_file, len(self.shards))
            else:
                self._targets = stack_targets(list(self._labels()))
        return self._targets

    @targets.setter
    def targets(self, value: Any) -> None:
        self._targets = np.asarray(value)

    def _labels(self) -> Iterator[Any]:
        for shard in range(len(self.shards.paths)):
            reader = self.shards.reader(shard)
            label_of = getattr(reader, "label", None)
            for i in range(int(self.shards.counts[shard])):
                yield label_of(i) if callable(label_of) else reader.sample(i)[1]


class ShardDataset(ShardLabels, MapDataset):
    """A map-style dataset over a :class:`ShardSet` (``self.shards``, set by
    the constructor of :class:`fastdata.datasets.shards.ShardSource`)."""

    def __len__(self) -> int:
        return len(self.shards)

    def locate(self, index: int) -> tuple[str, int]:
        """``(shard path, record index in it)`` of global sample ``index``."""
        shard, local = self.shards.locate(index)
        return self.shards.paths[shard], local

    reports_stages = True  # Loader.stats: "read", then "decode+transform" (fastdata.datasets.stages)

    def _item(self, index: int) -> tuple[Any, Any]:
        with stage("read"):
            shard, local = self.shards.locate(index)
            data, label = self.shards.read(shard, local)
        with stage("decode+transform"):
            return build_record(self, shard, local, data, label)

    def encoded(self, index: int) -> tuple[bytes, Any, str]:
        shard, local = self.shards.locate(index)
        data, label = self.shards.read(shard, local)
        return data, normalize_label(label), self.shards.name(shard, local)
