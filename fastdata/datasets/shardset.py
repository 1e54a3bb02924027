"""Several shards of one format seen as one indexable sequence of samples.

Holds paths, reader options and a cumulative record-count array only, so it
pickles small; each process opens its own readers on first use (pid check),
which keeps it safe across ``fork`` and ``spawn``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import FormatError
from ..formats import registry
from ..formats.manifest import source_at
from ..remote import hooks as remote_hooks


class ShardSet:
    """Shards ``paths`` of format ``format_name`` opened with ``options``.

    Args:
        format_name: registry name (``"recordio"``, ``"tfrecord"``, ``"lmdb"``).
        paths: shard paths in sample order.
        options: keyword arguments for the format's ``open_shard``.
        counts: records per shard when known (from a manifest); otherwise
            each shard is opened once here to count it.
        targets_file: a ``.npy`` of every sample's target, when the
            converter wrote one (see ``shards.TARGETS_EXTRA``).
        sources_file: the converter's list of each sample's source file
            (``manifest.extra["sources"]``); errors about a damaged record name it.
    """

    def __init__(
        self,
        format_name: str,
        paths: Sequence[str | os.PathLike[str]],
        options: dict[str, Any] | None = None,
        counts: Sequence[int] | None = None,
        *,
        targets_file: str | None = None,
        sources_file: str | None = None,
    ) -> None:
        self.format = format_name
        self.targets_file = targets_file
        self.sources_file = sources_file
        self.paths = [os.fspath(p) for p in paths]
        self.options = dict(options or {})
        self._readers: list[Any] | None = None
        self._pid: int | None = None
        if counts is None:
            counts = [len(self.reader(k)) for k in range(len(self.paths))]
            self.close()  # a parent must not hand open handles to forked workers
        self.counts = np.asarray(counts, dtype=np.int64)
        self.ends = np.cumsum(self.counts)
        self.starts = self.ends - self.counts

    def __len__(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_readers"] = None
        state["_pid"] = None
        return state

    def locate(self, index: int) -> tuple[int, int]:
        """Global index (0 <= index < len) -> (shard number, index inside it)."""
        shard = int(np.searchsorted(self.ends, index, side="right"))
        return shard, index - int(self.starts[shard])

    def reader(self, shard: int) -> Any:
        """This process's reader of shard ``shard``, opened on first use."""
        pid = os.getpid()
        if self._pid != pid or self._readers is None:
            self._readers = [None] * len(self.paths)
            self._pid = pid
        reader = self._readers[shard]
        if reader is None:
            reader = registry.get(self.format).open_shard(remote_hooks.local_file(self.paths[shard]), **self.options)
            self._readers[shard] = reader
            expected = getattr(self, "counts", None)
            if expected is not None and len(reader) != int(expected[shard]):
                raise FormatError(
                    f"holds {len(reader)} records but the manifest says {int(expected[shard])}",
                    path=self.paths[shard],
                    hint="the shard was changed or replaced after conversion; re-run the conversion",
                )
        return reader

    def read(self, shard: int, local: int) -> tuple[bytes, Any]:
        """The stored ``(image_bytes, label)`` of record ``local`` of ``shard``.

        Raises:
            FormatError: a damaged record; the message names the shard and
                the record number as well as the reader's offset or key.
        """
        try:
            return self.reader(shard).sample(local)
        except FormatError as exc:
            if type(exc) is not FormatError:
                raise
            origin = self.source(shard, local)
            if f"record {local}" in str(exc) and origin is None:
                raise
            reason = exc.reason if f"record {local}" in str(exc) else f"record {local}: {exc.reason}"
            raise FormatError(
                reason + (f" (source file {origin})" if origin else ""),
                path=exc.path or self.paths[shard],
                offset=exc.offset,
                key=exc.key,
                hint=exc.hint,
            ) from exc

    def source(self, shard: int, local: int) -> str | None:
        """The file record ``local`` of ``shard`` was converted from, when the
        converter listed it; None otherwise. Reads the list: for error messages."""
        if self.sources_file is None or not 0 <= local < int(self.counts[shard]):
            return None
        return source_at(self.sources_file, int(self.starts[shard]) + local)

    def name(self, shard: int, local: int) -> str:
        """How errors and ``EncodedImage`` name a record: ``path record 12``."""
        key_of = getattr(self.reader(shard), "key", None)
        if callable(key_of):
            try:
                return f"{self.paths[shard]} record {local} (key {key_of(local)!r})"
            except Exception:  # a key is only decoration for the message
                pass
        return f"{self.paths[shard]} record {local}"

    def read_ahead(self, indices: np.ndarray) -> None:
        """The global indices this process reads next, in order: shards of a
        remote dataset are fetched one ahead (no-op for local files)."""
        shards = np.searchsorted(self.ends, indices, side="right")
        remote_hooks.read_ahead([self.paths[k] for k in dict.fromkeys(shards.tolist())])

    def close(self) -> None:
        """Close this process's readers (they reopen on next use)."""
        for reader in self._readers or []:
            close = getattr(reader, "close", None)
            if callable(close):
                close()
        self._readers = None
        self._pid = None
