"""``fastdata convert URL OUT``: an image folder in object storage as the source.

The objects under the URL (an ImageFolder: ``URL/<class>/<image>``) are
downloaded into a local folder keyed by the URL
(``~/.cache/fastdata/sources/<name>-<hash>``) by a few threads, then the
conversion reads that folder, so the shards are byte for byte those of the
same folder converted from disk. A file already there with the object's
size is not fetched again (a re-run with ``--resume`` downloads only the
rest); the copy is removed once the conversion finished.

On a cluster of several machines (``--engine``) nothing is downloaded here:
:func:`list_source` lays out the listing as sparse files of the objects'
sizes, the plan is made from them, and each task reads its objects from the
bucket (:func:`.conversion.work.use_source`).

The listing comes from a bucket fastdata does not control: a name that is
not a plain relative path (``..``, an absolute path, a backslash) is refused,
naming the object, before anything is written.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fastdata.errors import ConfigError, ManifestError
from fastdata.formats.names import entry_inside
from fastdata.remote.mirror import default_cache_dir
from fastdata.remote.store import Store
from fastdata.remote.urls import cache_key, scrub_url

from .remote_io import stand_in

#: Downloads at once: object stores answer each request with a round trip, so a few overlap them.
THREADS = 8


def source_dir(url: str) -> Path:
    """Where the source objects of ``fastdata convert URL ...`` are copied."""
    return default_cache_dir().parent / "sources" / cache_key(url)


def listing_dir(url: str) -> Path:
    """Where :func:`list_source` lays out the listing of ``url`` (never :func:`source_dir`:
    its sparse files would pass there for downloaded ones)."""
    return default_cache_dir().parent / "listings" / cache_key(url)


def fetch_source(url: str, *, quiet: bool = False) -> Path:
    """The objects under ``url`` copied into :func:`source_dir`; returns that folder.

    Raises:
        ConfigError: nothing under ``url``, or an object name that would land
            outside the folder (named, with the fix).
        RemoteError: the store cannot be reached or refuses (see :mod:`fastdata.remote.store`).
    """
    store = Store(url.rstrip("/"))
    local = source_dir(store.url)
    listing, targets = _listed(store, local)
    wanted = [n for n in targets if not (targets[n].is_file() and targets[n].stat().st_size == listing[n])]
    if not quiet:
        print(f"fastdata convert: copying {len(wanted)} of {len(listing)} object(s) from {scrub_url(store.url)} to {local}")
    for name in wanted:
        targets[name].parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(THREADS, thread_name_prefix="fastdata-source") as pool:
        for future in [pool.submit(_download, store, n, targets[n]) for n in wanted]:
            future.result()
    return local


def list_source(url: str, *, quiet: bool = False) -> Path:
    """The objects under ``url`` laid out in :func:`listing_dir` as sparse
    files of their sizes, no byte fetched: the plan is made from them by
    ``fastdata convert``'s own scan (the same classes, extensions, empty and
    skipped files), and the tasks of a cluster read each object from the
    bucket where they run (:func:`.conversion.work.use_source`).

    Raises:
        ConfigError: as :func:`fetch_source`.
        RemoteError: the store cannot be reached or refuses.
    """
    store = Store(url.rstrip("/"))
    local = listing_dir(store.url)
    listing, targets = _listed(store, local)
    for name, target in targets.items():
        if not (target.is_file() and target.stat().st_size == listing[name]):
            stand_in(target, listing[name])
    if not quiet:
        print(f"fastdata convert: {len(listing)} object(s) listed under {scrub_url(store.url)}; the engine's tasks "
              "read them from there")
    return local


def _listed(store: Store, local: Path) -> tuple[dict[str, int], dict[str, Path]]:
    """The objects under ``store`` (name -> size) and each one's place under ``local`` (made)."""
    shown = scrub_url(store.url)
    listing = {name: size for name, size in store.listing().items() if not name.endswith("/")}
    if not listing:
        raise ConfigError(f"{shown}: no objects there; give the URL of an image folder (URL/<class>/<image>)")
    local.mkdir(parents=True, exist_ok=True)
    targets = {}
    for name in sorted(listing):
        try:
            targets[name] = entry_inside(local, name)
        except ManifestError as exc:
            raise ConfigError(f"{shown}: object {name!r} is not a plain relative name ({exc}); fastdata writes "
                              "nothing outside its copy of the folder: rename or remove that object") from None
    return listing, targets


def _download(store: Store, name: str, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    store.download(name, str(partial))
    os.replace(partial, target)  # a file with its final name is whole: a re-run trusts it by its size


def remove_source(url: str) -> None:
    """Remove the copy (or the listing) of ``url``'s objects (after a finished conversion)."""
    shutil.rmtree(source_dir(url.rstrip("/")), ignore_errors=True)
    shutil.rmtree(listing_dir(url.rstrip("/")), ignore_errors=True)
