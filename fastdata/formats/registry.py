"""The table from a format name to its implementation.

Adding a format is a folder under ``fastdata/formats/`` whose package defines
``FORMAT = FormatSpec(...)`` plus one line in ``_MODULES``; the conformance
tests iterate over :func:`names`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ConfigError
from .sample import Sample, SampleReader, ShardInfo

_MODULES = {
    "recordio": "fastdata.formats.recordio",
    "tfrecord": "fastdata.formats.tfrecord",
    "lmdb": "fastdata.formats.lmdb",
}


@dataclasses.dataclass(frozen=True)
class FormatSpec:
    """How one on-disk format stores image samples.

    Attributes:
        name: registry name.
        suffix: shard file (or, for LMDB, directory) suffix, e.g. ``".rec"``.
        write_shard: ``write_shard(path, samples) -> ShardInfo`` writes one
            complete shard atomically (under a partial name, renamed at the
            end); ``path`` is the final shard path, ``ShardInfo.file`` its
            basename.
        open_shard: ``open_shard(path, **options) -> SampleReader``.
        label_base: label stored for class 0 by ``write_shard``.
        finalize: optional ``finalize(directory, manifest) -> dict`` run
            after all shards exist, before the manifest is written; it may
            write extra files (e.g. a DALI index) and returns entries for
            ``manifest.extra``.
    """

    name: str
    suffix: str
    write_shard: Callable[[str | os.PathLike[str], Iterable[Sample]], ShardInfo]
    open_shard: Callable[..., SampleReader]
    label_base: int = 0
    finalize: Callable[[str | os.PathLike[str], Any], dict[str, Any]] | None = None


def names() -> list[str]:
    return sorted(_MODULES)


def get(name: str) -> FormatSpec:
    """Return the :class:`FormatSpec` registered under ``name``."""
    try:
        module = _MODULES[name]
    except KeyError:
        raise ConfigError(f"unknown format {name!r}; choose one of {', '.join(names())}") from None
    return importlib.import_module(module).FORMAT
