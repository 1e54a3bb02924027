"""A throwaway fourth format, to show that a format is its folder plus one
registry line: ``npr`` shards hold the image files laid end to end with no
framing at all; ``<shard>.npy`` beside each holds ``(offset, length, label)``
rows. No signature (found by name), no framing, no index a scan could
rebuild, no DALI reader, int labels only.

Registered only by the tests that use it (see ``plugin.py``)."""

from __future__ import annotations

import dataclasses
import functools
import operator
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from fastdata.errors import ConfigError, FormatError
from fastdata.formats._atomic import commit, partial_path, remove, sha256_file
from fastdata.formats.hooks import NO_FRAMING, Detected, FileCheck, Inspected, ReaderOptions, json_label
from fastdata.formats.registry import FormatSpec
from fastdata.formats.sample import Sample, ShardInfo

NAME, SUFFIX = "npr", ".npr"


def index_of(shard: str | os.PathLike[str]) -> Path:
    return Path(os.fspath(shard) + ".npy")


def write_shard(path: str | os.PathLike[str], samples: Iterable[Sample]) -> ShardInfo:
    path, rows, pos = Path(path), [], 0
    data_part, index_part = partial_path(path), partial_path(index_of(path))
    try:
        with open(data_part, "wb") as f:
            for s in samples:
                try:
                    label = operator.index(s.label)
                except TypeError:
                    raise ConfigError(f"sample {s.id}: npr stores one int label, got {s.label!r}") from None
                f.write(s.image)
                rows.append((pos, len(s.image), label))
                pos += len(s.image)
        with open(index_part, "wb") as f:
            np.save(f, np.array(rows, np.int64).reshape(-1, 3))
        commit(index_part, index_of(path))
        commit(data_part, path)
    except BaseException:
        remove(data_part)
        remove(index_part)
        raise
    return ShardInfo(path.name, len(rows), path.stat().st_size, sha256_file(path), index_of(path).name)


class ShardReader:
    """``(image, label)`` by position; picklable (paths only), reopened per process."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.reader = self  # no raw layer below the samples
        self._rows: np.ndarray | None = None
        self._fd, self._pid = -1, -1

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])

    def _open(self) -> None:
        try:
            self._rows = np.load(index_of(self.path), allow_pickle=False)
            self._fd, self._pid = os.open(self.path, os.O_RDONLY), os.getpid()
        except (OSError, ValueError) as exc:
            raise FormatError(f"cannot open ({exc})", path=self.path) from exc

    def __len__(self) -> int:
        if self._pid != os.getpid():
            self._open()
        return len(self._rows)

    def __getitem__(self, i: int) -> tuple[bytes, int]:
        return self.sample(i)

    def sample(self, i: int) -> tuple[bytes, int]:
        if self._pid != os.getpid():
            self._open()
        offset, length, label = (int(v) for v in self._rows[i])
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise FormatError(f"record {i} runs past the end of the file (truncated)", path=self.path, offset=offset)
        return data, label

    def close(self) -> None:
        if self._pid == os.getpid():
            os.close(self._fd)
        self._pid = -1


def open_shard(path: str | os.PathLike[str]) -> ShardReader:
    return ShardReader(path)


@dataclasses.dataclass(frozen=True)
class NprOptions(ReaderOptions):
    """npr datasets take no options."""


def inspect(found: Detected, n: int) -> tuple[int, list[Inspected]]:
    reader = open_shard(found.path)
    shown = []
    for i in range(min(n, len(reader))):
        data, label = reader.sample(i)
        shown.append(Inspected({"position": i, "label": json_label(label), "bytes": len(data)}, data))
    return len(reader), shown


def verify(found: Detected) -> FileCheck:
    return FileCheck(records=functools.partial(open_shard, found.path))


FORMAT = FormatSpec(
    name=NAME,
    title="an npr file",
    recognised_by="an .npr name",
    suffixes=(SUFFIX,),
    data_name=None,
    write_shard=write_shard,
    open_shard=open_shard,
    options=NprOptions,
    sniff=None,
    claim=lambda path: None,
    framing=NO_FRAMING,
    label_vectors=False,
    dali=None,
    inspect=inspect,
    verify=verify,
    index=None,
)
