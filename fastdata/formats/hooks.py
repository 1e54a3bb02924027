"""The small types a format's :class:`~fastdata.formats.registry.FormatSpec`
declares beside its reader and writer: what detection found, reader options,
the inspect / verify / index / DALI hooks. None of them imports torch or DALI.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError, FormatError
from .manifest import MANIFEST_NAME, Manifest

Framing = tuple[range, ...]
"""Byte ranges of a shard's first record that are framing or checksum, not
payload: flipping any bit in them must raise FormatError on read."""

NO_FRAMING: Framing = ()
"""A format with no record framing of its own (LMDB keeps values in B-tree pages)."""

Problem = tuple[Path, str]
"""``(file, what is wrong with it)``, as ``fastdata verify`` reports it."""


@dataclasses.dataclass(frozen=True)
class Detected:
    """What :func:`fastdata.formats.registry.detect` found at a path.

    Attributes:
        format: registry name.
        path: what to open: a converted dataset directory, or one shard
            (a file, an LMDB directory) as ``open_shard`` takes it.
        data_file: the file holding the records (the ``.rec`` behind a given
            ``.idx``, an LMDB's ``data.mdb``); None for a dataset directory.
        compression: ``"gzip"``/``"zlib"`` for a whole-file compressed shard.
        manifest: the parsed manifest of a converted directory.
    """

    format: str
    path: Path
    data_file: Path | None = None
    compression: str | None = None
    manifest: Manifest | None = None

    @property
    def is_dataset(self) -> bool:
        return self.manifest is not None

    @property
    def shard_file(self) -> Path:
        """``data_file``, for the hooks that read one shard file (a dataset directory has none)."""
        if self.data_file is None:
            raise ConfigError(f"{self.path} is a converted dataset directory, not one {self.format} file: "
                              "pass one of its shard files")
        return self.data_file


class CheckedRecords(Protocol):
    """What ``fastdata verify`` reads a shard file through: ``sample(j)`` is
    ``(image bytes, or None for a record that holds no image, label)``. Every
    :class:`SampleReader` is one."""

    def __len__(self) -> int: ...

    def sample(self, i: int, /) -> tuple[bytes | None, Any]: ...


@dataclasses.dataclass(frozen=True)
class ReaderOptions:
    """Base of a format's reader options: the keywords its datasets take beyond
    the common ones (``transform``, ``decode``, ...). A format subclasses it as
    a frozen dataclass whose fields are those keywords; the base has none."""

    def open_options(self, manifest: Manifest | None) -> dict[str, Any]:
        """``open_shard`` keywords for every shard; ``manifest`` is the
        converted directory's (None for foreign files). Default: the fields."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Inspected:
    """One record as ``fastdata inspect`` shows it: JSON-ready fields in display
    order, and the image bytes the tool describes (kind, size) when there are some."""

    fields: dict[str, Any]
    image: bytes | None = None


@dataclasses.dataclass(frozen=True)
class FileCheck:
    """What ``fastdata verify`` checks in one shard file outside a converted directory.

    Attributes:
        problems: found before reading records (an index disagreeing with a
            fresh scan of the file).
        records: opens (in any process: picklable) a reader whose
            ``sample(j)`` gives ``(image bytes or None, label)``, for formats
            read by position; None when the records are read with ``stream``
            or cannot be read at all (``problems`` says why).
        stream: ``stream()`` yields the raw records front to back, for formats
            read in order; a damaged record raises FormatError and ends the read.
        image: ``image(record)``: the image bytes of a streamed record (None
            when it holds none); FormatError when the record is malformed.
        truncated: the file ends inside a record; ``records`` reads those
            before it, which a checksum file made for the whole file still checks.
    """

    problems: tuple[Problem, ...] = ()
    records: Callable[[], CheckedRecords] | None = None
    stream: Callable[[], Iterator[bytes]] | None = None
    image: Callable[[bytes], bytes | None] | None = None
    truncated: bool = False


@dataclasses.dataclass(frozen=True)
class IndexHook:
    """The index files of a format (``fastdata index``).

    Attributes:
        path: where the index of a shard lives (``x.rec`` -> ``x.idx``).
        build: ``build(found, out)`` writes the index of the shard ``found``
            to ``out`` and returns a few words on what was indexed; raises
            ConfigError (e.g. a compressed file) or FormatError (damage).
    """

    path: Callable[[Path], Path]
    build: Callable[[Detected, Path], str]


@dataclasses.dataclass(frozen=True)
class DALIReader:
    """How DALI reads a converted directory of the format.

    Attributes:
        reader: the reader's name under ``nvidia.dali.fn.readers``.
        index_paths: ``index_paths(directory, manifest)`` the index files the
            reader takes, each checked to exist (FormatError naming the file
            and the fix otherwise); empty for a reader without indexes.
        features: the (image, label) feature names, for readers that parse
            records into named features (TFRecord); None otherwise.
    """

    reader: str
    index_paths: Callable[[Path, Manifest], tuple[str, ...]]
    features: tuple[str, str] | None = None


def existing(path: Path, what: str, hint: str | None = None, digest: str | None = None) -> str:
    """``path`` as a string, or FormatError naming it when it does not exist
    or does not have ``digest`` (the manifest's, when it records one)."""
    if not path.exists():
        raise FormatError(
            f"{what} listed in {MANIFEST_NAME} does not exist",
            path=path,
            hint=hint or "the directory is incomplete: copy it again or re-run the conversion",
        )
    from .checksums import matches

    if digest is not None and not matches(path, digest):
        raise FormatError(f"{what} does not match the digest {MANIFEST_NAME} records (damaged or replaced)", path=path,
                          hint=hint or "copy the dataset again or re-run the conversion")
    return os.fspath(path)


def json_label(label: Any) -> Any:
    """A label as JSON shows it: an int, a float, or a list of rounded floats."""
    import numpy as np  # not at import: ``import fastdata`` reads the registry

    if isinstance(label, np.ndarray):
        return [round(float(x), 6) for x in label.ravel()]
    if isinstance(label, (list, tuple)):
        return [round(float(x), 6) for x in label]
    if isinstance(label, (np.integer, int)):
        return int(label)
    return float(label)


def readable(kept: int, total: int | None = None) -> str:
    """Which records of a file cut short are still readable: the first ``kept``
    (of ``total``, when the whole count is known)."""
    if kept == 0:
        return f"no record is readable, all {total} lost" if total else "no record readable"
    if total is not None and kept >= total:
        return f"all {total} records readable (only bytes after the last record are missing)"
    if kept == 1:
        return "record 0 readable, 1 onwards lost"
    return f"records 0-{kept - 1} readable, {kept} onwards lost"


def truncated_file(kept: int, size: int, offset: int | None) -> str:
    """The problem of a single file that ends inside record ``kept``."""
    return (
        f"truncated at byte {size}: {readable(kept)} (the record at byte offset {offset} runs past the end of the "
        "file); restore the file from a good copy or re-create it"
    )

