"""Several shards of one format seen as one indexable sequence of samples.

Holds paths, reader options and a cumulative record-count array only, so it
pickles small; each process opens its own readers on first use (pid check),
which keeps it safe across ``fork`` and ``spawn``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import FastDataError, FormatError
from ..formats import checksums, registry
from ..formats.manifest import source_at
from ..remote import hooks as remote_hooks


@dataclasses.dataclass(frozen=True)
class ShardChecks:
    """What a converted shard's manifest says to check when it is opened.

    Attributes:
        files: ``(path, digest)`` of its small files (its index, its checksum file).
        sidecar: its per-record checksum file, or None.
    """

    files: tuple[tuple[str, str], ...] = ()
    sidecar: str | None = None


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
        checks: per shard, its :class:`ShardChecks` from a manifest.
            Without a manifest (None), a ``<shard>.crc`` found beside a shard
            (``fastdata index --checksums``) is used.
        num_classes: the manifest's class count: an int label outside
            ``0..num_classes - 1`` is a FormatError on read.

    Every record read is checked against its shard's checksum file when
    there is one (a CRC32C per record, ~5 us per 100 kB).
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
        checks: Sequence[ShardChecks] | None = None,
        num_classes: int | None = None,
    ) -> None:
        self.format = format_name
        self.checks = list(checks) if checks is not None else None
        self.num_classes = num_classes
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

    def identity(self) -> list[list[Any]]:
        """What names this set of shards for a resume: each shard's file name,
        its record count and the digests of its checked files (JSON-ready)."""
        return [
            [os.path.basename(p) for p in self.paths],
            [int(c) for c in self.counts],
            [[digest for _, digest in c.files] for c in self.checks or ()],
        ]

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
            with remote_hooks.opening(self.paths[shard]) as local:  # a cached shard stays until it is open
                self._check_small_files(shard)  # before the reader trusts its index
                reader = registry.get(self.format).open_shard(local, **self.options)
                expected = getattr(self, "counts", None)
                if expected is not None and len(reader) != int(expected[shard]):
                    raise FormatError(
                        f"holds {len(reader)} records but the manifest says {int(expected[shard])}",
                        path=self.paths[shard],
                        hint="the shard was changed or replaced after conversion; re-run the conversion",
                    )
                self._use_checksums(shard, reader)
            self._readers[shard] = reader
        return reader

    def _check_small_files(self, shard: int) -> None:
        """The shard's index and checksums match the manifest's digests (FormatError naming the file otherwise)."""
        for name, digest in self.checks[shard].files if self.checks is not None else ():
            local = remote_hooks.local_file(name)
            if not os.path.isfile(local) or not checksums.matches(local, digest):
                raise FormatError(
                    "is missing or does not match the digest the manifest records (damaged or replaced)",
                    path=name,
                    hint=remote_hooks.cached_copy_hint(name, "restore the dataset's files from a good copy or re-convert it"),
                )

    def _use_checksums(self, shard: int, reader: Any) -> None:
        """Hand the shard's record checksums to the reader."""
        path = self.paths[shard]
        if self.checks is not None:
            sidecar = self.checks[shard].sidecar
        else:
            beside = checksums.sidecar_path(path)
            sidecar = os.fspath(beside) if beside.is_file() else None
        use = getattr(reader, "use_checksums", None)
        if sidecar is None or not callable(use):
            return
        data_file = registry.get(self.format).data_file(path)
        crcs = checksums.load(
            remote_hooks.local_file(sidecar), records=len(reader), data_bytes=os.stat(data_file).st_size, data_file=path
        )
        use(crcs)

    def read(self, shard: int, local: int) -> tuple[bytes, Any]:
        """The stored ``(image_bytes, label)`` of record ``local`` of ``shard``.

        Raises:
            FormatError: a damaged record; the message names the shard and
                the record number as well as the reader's offset or key.
        """
        reader = self.reader(shard)  # an error opening it is about the whole shard, not record ``local``
        try:
            data, label = reader.sample(local)
            if self.num_classes is not None and type(label) is int and not 0 <= label < self.num_classes:
                raise FormatError(
                    f"record {local}: label {label} is not a class index (the manifest lists {self.num_classes} classes)",
                    path=self.paths[shard],
                    hint="the shard or its manifest.json changed after conversion: restore them or re-convert",
                )
            return data, label
        except FormatError as exc:
            if type(exc) is not FormatError:
                raise
            origin = self.source(shard, local)
            hint = remote_hooks.cached_copy_hint(self.paths[shard], exc.hint)
            if f"record {local}" in str(exc) and origin is None and hint == exc.hint:
                raise
            reason = exc.reason if f"record {local}" in str(exc) else f"record {local}: {exc.reason}"
            raise FormatError(
                reason + (f" (source file {origin})" if origin else ""),
                path=exc.path or self.paths[shard],
                offset=exc.offset,
                key=exc.key,
                hint=hint,
            ) from exc

    def source(self, shard: int, local: int) -> str | None:
        """The file record ``local`` of ``shard`` was converted from, when the
        converter listed it; None otherwise. Reads the list: for error messages."""
        if self.sources_file is None or not 0 <= local < int(self.counts[shard]):
            return None
        try:
            listing = remote_hooks.local_file(self.sources_file)  # a remote dataset's list comes when first needed
        except (FastDataError, OSError):  # only decoration: never hide the error it would describe
            return None
        return source_at(listing, int(self.starts[shard]) + local)

    def name(self, shard: int, local: int) -> str:
        """How errors and ``EncodedImage`` name a record: ``path record 12``."""
        key_of = getattr(self.reader(shard), "key", None)
        if callable(key_of):
            try:
                return f"{self.paths[shard]} record {local} (key {key_of(local)!r})"
            except Exception:  # noqa: BLE001 -- a key is only decoration for the message
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
