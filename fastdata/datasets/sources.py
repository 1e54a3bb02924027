"""From what a user passes (a converted directory, a foreign file, a glob, a
list) to the shard paths and, when there is one, the manifest."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from ..formats import MANIFEST_NAME, Manifest

PathArg = str | os.PathLike | Sequence[str | os.PathLike]

_GLOB_CHARS = frozenset("*?[")


def resolve(path: PathArg, format_name: str, *, dir_is_shard: bool = False) -> tuple[list[str], Manifest | None]:
    """Shard paths in sample order, plus the manifest of a converted directory.

    Args:
        path: a converted dataset directory (with ``manifest.json``), one
            shard file, a glob pattern (matches sorted), or a list of shards.
        format_name: the format the caller reads; a converted directory of
            another format is refused with the class to use instead.
        dir_is_shard: a directory without manifest is itself one shard
            (an LMDB environment).

    Raises:
        ConfigError: a missing path, an empty glob or list, a directory of
            another format, or a converter's output with splits.
        ManifestError: a directory that is neither converted nor a shard.
    """
    if not isinstance(path, (str, os.PathLike)):
        paths = [os.fspath(p) for p in path]
        if not paths:
            raise ConfigError(f"no {format_name} shards given (an empty list)")
        for p in paths:
            _must_exist(p)
        return paths, None
    text = os.fspath(path)
    if not os.path.exists(text) and _GLOB_CHARS & set(text):
        paths = sorted(glob.glob(text))
        if not paths:
            raise ConfigError(f"{text}: the pattern matches no file")
        return paths, None
    _must_exist(text)
    if os.path.isdir(text) and not (dir_is_shard and not os.path.exists(os.path.join(text, MANIFEST_NAME))):
        if not os.path.exists(os.path.join(text, MANIFEST_NAME)):
            refuse_split_root(Path(text))
        manifest = Manifest.read(text)
        if manifest.format != format_name:
            raise ConfigError(
                f"{text} holds a {manifest.format} dataset, not {format_name}; "
                "open it with fastdata.open_dataset(path) or the matching dataset class"
            )
        return [os.fspath(manifest.path_of(text, s.file)) for s in manifest.shards], manifest
    return [text], None


def refuse_split_root(directory: Path) -> None:
    """A converter's output with splits (``--val-fraction``: ``OUT/train``,
    ``OUT/val``, each a dataset) is not one dataset: say which to open.

    Raises:
        ConfigError: ``directory`` has no manifest but sub-directories that do.
    """
    splits = sorted(child.name for child in directory.iterdir() if (child / MANIFEST_NAME).is_file())
    if splits:
        choices = " or ".join(os.path.join(os.fspath(directory), name) for name in splits)
        raise ConfigError(
            f"{directory} holds fastdata datasets for the splits {', '.join(splits)}, not one dataset: open {choices}"
        )


def _must_exist(path: str) -> None:
    if not os.path.exists(path):
        raise ConfigError(f"{path}: no such file or directory")


def first_path(path: PathArg) -> Path:
    """The file a format is judged by: ``path`` itself, or the first of a glob or list."""
    if isinstance(path, (str, os.PathLike)) and os.path.exists(os.fspath(path)):
        return Path(os.fspath(path))
    paths, _ = resolve(path, "", dir_is_shard=True)
    return Path(paths[0])
