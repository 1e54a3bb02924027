"""The few calls the dataset layer makes; each is a no-op for local paths.

* :func:`local_root` where a dataset receives its path: a URL becomes the
  local directory of :func:`~fastdata.remote.mirror.localize` (default cache).
* :func:`opening` (or :func:`local_file` for a file read at once) where a
  shard is opened: a shard of a localized dataset is downloaded (and
  checked) first, and kept from eviction until it is open.
* :func:`read_ahead` where a stream knows the records it will read: the
  next remote shards download while the current one is read
  (:mod:`fastdata.remote.readahead`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from .urls import is_url


def local_root(path: Any) -> Any:
    """``path`` itself, or for a URL the local directory that stands for it."""
    if not is_url(path):
        return path
    from .mirror import localize

    return localize(path)


def is_localized(directory: Any) -> bool:
    """Whether ``directory`` stands for a remote dataset (made by ``localize``)."""
    from .mirror import mirror_of

    return isinstance(directory, (str, os.PathLike)) and mirror_of(directory) is not None


def local_file(path: str) -> str:
    """The path to open for shard ``path``: itself, downloaded first when it
    belongs to a localized dataset.

    Raises:
        FormatError: the download fails its size or SHA-256 check twice, or
            the object is missing on the server (the message names the URL).
        RemoteError: retries exhausted, credentials refused, or the cache is full.
    """
    from .mirror import mirror_of

    mirror = mirror_of(os.path.dirname(path))
    if mirror is None:
        return path
    from . import readahead

    readahead.opened(path)  # this one is wanted now: start on the next ones while it downloads
    mirror.fetch(os.path.basename(path))
    return path


@contextlib.contextmanager
def opening(path: str) -> Iterator[str]:
    """:func:`local_file`, kept in the cache while the body opens it (and its
    index and checksum files): a localized shard cannot be evicted between
    its download and its opening. Once opened, eviction is harmless (an
    open file keeps its data).

    Raises:
        What :func:`local_file` raises; RemoteError: the cache is too small
        for the shards being opened at once.
    """
    from .mirror import mirror_of

    mirror = mirror_of(os.path.dirname(path))
    if mirror is None:
        yield path
        return
    from . import readahead

    readahead.opened(path)
    with mirror.opened(os.path.basename(path)):
        yield path


def read_ahead(paths: Sequence[str]) -> None:
    """Shard files about to be read, in order: fetch the remote ones ahead."""
    if not paths:
        return
    from .mirror import mirror_of

    if all(mirror_of(os.path.dirname(p)) is None for p in dict.fromkeys(paths)):
        return
    from . import readahead

    readahead.plan(paths)


def cached_copy_hint(path: str, hint: str | None) -> str | None:
    """The fix for a damaged file at ``path``: ``hint`` for a local dataset;
    for a localized one, deleting the cached copy (it is fetched again),
    since re-converting or restoring is not the user's to do there."""
    from .mirror import mirror_of

    mirror = mirror_of(os.path.dirname(path))
    if mirror is None:
        return hint
    return (f"this is fastdata's cached copy of {mirror.store.scrub(mirror.store.url_of(os.path.basename(path)))}: "
            f"delete {path} and fastdata downloads it again; if the new copy fails too, the object on the server "
            "is damaged: re-upload the dataset")
