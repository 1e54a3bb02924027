"""Write a whole dataset directory: shards named in order, then the manifest.

The per-shard work is the format's ``write_shard`` (atomic on its own); this
module only decides shard boundaries and names, and writes the manifest last.
Converters that parallelise or resume call :func:`shard_name` and
:func:`finish_dataset` themselves.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from . import registry
from ._atomic import remove
from .manifest import MANIFEST_NAME, Manifest
from .sample import Sample, ShardInfo

DEFAULT_SHARD_BYTES = 256 * 1024 * 1024


def shard_name(format_name: str, index: int, prefix: str = "shard") -> str:
    """The file name of shard ``index``: ``shard-00003.rec`` and the like."""
    return f"{prefix}-{index:05d}{registry.get(format_name).suffix}"


def prepare_directory(directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Create ``directory``, refusing one that already holds a finished dataset."""
    directory = Path(directory)
    if (directory / MANIFEST_NAME).exists():
        if not overwrite:
            raise ConfigError(
                f"{directory} already holds a finished dataset (it has {MANIFEST_NAME}); "
                "choose another output directory or pass overwrite=True (--overwrite)"
            )
        for child in directory.iterdir():
            remove(child)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def finish_dataset(
    directory: str | os.PathLike[str],
    format_name: str,
    shards: list[ShardInfo],
    classes: list[str],
    *,
    extra: dict[str, Any] | None = None,
) -> Manifest:
    """Run the format's finalize hook, then write ``manifest.json`` (last)."""
    spec = registry.get(format_name)
    manifest = Manifest(format=format_name, shards=list(shards), classes=list(classes), label_base=spec.label_base)
    manifest.extra.update(extra or {})
    if spec.finalize is not None:
        manifest.extra.update(spec.finalize(directory, manifest))
    manifest.write(directory)
    return manifest


def write_dataset(
    directory: str | os.PathLike[str],
    format_name: str,
    samples: Iterable[Sample],
    classes: list[str],
    *,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    overwrite: bool = False,
) -> Manifest:
    """Write ``samples`` as a sharded dataset directory and return its manifest.

    A new shard starts once the current one holds ``shard_bytes`` of image
    data. Samples are written in the order given.
    """
    if shard_bytes <= 0:
        raise ConfigError(f"shard_bytes must be positive, got {shard_bytes}")
    directory = prepare_directory(directory, overwrite=overwrite)
    spec = registry.get(format_name)
    infos: list[ShardInfo] = []
    source = iter(samples)
    while True:
        chunk = _take_until(source, shard_bytes)
        if not chunk:
            break
        infos.append(spec.write_shard(directory / shard_name(format_name, len(infos)), chunk))
    return finish_dataset(directory, format_name, infos, classes)


def _take_until(source: Iterator[Sample], limit: int) -> list[Sample]:
    chunk: list[Sample] = []
    size = 0
    for sample in source:
        chunk.append(sample)
        size += len(sample.image)
        if size >= limit:
            break
    return chunk
