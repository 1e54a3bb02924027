"""The commit rule of :mod:`.commit` on object storage (``write_shards(df, "s3://...")``).

A bucket has no rename and no folder to remove in one call, so the rule
becomes copies and deletes, and the order is what keeps it safe:

* a task writes its shard into a local temporary folder, uploads each file
  under ``OUT/.fastdata-attempts/<shard>-<uuid>/`` (a name of its own) and
  removes the local copy; a task that dies mid-upload leaves objects only
  under its own attempt name;
* the driver copies the counted attempts' objects to their final names (a
  copy inside the store: S3's CopyObject, no image bytes through the
  driver), then deletes every object under the attempts prefix (the
  attempts not counted with them), then runs the format's finalize hook
  (RecordIO's ``dali.idx``) over a local stand-in of the dataset, uploads
  what it wrote, and uploads the manifest last. A job that stops at any
  point before that last upload leaves no manifest: nothing reads it as a
  dataset.

The stand-in holds the counted shards' small files (indexes, checksums),
downloaded, and each data object as a sparse file of the size the manifest
records: the finalize hooks read indexes and sizes, never the records of a
shard whose index fastdata wrote itself.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fastdata.errors import ConfigError
from fastdata.formats import dataset_writer, registry
from fastdata.formats.manifest import MANIFEST_NAME
from fastdata.formats.sample import ShardInfo
from fastdata.remote.store import Store
from fastdata.remote.urls import READ_ONLY, protocol, scrub_url

from ..remote_io import stand_in


def open_bucket(store: Store, attempts: str) -> None:
    """Check ``store`` writable and free of a finished dataset; remove the
    objects a job that failed there left under ``attempts``.

    Raises:
        ConfigError: an ``http(s)://`` URL, or one that holds a manifest.
        RemoteError: the store cannot be reached (the message says why).
    """
    url = store.url
    if protocol(url) in READ_ONLY:
        raise ConfigError(f"write_shards: {scrub_url(url)}: {protocol(url)}:// is read-only; write to s3:// (or "
                          "another object store fsspec can write) or to a folder every worker sees")
    if store.size(MANIFEST_NAME) is not None:
        raise ConfigError(f"{scrub_url(url)} already holds a finished dataset; write to another prefix")
    remove_prefix(store, attempts)


def upload_attempt(store: Store, attempts: str, folder: Path, files: tuple[str, ...]) -> str:
    """Upload ``files`` (relative to the local attempt ``folder``) to
    ``attempts/<folder's name>/...``; returns that prefix."""
    prefix = f"{attempts}/{folder.name}"
    for name in files:
        store.upload(str(folder / name), f"{prefix}/{name}")
    return prefix


def remove_prefix(store: Store, prefix: str) -> None:
    """Delete every object under ``prefix/`` (only that prefix is listed, not the dataset beside it)."""
    under = Store(store.url_of(prefix), store.options, store.policy)
    for name in sorted(under.listing()):
        under.remove(name)


def commit_objects(store: Store, moves: list[tuple[str, str]], attempts: str) -> None:
    """Copy each ``(attempt object, final name)``, then delete every attempt."""
    try:
        for old, new in moves:
            store.copy(old, new)
    finally:
        remove_prefix(store, attempts)


def finish(store: Store, format_name: str, infos: list[ShardInfo], classes: list[str], extra: dict[str, Any]) -> None:
    """Run the format's finalize hook over a local stand-in of the committed
    shards, upload the files it wrote, then the manifest (last)."""
    spec = registry.get(format_name)
    with tempfile.TemporaryDirectory(prefix="fastdata-commit-") as tmp:
        local = Path(tmp)
        for info in infos:
            for small in (info.index, info.checksums):
                if small:
                    (local / small).parent.mkdir(parents=True, exist_ok=True)
                    store.download(small, str(local / small))
            stand_in(local / spec.data_file(info.file), info.bytes)  # the size the hook checks, no bytes
        before = {p for p in local.rglob("*") if p.is_file()}
        dataset_writer.finish_dataset(local, format_name, infos, classes, extra=extra)
        written = sorted(p for p in local.rglob("*") if p.is_file() and p not in before and p.name != MANIFEST_NAME)
        for path in [*written, local / MANIFEST_NAME]:
            store.upload(str(path), path.relative_to(local).as_posix())
