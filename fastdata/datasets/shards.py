"""Map-style datasets over the shards of any registered format.

:class:`FormatDataset` takes a converted dataset directory (``manifest.json``:
classes and record counts come from it, so opening is instant), one foreign
shard, a glob or a list of shards (each is opened once to count its records).
Samples are ``(image, target)``; see :mod:`fastdata.datasets.imaging` for what
``image`` is and :mod:`fastdata.datasets.policy` for ``on_error``.

The per-format names (``RecordIODataset``, ``TFRecordDataset``,
``LMDBDataset``) are the generic class with the format fixed and the format's
options as keywords, written out in :mod:`fastdata.datasets.named`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError
from ..formats import Detected, Manifest, registry
from ..remote import hooks as remote_hooks
from .base import SampleSettings, ShardDataset
from .imaging import Transform
from .shardset import ShardChecks, ShardSet
from .sources import PathArg, first_path, resolve

if TYPE_CHECKING:
    import numpy as np

TARGETS_EXTRA = "targets"
"""``manifest.extra`` key naming a ``.npy`` of every sample's 0-based target
(int64, in sample order) that a converter may write beside the shards; with
it, ``dataset.targets`` costs one small read instead of a pass over records."""


def converted(format_name: str, path: PathArg, paths: list[str], manifest: Any, options: dict[str, Any]) -> ShardSet:
    """The ShardSet of a converted directory: counts and targets file from its manifest.

    Every converted directory a dataset or stream opens passes here, so this
    is where each shard's size is checked against the manifest (one ``stat``
    each): a truncated shard fails now, not in a worker when its last record is read.
    """
    if not remote_hooks.is_localized(path):  # a remote dataset's shards are checked as they are fetched
        manifest.check_shard_sizes(path)
    targets = manifest.extra.get(TARGETS_EXTRA)
    sources = manifest.sources_file(path)
    return ShardSet(
        format_name,
        paths,
        options,
        [s.records for s in manifest.shards],
        targets_file=os.fspath(manifest.path_of(path, targets)) if targets else None,
        sources_file=os.fspath(sources) if sources is not None else None,
        checks=[_checks(os.fspath(path), manifest, info) for info in manifest.shards],  # type: ignore[arg-type]  # with a manifest, path is one directory
        num_classes=len(manifest.classes) or None,
    )


def _checks(directory: str, manifest: Any, info: Any) -> ShardChecks:
    """What :class:`ShardSet` checks when it opens a converted shard: the
    digests of its index and checksum file, and that checksum file."""
    small = [n for n in (info.index, info.checksums) if n and n in info.digests]
    sidecar = os.fspath(manifest.path_of(directory, info.checksums)) if info.checksums else None
    return ShardChecks(tuple((os.fspath(manifest.path_of(directory, n)), info.digests[n]) for n in small), sidecar)


def open_shards(path: PathArg, format_name: str | None, options: dict[str, Any]) -> tuple[ShardSet, list[str] | None]:
    """The ShardSet at ``path`` and the manifest's class names (None for foreign files).

    Args:
        path: converted directory (or its URL), shard, glob or list of shards;
            or what :func:`fastdata.formats.detect` found for a converted
            directory (``open_dataset`` passes it, so the manifest is read once).
        format_name: registry name; None detects it from ``path`` (the first
            file of a glob or list).
        options: the format's dataset keywords (its ``FormatSpec.options``).
    """
    found = path if isinstance(path, Detected) and path.is_dataset else None
    path = found.path if found is not None else remote_hooks.local_root(path)  # a URL: its local cache directory
    if format_name is None:
        format_name = found.format if found is not None else registry.detect(first_path(path)).format
    spec = registry.get(format_name)
    reader_options = spec.reader_options(**options)
    manifest: Manifest | None
    if found is not None and found.format == format_name and found.manifest is not None:
        manifest = found.manifest
        paths = [os.fspath(manifest.path_of(path, s.file)) for s in manifest.shards]
    else:  # (a directory of another format: resolve reads it again to refuse it with the class to use)
        paths, manifest = resolve(path, format_name, dir_is_shard=spec.data_name is not None)
    open_options = reader_options.open_options(manifest)
    if manifest is not None:
        return converted(format_name, path, paths, manifest, open_options), manifest.classes
    return ShardSet(format_name, paths, open_options), None


class ShardSource(SampleSettings):
    """What the generic dataset and stream share (not public API): the
    constructor that opens the shards of one format with the keywords both
    take (:class:`FormatDataset` documents them), and the format's name."""

    fixed_format: ClassVar[str | None] = None

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        format: str | None = None,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        **options: Any,
    ) -> None:
        super().__init__(transform=transform, target_transform=target_transform, decode=decode, on_error=on_error)
        self.shards, found = open_shards(path, self._format_for(format), options)
        names = classes if classes is not None else found
        self._classes = list(names) if names is not None else None
        self._targets: np.ndarray | None = None

    @property
    def format(self) -> str:
        """The registry name of the format read."""
        return self.shards.format

    @classmethod
    def _format_for(cls, given: str | None) -> str | None:
        fixed = cls.fixed_format
        if fixed is not None and given is not None and given != fixed:
            raise ConfigError(f"{cls.__name__} reads {fixed} shards, not {given}; use the class for {given}")
        return fixed or given


class FormatDataset(ShardSource, ShardDataset):
    """Shards of any registered format (fastdata's, or files other tools wrote).

    Args:
        path: converted directory, a shard, a glob or a list of shards.
        transform: applied to the PIL RGB image (or to ``EncodedImage`` when
            it is decode-aware).
        target_transform: applied to the target.
        format: registry name (``fastdata.formats.names()``); default: the
            manifest's, or detected from the first file's bytes and name.
        classes: class names. Default: the manifest's; for foreign files what
            the format finds (im2rec's ``.lst``, TFRecord's
            ``image/class/text``), else ``str(label)``.
        decode: False returns ``(stored image bytes, target)`` untransformed.
        on_error: ``"raise"``, ``"skip"`` or ``"warn"``.
        **options: the format's own keywords (its ``FormatSpec.options``
            dataclass, e.g. TFRecord's ``label_key``).

    Targets are ints for class labels and float32 vectors for label vectors.

    Raises:
        ConfigError: nothing readable at ``path``, or an option the format
            does not take (the message lists the ones it takes).
    """
