"""The CLI on URLs: ``convert SRC s3://...`` and ``inspect`` / ``verify`` /
``index`` of objects in storage.

``convert`` writes into a local staging directory keyed by the URL
(``~/.cache/fastdata/staging/<name>-<hash>``, where ``--resume`` finds the
plan of an interrupted run), then uploads every file, the manifest(s) last,
so a reader never sees a partial dataset; objects already uploaded with the
same size are skipped, so ``--resume`` after an interrupted upload -- even
on another machine, as a conversion is deterministic -- sends only the
rest. The read-only commands copy what they read into a temporary
directory (:func:`materialized`), run the local command there and print the
URL in its place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastdata.errors import ConfigError, FastDataError, ManifestError
from fastdata.formats import registry
from fastdata.formats.manifest import MANIFEST_NAME, Manifest
from fastdata.remote.mirror import data_object, default_cache_dir
from fastdata.remote.store import Store
from fastdata.remote.urls import READ_ONLY, cache_key, is_url, protocol, scrub_url

from .output import state


@dataclasses.dataclass(frozen=True)
class Materialized:
    """A remote dataset copied into ``path`` (a temporary directory), shown as ``shown`` (its URL, credentials scrubbed)."""

    path: Path
    shown: str

    def run(self, command: Callable[..., int], **options: Any) -> int:
        """``command(path, stdout=..., stderr=..., **options)`` (a local tool's
        ``run``), its output printed with the URL where it names the local copy.

        The text is rewritten, not the tool told: the tool's lines and the
        format readers' error messages name files by their local path, and the
        copy's folder has a unique temporary name, so the rewrite is exact."""
        out, err = io.StringIO(), io.StringIO()
        try:
            return command(str(self.path), stdout=out, stderr=err, **options)
        finally:
            sys.stdout.write(out.getvalue().replace(str(self.path), self.shown))
            sys.stderr.write(err.getvalue().replace(str(self.path), self.shown))


@contextlib.contextmanager
def materialized(url: str, *, records: int | None = None) -> Iterator[Materialized]:
    """The dataset at ``url`` copied into a temporary directory, removed on
    exit: every file when ``records`` is None, else what :func:`_materialize`
    says ``inspect`` needs to show that many records.

    Raises:
        ManifestError: a manifest there cannot be read (``damaged`` when it is damaged or edited).
        ConfigError: no manifest there.
    """
    store = Store(url)
    with tempfile.TemporaryDirectory(prefix="fastdata-remote-") as tmp:
        local = Path(tmp) / "d"
        _materialize(store, local, records=records)
        yield Materialized(local, scrub_url(store.url))


def inspect(url: str, *, as_json: bool, records: int) -> int:
    """``fastdata inspect URL``: the shards holding the first ``records`` records are downloaded."""
    from .tools.inspection import run

    with materialized(url, records=records) as local:
        return local.run(run, as_json=as_json, records=records)


def verify(url: str, *, decode: bool, quiet: bool, workers: int) -> int:
    """``fastdata verify URL``: every file is downloaded, then verified; a
    damaged manifest is damage found (exit 1), as for a local dataset."""
    from .tools.verify.command import run

    try:
        with materialized(url) as local:
            return local.run(run, decode=decode, quiet=quiet, workers=workers)
    except ManifestError as exc:
        if not exc.damaged:
            raise
        return _damaged_manifest(exc, scrub_url(url.rstrip("/")))


def _damaged_manifest(exc: ManifestError, shown: str) -> int:
    """``verify``'s report of a damaged manifest (the shards it lists cannot be checked)."""
    where, _, what = str(exc).partition(": ")
    print(f"fastdata verify: PROBLEM {where}: {what}")
    print(f"fastdata verify: {shown}: 1 problem(s) found (0 records in 0 shard(s) read; "
          "1 damaged manifest(s): their shards were not read)")
    return 1


def _materialize(store: Store, local: Path, *, records: int | None) -> None:
    """Copy the dataset at ``store`` into ``local``: the manifest(s), every
    file when ``records`` is None (verify), else the shards holding the first
    ``records`` samples and an empty stand-in of each other shard's size, so
    the local command sees the sizes on the server without the download."""
    splits = [] if store.size(MANIFEST_NAME) is not None else [
        s for s in state.SPLIT_NAMES if store.size(f"{s}/{MANIFEST_NAME}") is not None
    ]
    listing = store.listing() if protocol(store.url) not in READ_ONLY else {}
    for prefix in [f"{s}/" for s in splits] or [""]:
        try:
            text = store.read_bytes(prefix + MANIFEST_NAME)  # bytes: a damaged manifest is a ManifestError
        except FileNotFoundError:
            raise ConfigError(f"{scrub_url(store.url)}: no {MANIFEST_NAME} there; not a finished fastdata dataset") from None
        manifest = Manifest.from_json(text, source=scrub_url(store.url_of(prefix + MANIFEST_NAME)))
        directory = local / prefix
        directory.mkdir(parents=True, exist_ok=True)
        wanted = records
        for info in manifest.shards:
            data = data_object(manifest, info.file)
            names = [data] + [n for n in (info.index, info.checksums) if n]
            size = listing.get(prefix + data) if listing else store.size(prefix + data)
            if size is None:
                continue  # missing: the local command reports it
            if wanted is None or (wanted > 0 and size == info.bytes):
                for name in names:
                    _download(store, prefix + name, directory / name)
                wanted = None if wanted is None else wanted - info.records
            else:
                stand_in(directory / data, size)
        for name in manifest.extra_files():
            _download(store, prefix + name, directory / name)
        (directory / MANIFEST_NAME).write_bytes(text)


def _download(store: Store, name: str, local: Path) -> None:
    local.parent.mkdir(parents=True, exist_ok=True)
    try:
        store.download(name, str(local))
    except FileNotFoundError:
        pass  # the local command reports the missing file


def stand_in(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)  # sparse: no bytes written, only the size inspect compares


def index(files: list[str], *, force: bool) -> int:
    """Build the index of each remote ``.rec`` / ``.tfrecord`` and upload it beside the file."""
    from .tools.indexing import index_file

    failed = 0
    for url in files:
        parent, _, name = url.rstrip("/").rpartition("/")
        store = Store(parent) if is_url(url) else None
        try:
            with tempfile.TemporaryDirectory(prefix="fastdata-remote-") as tmp:
                local = Path(tmp) / name
                if store is None:
                    written, detail = index_file(url, force=force)
                    shown = str(written)
                else:
                    store.download(name, str(local))
                    written, detail = index_file(local, force=True)
                    if store.size(written.name) is not None and not force:
                        raise ConfigError(f"{scrub_url(store.url_of(written.name))} already exists; pass --force to rebuild it")
                    store.upload(str(written), written.name)
                    shown = store.url_of(written.name)
        except FileNotFoundError:
            failed += 1
            print(f"fastdata: error: {scrub_url(url)}: no such object", file=sys.stderr)
            continue
        except (FastDataError, OSError) as exc:
            failed += 1
            print(f"fastdata: error: {exc}", file=sys.stderr)
            continue
        print(f"fastdata index: {scrub_url(url)} -> {scrub_url(shown)} ({detail})")
    return 2 if failed else 0


# -- convert ---------------------------------------------------------------------------


def staging_dir(url: str) -> Path:
    """Where ``fastdata convert SRC URL`` builds the dataset before uploading it."""
    return default_cache_dir().parent / "staging" / cache_key(url)


def convert(request, convert_fn) -> int:
    """Run ``convert_fn`` (the local conversion) into the staging directory,
    then upload; ``request.out`` is the URL. Returns the exit code."""
    url = request.out.rstrip("/")
    if protocol(url) in READ_ONLY:
        raise ConfigError(f"{scrub_url(url)}: {protocol(url)}:// is read-only here; convert to s3:// (or another "
                          "object store fsspec can write), or to a local directory that a web server publishes")
    if request.num_nodes > 1:
        raise ConfigError("--num-nodes with a URL output is not supported; convert on one machine, or into a shared "
                          "directory and upload it")
    store = Store(url)
    staging = staging_dir(url)
    listing = store.listing()
    finished = [n for n in listing if n.rsplit("/", 1)[-1] == MANIFEST_NAME]
    if finished and not request.overwrite:
        raise ConfigError(f"{scrub_url(url)} already holds a finished dataset ({', '.join(sorted(finished))}); "
                          "choose another URL or pass --overwrite to replace it")
    if listing and not finished and not (request.resume or request.overwrite):
        raise ConfigError(f"{scrub_url(url)} holds {len(listing)} object(s) but no manifest (an interrupted upload?); "
                          "run the same command with --resume to finish it, or --overwrite to upload everything again "
                          "(objects of the same name are replaced, others left alone)")
    if request.overwrite:
        _remove_datasets(store, finished)
        listing = {}  # everything is uploaded again
        shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True, exist_ok=True)
    if not (request.resume and state.classify(staging) == state.FINISHED):
        resume = request.resume and state.classify(staging) == state.UNFINISHED
        local = dataclasses.replace(request, out=str(staging), overwrite=False, resume=resume)
        code = convert_fn(local)
        if code != 0 or state.classify(staging) != state.FINISHED:
            return code  # files skipped: no manifest yet (finish with --resume --allow-skips)
    sent = upload_dataset(staging, store, listing)
    if not request.quiet:
        print(f"fastdata convert: uploaded {sent} file(s) to {scrub_url(url)} (manifest last)")
    shutil.rmtree(staging, ignore_errors=True)
    return 0


def _remove_datasets(store: Store, manifests: list[str]) -> None:
    """Delete each manifest first (readers stop seeing the dataset before any
    of it changes), then the files it lists; other objects are not fastdata's
    to delete and stay."""
    listing = store.listing()
    for name in manifests:
        prefix = name[: -len(MANIFEST_NAME)]
        manifest = Manifest.from_json(store.read_bytes(name).decode("utf-8"), source=scrub_url(store.url_of(name)))
        store.remove(name)
        directories = {s.file for s in manifest.shards} if registry.get(manifest.format).data_name else set()
        for file in manifest.files():
            if file in directories:  # a shard that is a directory (LMDB): every object under it
                for member in [n for n in listing if n.startswith(f"{prefix}{file}/")]:
                    store.remove(member)
            else:
                store.remove(prefix + file)


def upload_dataset(local: Path, store: Store, listing: dict[str, int]) -> int:
    """Upload every file under ``local`` except fastdata's state files, the
    manifests last; files already there with the same size are skipped."""
    files = [p for p in sorted(local.rglob("*")) if p.is_file() and not any(part.startswith(".fastdata") for part in p.parts)]
    manifests = [p for p in files if p.name == MANIFEST_NAME]
    sent = 0
    for path in [p for p in files if p.name != MANIFEST_NAME] + manifests:
        name = path.relative_to(local).as_posix()
        if path.name != MANIFEST_NAME and listing.get(name) == path.stat().st_size:
            continue
        store.upload(str(path), name)
        sent += 1
    return sent
