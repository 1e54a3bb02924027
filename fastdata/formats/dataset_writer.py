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

from ..errors import ConfigError, ManifestError
from . import registry
from ._atomic import PARTIAL_SUFFIX, remove
from .manifest import MANIFEST_NAME, Manifest
from .sample import Sample, ShardInfo

DEFAULT_SHARD_BYTES = 256 * 1024 * 1024


def shard_name(format_name: str, index: int, prefix: str = "shard") -> str:
    """The file name of shard ``index``: ``shard-00003.rec`` and the like."""
    return f"{prefix}-{index:05d}{registry.get(format_name).suffix}"


def prepare_directory(directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Create ``directory``, refusing one that already holds a finished dataset.

    With ``overwrite``, the finished dataset there is removed first: only the
    files its manifest lists (see :func:`written_files`); files a user put
    beside the shards stay.

    Raises:
        ConfigError: a finished dataset and not ``overwrite``; or a
            ``manifest.json`` fastdata cannot read, which is not deleted (nor
            anything else).
    """
    directory = Path(directory)
    if (directory / MANIFEST_NAME).exists():
        if not overwrite:
            raise ConfigError(
                f"{directory} already holds a finished dataset (it has {MANIFEST_NAME}); "
                "choose another output directory or pass overwrite=True (--overwrite)"
            )
        try:
            doomed = written_files(directory)
        except (ManifestError, OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{directory / MANIFEST_NAME} is not a manifest fastdata can read ({exc}), so fastdata cannot tell "
                "which files are its own and deletes none: choose a new or empty directory"
            ) from exc
        for path in doomed:
            remove(path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def written_files(directory: str | os.PathLike[str], manifest: Manifest | None = None) -> list[Path]:
    """What fastdata wrote in the finished dataset ``directory``: each file its
    manifest lists (shards, indexes, extra files) and its ``.partial`` name,
    then the manifest itself. A listed name that is not a plain name beside
    the manifest (``../x``, ``a/b``: a hand-edited manifest) is left out.

    ``manifest``: the one there, when the caller has read it already.

    Raises:
        ManifestError: the ``manifest.json`` there is not one fastdata can read.
    """
    directory = Path(directory)
    doomed: list[Path] = []
    for name in (manifest or Manifest.read(directory)).files():
        if name in ("", ".", "..") or Path(name).name != name:
            continue
        doomed += [directory / name, directory / (name + PARTIAL_SUFFIX)]
    return [*doomed, directory / MANIFEST_NAME]


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
    data. Samples are written in the order given. ``overwrite`` replaces a
    finished dataset in ``directory`` (see :func:`prepare_directory`: other
    files there stay).
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
