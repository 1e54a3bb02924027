"""The table from a format name to its implementation: the only door to a format.

Adding a format is a folder under ``fastdata/formats/`` whose package defines
``FORMAT = FormatSpec(...)`` plus one line in ``_TABLE`` (in :mod:`.table`,
the registry's lowest piece, which :mod:`.manifest` also reads). Everything else
(datasets, streams, ``open_dataset``, the converters' ``inspect`` / ``verify``
/ ``index``, DALI, the bench, the conformance tests) asks this module and
never imports a format package.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ManifestError
from . import table
from .hooks import DALIReader, Detected, FileCheck, Framing, IndexHook, Inspected, Problem, ReaderOptions
from .manifest import MANIFEST_NAME, Manifest
from .sample import Sample, SampleReader, ShardInfo
from .table import _TABLE, names, public_names  # noqa: F401 -- public_names: re-exported, the registry answers it

_HEAD = 64  # bytes read for sniffing


@dataclasses.dataclass(frozen=True, kw_only=True)
class FormatSpec:
    """Everything fastdata knows about one on-disk format.

    Every field without a default must be declared, so a format cannot leave
    out what a tool or a conformance test needs (``None`` / ``NO_FRAMING``
    are explicit answers).

    Attributes:
        name: registry name.
        title: what a file of the format is called in messages ("a RecordIO file").
        recognised_by: how :func:`detect` recognises it, for messages.
        suffixes: shard names of the format; the first is what ``write_shard``
            writes, the others are also taken as this format by :func:`detect`.
        data_name: for a format whose shard is a directory, the file in it
            that holds the records (LMDB: ``data.mdb``); None for file shards.
        write_shard: ``write_shard(path, samples) -> ShardInfo`` writes one
            complete shard atomically (under a partial name, renamed at the
            end); ``ShardInfo.file`` is the basename of ``path``.
        open_shard: ``open_shard(path, **options) -> SampleReader``; a shard
            with an index finds it where ``write_shard`` put it.
        options: the :class:`ReaderOptions` dataclass of the keywords the
            format's datasets take; its ``open_options`` reads the manifest.
        sniff: ``sniff(head)``: the first bytes of a file are this format's;
            None for a format without a signature (found by name only).
        claim: ``claim(path)``: a :class:`Detected` for what the format
            recognises by layout or name beyond its suffixes (an LMDB
            directory, the ``.rec`` behind an ``.idx``, a compressed file), or None.
        framing: the byte ranges of the first record that are framing or
            checksum (``NO_FRAMING``: none of its own).
        label_vectors: whether the format stores float / multi-value labels.
        dali: how DALI reads a converted directory, or None (no DALI reader).
        inspect: ``inspect(found, n) -> (records, first n as Inspected)`` for
            ``fastdata inspect`` of a single shard.
        verify: ``verify(found) -> FileCheck`` for ``fastdata verify`` of a
            single shard.
        index: the format's index files, or None when it has none.
        label_base: label stored for class 0 by ``write_shard``.
        finalize: optional ``finalize(directory, manifest) -> dict`` run after
            all shards exist, before the manifest is written; it may write
            extra files (e.g. a DALI index) and returns entries for ``manifest.extra``.
        check_finalized: optional ``check_finalized(directory, manifest)`` ->
            problems with what ``finalize`` wrote (``fastdata verify``).
        class_names: optional ``class_names(readers)``: class names of
            foreign shards (this process's readers), or None when they have none.
        record_checksums: optional ``record_checksums(found) -> (crcs, data
            bytes)``: the CRC32C of each record of a shard another tool wrote,
            in its reader's order (:mod:`.checksums`), for ``fastdata index
            --checksums``; None where records carry their own (TFRecord).
        join: optional ``join(path, pieces) -> ShardInfo``: the shard ``path``
            from pieces that ``write_shard`` wrote apart (each ``(its data
            path, its ShardInfo)``, in order, none empty), byte for byte what
            one ``write_shard`` over all their samples writes. A converter
            cuts a shard into pieces only for formats that have it (records
            that do not depend on their position); None: LMDB's B-tree.
    """

    name: str
    title: str
    recognised_by: str
    suffixes: tuple[str, ...]
    data_name: str | None
    write_shard: Callable[[str | os.PathLike[str], Iterable[Sample]], ShardInfo]
    open_shard: Callable[..., SampleReader]
    options: type[ReaderOptions]
    sniff: Callable[[bytes], bool] | None
    claim: Callable[[Path], Detected | None]
    framing: Framing
    label_vectors: bool
    dali: DALIReader | None
    inspect: Callable[[Detected, int], tuple[int, list[Inspected]]]
    verify: Callable[[Detected], FileCheck]
    index: IndexHook | None
    label_base: int = 0
    finalize: Callable[[str | os.PathLike[str], Any], dict[str, Any]] | None = None
    check_finalized: Callable[[Path, Manifest], list[Problem]] | None = None
    class_names: Callable[[list[Any]], list[str] | None] | None = None  # takes the readers its open_shard made
    record_checksums: Callable[[Detected], tuple[list[int], int]] | None = None
    join: Callable[[str | os.PathLike[str], list[tuple[Path, ShardInfo]]], ShardInfo] | None = None

    @property
    def suffix(self) -> str:
        """The suffix ``write_shard`` gives a shard."""
        return self.suffixes[0]

    def data_file(self, shard: str | os.PathLike[str]) -> Path:
        """The file holding a shard's records (whose size and sha256 a manifest records)."""
        return Path(shard) / self.data_name if self.data_name else Path(shard)

    def reader_options(self, **options: Any) -> ReaderOptions:
        """The format's options from dataset keywords; ConfigError names the ones it takes."""
        try:
            return self.options(**options)
        except TypeError:
            known = [f.name for f in dataclasses.fields(self.options)]
            raise ConfigError(
                f"{self.name} datasets take no option {', '.join(sorted(set(options) - set(known)))}; "
                f"its options are: {', '.join(known) or 'none'}"
            ) from None

    def shard_options(self, manifest: Manifest) -> dict[str, Any]:
        """``open_shard`` keywords for the shards of a converted directory (each
        finds its index, the one the manifest lists, beside it)."""
        return self.options().open_options(manifest)


def get(name: str) -> FormatSpec:
    """Return the :class:`FormatSpec` registered under ``name``.

    Raises:
        ConfigError: no such format (the message lists the known ones).
    """
    found: FormatSpec = table.spec(name)
    return found


def detect(path: str | os.PathLike[str]) -> Detected:
    """What is at ``path``: a converted dataset directory or one shard of a registered format.

    In this order: a directory with ``manifest.json`` (the manifest names the
    format); a file whose first bytes one format recognises (``sniff``); what
    a format recognises by layout or name (``claim``: an LMDB directory, the
    ``.rec`` of an ``.idx``, a compressed TFRecord); a file with one of a
    format's suffixes.

    Raises:
        ConfigError: the path does not exist or no format recognises it (the
            message says what each format looks for).
        ManifestError: a ``manifest.json`` that cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_dir() and (path / MANIFEST_NAME).is_file():
        manifest = Manifest.read(path)
        if manifest.format not in _TABLE:
            raise ManifestError(
                f"{path / MANIFEST_NAME}: unknown format {manifest.format!r} (this fastdata reads "
                f"{', '.join(names())}); the manifest is damaged, or was written by a newer fastdata"
            )
        return Detected(manifest.format, path, manifest=manifest)
    specs = [get(n) for n in names()]
    head = b""
    if path.is_file():
        with open(path, "rb") as f:
            head = f.read(_HEAD)
        for spec in specs:
            if head and spec.sniff is not None and spec.sniff(head):
                return Detected(spec.name, path, data_file=path)
    for spec in specs:
        found = spec.claim(path)
        if found is not None:
            return found
    if path.is_file():
        for spec in specs:
            if path.name.lower().endswith(spec.suffixes):
                return Detected(spec.name, path, data_file=path)
    raise ConfigError(_unknown(path, head, specs))


def _unknown(path: Path, head: bytes, specs: list[FormatSpec]) -> str:
    if path.is_dir():
        kinds = [f"not {s.title} ({s.recognised_by})" for s in specs if s.data_name]
        return f"{path}: not a fastdata dataset (no {MANIFEST_NAME}), {', '.join(kinds)}; give a dataset directory or a shard"
    kinds = [f"not {s.title} ({s.recognised_by})" for s in specs]
    what = "empty file" if not head else f"first bytes {head[:8].hex()}"
    return f"{path}: {', '.join(kinds)}; {what}; which tool wrote it?"
