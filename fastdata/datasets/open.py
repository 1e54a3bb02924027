"""``open_dataset``: the right dataset class for whatever is at a path."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigError
from ..formats import MANIFEST_NAME, Detected, detect
from ..remote import hooks as remote_hooks
from .sources import PathArg, first_path, refuse_split_root


def open_dataset(path: PathArg, *, streaming: bool = False, **kwargs: Any) -> Any:
    """Open ``path`` with the dataset class that reads it.

    What is at ``path`` is found by :func:`fastdata.formats.detect` (a
    converted directory's ``manifest.json`` names the format; otherwise
    each registered format recognises its shards by their first bytes,
    layout or suffix); a directory no format claims that has sub-directories
    is a class-per-folder image tree (:class:`ImageFolder`). A list or glob
    is judged by its first file. The class is the format's registry alias
    (``RecordIODataset``...) when it has one, else the generic
    :class:`FormatDataset` / :class:`FormatStream`.

    Args:
        path: directory, file, glob or list of shard files (or a dataset's URL).
        streaming: return the iterable variant (any registered format; not
            an image folder).
        **kwargs: passed to the class (``transform``, ``decode``, ``on_error``...).

    Raises:
        ConfigError: nothing recognisable at ``path``, ``streaming`` for
            an image folder, or a converter's output with splits (it names
            ``out/train`` and ``out/val``, the datasets to open).
        ManifestError: an unreadable ``manifest.json``.
    """
    from .named import public_class

    path = remote_hooks.local_root(path)  # a URL: the local directory its shards are cached in
    found = _detect(path)
    if found is None:
        if streaming:
            raise ConfigError(f"{_show(path)}: an image folder has no streaming variant; open it without streaming=True")
        if not isinstance(path, (str, os.PathLike)):
            raise ConfigError(f"{_show(path)}: a list of image folders; open one folder at a time")
        from .folder import ImageFolder

        return ImageFolder(path, **kwargs)
    cls = public_class(found.format, "stream" if streaming else "dataset")
    # a converted directory: hand over what detection read, so the manifest is read once
    return cls(found if found.is_dataset else path, **kwargs)


def _detect(path: PathArg) -> Detected | None:
    """What :func:`fastdata.formats.detect` finds at ``path`` (its first
    file for a glob or list); None for an image folder."""
    first = first_path(path)
    if first.is_dir() and not (first / MANIFEST_NAME).exists():
        refuse_split_root(first)
        try:
            return detect(first)
        except ConfigError as exc:
            if any(child.is_dir() for child in first.iterdir()):
                return None
            raise ConfigError(f"{exc}; nor an image folder (no class sub-directories)") from None
    return detect(first)


def _show(path: PathArg) -> str:
    return os.fspath(path) if isinstance(path, (str, os.PathLike)) else f"{len(path)} paths"
