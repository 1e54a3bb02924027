"""What is at a path: a fastdata dataset directory, a split output, or one
shard of a registered format (fastdata's or a foreign tool's).

Datasets and shards are recognised by :func:`fastdata.formats.detect`, the
one detection function (each format's spec says how it is recognised);
this module adds only what belongs to the converter's output: ``OUT/train`` +
``OUT/val`` splits and an unfinished conversion.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import warnings
from pathlib import Path

from fastdata.errors import ConfigError, ManifestError
from fastdata.formats import (
    MANIFEST_NAME,
    Detected,
    Manifest,
    SampleReader,
    detect,
    registry,
)

from ..output.state import SPLIT_NAMES
from ..planning.layout import PLAN_NAME

DATASET, SPLITS, SHARD = "dataset", "splits", "shard"


@dataclasses.dataclass
class Target:
    """A classified path.

    Attributes:
        kind: ``"dataset"`` (a directory with manifest.json), ``"splits"``
            (OUT/train + OUT/val) or ``"shard"`` (one shard of a registered format).
        path: the dataset directory, or the shard as the format opens it.
        format: registry name (the manifest's for datasets and splits).
        found: what detection found (None for ``"splits"``).
        splits: split name -> dataset directory (``"splits"`` only).
    """

    kind: str
    path: Path
    format: str
    found: Detected | None = None
    splits: dict[str, Path] = dataclasses.field(default_factory=dict)

    @property
    def manifest(self) -> Manifest:
        """The dataset's manifest (a ``"dataset"`` target only)."""
        if self.found is None or self.found.manifest is None:
            raise ConfigError(f"{self.path} is a {self.kind}, not a converted dataset directory with a {MANIFEST_NAME}")
        return self.found.manifest

    @property
    def shard(self) -> Detected:
        """What detection found (a ``"dataset"`` or ``"shard"`` target; ``"splits"`` has one per split)."""
        if self.found is None:
            raise ConfigError(f"{self.path} holds the splits {', '.join(self.splits)}: name one of them")
        return self.found


def identify(path: str | os.PathLike[str]) -> Target:
    """Classify ``path``.

    Raises:
        ConfigError: the path does not exist or no registered format recognises it.
        ManifestError: a dataset directory whose manifest cannot be read, or
            an unfinished conversion.
    """
    path = Path(path)
    if path.is_dir() and not (path / MANIFEST_NAME).is_file():
        splits = {s: path / s for s in SPLIT_NAMES if (path / s / MANIFEST_NAME).is_file()}
        if splits:
            return Target(SPLITS, path, Manifest.read(next(iter(splits.values()))).format, splits=splits)
        if (path / PLAN_NAME).exists():
            raise ManifestError(
                f"{path}: an unfinished conversion (no manifest yet); finish it with `fastdata convert ... --resume`"
            )
    found = detect(path)
    return Target(DATASET if found.is_dataset else SHARD, found.path, found.format, found=found)


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the image header (Pillow reads only the header), or None."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Image.open(io.BytesIO(data)).size
    except Exception:  # noqa: BLE001 - not an image, or one Pillow cannot parse: the caller shows "?"
        return None


def shard_opener(directory: Path, manifest: Manifest, i: int) -> functools.partial[SampleReader]:
    """A picklable ``open() -> SampleReader`` for shard ``i`` of a dataset directory
    (the format's ``open_shard`` with the options its manifest gives)."""
    spec = registry.get(manifest.format)
    return functools.partial(spec.open_shard, Path(directory) / manifest.shards[i].file, **spec.shard_options(manifest))


def close_reader(reader: object) -> None:
    """Close a shard reader; not every format's reader has ``close``."""
    close = getattr(reader, "close", None)
    if callable(close):
        close()
