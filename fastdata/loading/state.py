"""A loader's position, as a plain dict that goes into a training checkpoint.

The state is global: it says which positions of the epoch's reading
sequence no rank has read yet (:mod:`fastdata.order.unread`), not where one
rank stands, so every rank saves the same dict and any rank of a job of
another size can load it (``torch.distributed.checkpoint`` keeps one copy).
Its values are ints, bools and strings, for ``torch.save``, JSON and DCP alike.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import ConfigError

__all__ = ["LoaderState", "dataset_digest"]

VERSION = 2

# field -> what to do when the loader it is loaded into differs; the most
# fundamental first, as the error explains the first difference only
_FIXES = {
    "kind": "open the dataset as it was saved: {saved}",
    "dataset_length": "load it into a loader over the dataset it was saved from",
    "dataset_digest": "load it into a loader over the dataset it was saved from; its shards differ",
    "train": "build the loader with train={saved}",
    "shuffle_buffer": "open the stream with shuffle_buffer={saved}",
    "seed": "build the loader with seed={saved}",
    "seeding": "build the loader with seeding={saved!r}",
}


@dataclass(frozen=True)
class LoaderState:
    """Where a job's loaders are: in ``epoch``, the reading positions in
    ``unread`` (``"start-stop,..."`` spans) are left, ``read`` are done; plus
    what fixes the sequence, which must match the loader it is loaded into.
    World size, batch size and workers are free to change."""

    epoch: int
    read: int
    unread: str
    seed: int
    dataset_length: int
    dataset_digest: str
    kind: str
    shuffle_buffer: int
    train: bool
    seeding: str
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> LoaderState:
        """Parse a :meth:`to_dict` result; ConfigError names missing or mistyped fields, or another version."""
        if not isinstance(state, Mapping):
            raise ConfigError(f"loader state must be a dict from Loader.state_dict(), got {type(state).__name__}")
        version = state.get("version")
        if version != VERSION:
            raise ConfigError(
                f"loader state has version {version!r}; this fastdata reads version {VERSION} "
                "(resume with the fastdata that saved it, or start the epoch over)"
            )
        missing = [f.name for f in fields(cls) if f.name not in state]
        if missing:
            raise ConfigError(f"loader state lacks {', '.join(missing)}; pass the dict Loader.state_dict() returned")
        for f in fields(cls):
            kind = {"str": str, "bool": bool}.get(str(f.type), int)
            value = state[f.name]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ConfigError(f"loader state's {f.name}={value!r} is not {kind.__name__}; "
                                  "pass the dict Loader.state_dict() returned")
        return cls(**{f.name: state[f.name] for f in fields(cls)})

    def check_compatible(self, current: LoaderState) -> None:
        """Raise ConfigError naming the settings that differ from ``current``'s
        (the rest of the epoch would not be the samples the saved job left).
        An eval state (``train=False`` in both) loads under another seed: its
        order does not depend on it."""
        diffs = [name for name in _FIXES if getattr(self, name) != getattr(current, name)]
        if not self.train and not current.train:
            # an eval pass reads every sample once, in order, whatever the seed: the rest of
            # the epoch is the same samples (only a random eval transform's draws would differ)
            diffs = [name for name in diffs if name != "seed"]
        if diffs:
            name, saved = diffs[0], getattr(self, diffs[0])
            also = f"; also differ: {', '.join(diffs[1:])}" if diffs[1:] else ""
            raise ConfigError(f"cannot resume: {name}: saved {saved!r}, this loader has {getattr(current, name)!r} "
                              f"({_FIXES[name].format(saved=saved)}){also}")


def dataset_digest(dataset: Any) -> str:
    """A sharded dataset's identity: crc32 of its shards' names, record
    counts and the index/checksum digests its manifest records; ``""`` for a
    dataset without shards (then only its length is compared)."""
    shards: Any = getattr(dataset, "shards", None)  # duck-typed: fastdata's ShardSet, or anything with identity()
    identity = getattr(shards, "identity", None)
    if not callable(identity):
        return ""
    return f"crc32:{zlib.crc32(json.dumps(identity()).encode()):08x}"
