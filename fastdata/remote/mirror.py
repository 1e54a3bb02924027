"""A remote dataset seen as a local directory whose shards arrive on first open.

:func:`localize` fetches ``manifest.json`` (and the small files it names but
the list of source files, which an error message fetches when it first needs
it) into ``CACHE/<name>-<hash>/`` with a settings file, ``.fastdata-remote.json``.
Every dataset class then opens that directory like any other; when a shard
is opened, :func:`fastdata.remote.hooks.local_file` finds the settings file
beside it and downloads the shard (checked against the manifest's size and
SHA-256) into the cache. So each rank and each worker fetches only the shards
it reads, and a spawned worker needs nothing but the path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError, FormatError, ManifestError, RemoteError
from ..formats import registry
from ..formats._atomic import remove, write_text_atomic
from ..formats.manifest import MANIFEST_NAME, Manifest
from ..formats.names import entry_inside
from ._forklock import ForkSafeLock
from .cache import Expected, NoRoomAhead, ShardCache
from .locks import lock_path, locked
from .retry import ObjectMissing, RetryPolicy
from .store import Store, without_credentials
from .urls import cache_key, scrub_url

SETTINGS_NAME = ".fastdata-remote.json"
OPEN_TRIES = 3


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/fastdata/remote``, else ``~/.cache/fastdata/remote``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastdata" / "remote"


def localize(
    url: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    storage_options: dict[str, Any] | None = None,
    retry: RetryPolicy | None = None,
) -> str:
    """The local directory that stands for the remote dataset at ``url``.

    Args:
        url: a converted dataset's directory URL (``s3://bucket/prefix``,
            ``gs://...``, ``https://host/path`` or any fsspec protocol).
        cache_dir: where shards are cached; default :func:`default_cache_dir`.
            On a cluster, a fast local disk of each node.
        cache_bytes: most bytes the cache may hold (least-recently-used
            shards are deleted to make room); None: bounded by the disk,
            leaving 512 MiB free.
        storage_options: fsspec options without credentials, e.g.
            ``{"endpoint_url": "http://127.0.0.1:8333"}`` for an S3-compatible store.
        retry: retries and timeouts (default :class:`RetryPolicy`).

    Returns:
        A directory to pass to any dataset class or ``open_dataset``.

    Raises:
        ManifestError: no ``manifest.json`` at ``url``.
        RemoteError: the server cannot be reached within the retry budget or
            refuses the credentials.
        ConfigError: credentials given in ``storage_options``.
    """
    options = _checked_options(storage_options, cache_bytes)
    policy = retry or RetryPolicy()
    store = Store(url, options, policy)
    text, manifest = _remote_manifest(store)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory = root / cache_key(store.url)
    directory.mkdir(parents=True, exist_ok=True)
    settings = {"url": store.url, "options": options, "retry": dataclasses.asdict(policy), "cache_bytes": cache_bytes}
    _record(directory, text, manifest, settings)
    _MIRRORS.pop(str(directory), None)
    mirror = mirror_of(directory)
    assert mirror is not None  # for the type checker: its settings file was written just above
    # the small files a dataset reads without opening a shard, in one round trip; the list of
    # source files (a line per sample, for error messages) comes when a message first needs it
    lazy = manifest.extra.get("sources")
    together([functools.partial(mirror.fetch, name) for name in manifest.extra_files() if name != lazy])
    return str(directory)


def _checked_options(storage_options: dict[str, Any] | None, cache_bytes: int | None) -> dict[str, Any]:
    """A copy of ``storage_options``, refused when it holds credentials (they would be kept in
    the cache's settings file), or when ``cache_bytes`` is not positive."""
    options = without_credentials(storage_options, "fastdata keeps these settings in its cache directory, so give "
                                  "credentials through the backend's environment variables or config files instead "
                                  "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials for s3://)")
    if cache_bytes is not None and cache_bytes <= 0:
        raise ConfigError(f"cache_bytes must be positive, got {cache_bytes}")
    return options


def _remote_manifest(store: Store) -> tuple[str, Manifest]:
    """The dataset's manifest, as its text and parsed (ManifestError when there is none)."""
    try:
        data = store.read_bytes(MANIFEST_NAME)
    except FileNotFoundError:
        raise ManifestError(
            f"{scrub_url(store.url_of(MANIFEST_NAME))}: no manifest; this is not a finished fastdata dataset "
            "(convert one there with `fastdata convert SRC URL`)"
        ) from None
    manifest = Manifest.from_json(data, source=scrub_url(store.url_of(MANIFEST_NAME)))  # not UTF-8: a ManifestError
    return data.decode("utf-8"), manifest


def _record(directory: Path, text: str, manifest: Manifest, settings: dict[str, Any]) -> None:
    """Write the cache's settings and manifest under its lock, first dropping cached files a
    changed manifest no longer vouches for."""
    with locked(lock_path(directory, MANIFEST_NAME)):
        old = directory / MANIFEST_NAME
        if old.exists() and old.read_text(encoding="utf-8") != text:
            try:
                before = Manifest.read(directory)
            except ManifestError:  # unreadable or refused: its names cannot be trusted to delete anything
                before = None
            if before is not None:
                _drop_changed(directory, before, manifest)
        write_text_atomic(directory / SETTINGS_NAME, json.dumps(settings, indent=1) + "\n")
        write_text_atomic(old, text)


def _drop_changed(directory: Path, old: Manifest, new: Manifest) -> None:
    """Delete cached files the new manifest no longer vouches for (both
    manifests' names are checked; a link is removed, never what it points at)."""
    keep = {(s.file, s.bytes, s.sha256, tuple(sorted(s.digests.items()))) for s in new.shards}
    doomed: list[str] = []
    for info in old.shards:
        if (info.file, info.bytes, info.sha256, tuple(sorted(info.digests.items()))) not in keep:
            doomed += [n for n in (info.file, info.index, info.checksums) if n]
    for name in doomed + old.extra_files():
        try:
            remove(entry_inside(directory, name))
        except ManifestError:
            continue


class Mirror:
    """One localized dataset directory: its settings, manifest and cache."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        settings = json.loads((directory / SETTINGS_NAME).read_text(encoding="utf-8"))
        self.store = Store(settings["url"], settings.get("options"), RetryPolicy(**settings.get("retry", {})))
        self.manifest = Manifest.read(directory)
        self.shards = {s.file: s for s in self.manifest.shards}
        self.indexes = {s.index: s for s in self.manifest.shards if s.index}
        self.cache = ShardCache(directory.parent, settings.get("cache_bytes"), evictable_files)
        # name -> (error, monotonic time until which it stands; None: for good)
        self._failed: dict[str, tuple[BaseException, float | None]] = {}

    def fetch(self, name: str, *, ahead: bool = False) -> Path:
        """``directory/name``, downloaded and checked first if needed; a shard
        brings its index along. A failure is remembered: asking again for
        the same file raises the same error instead of downloading again
        (a damaged or missing object for good, a server that cannot be
        reached for one retry budget, after which it is tried again)."""
        remembered = self._failed.get(name)
        if remembered is not None and (remembered[1] is None or time.monotonic() < remembered[1]):
            raise remembered[0]
        policy = self.store.policy
        start, delay = time.monotonic(), policy.first_delay
        while True:
            try:
                return self._fetch(name, ahead)
            except NoRoomAhead:
                raise  # a read-ahead without room now: nothing to remember
            except FormatError as exc:
                self._failed[name] = (exc, None)
                raise
            except RemoteError as exc:
                self._failed[name] = (exc, time.monotonic() + policy.total_seconds)
                raise
            except ObjectMissing:  # the server's answer; a local file error is not this
                if self.store.size(MANIFEST_NAME) is not None:  # the dataset is there, this file is not
                    self._failed[name] = (self.missing(name), None)
                    raise self._failed[name][0] from None
            # no manifest either: a server that is starting up (or a whole dataset being re-uploaded)
            if time.monotonic() - start + delay > policy.total_seconds:
                raise RemoteError(f"downloading {scrub_url(self.store.url_of(name))}: neither it nor the dataset's "
                                  f"{MANIFEST_NAME} is there (for {policy.total_seconds:g} s)")
            time.sleep(delay)
            delay = min(delay * 2, policy.max_delay)

    def _fetch(self, name: str, ahead: bool) -> Path:
        info = self.shards.get(name)
        if info is None:  # a small file: an index, a checksum file, a file named in extra
            return self.cache.fetch(self.directory, name, self.store, self.expected(name), ahead=ahead)
        files = [(data_object(self.manifest, name),
                  Expected(info.bytes, info.data_digest(registry.get(self.manifest.format).data_name)))]
        files += [(small, self.expected(small)) for small in (info.index, info.checksums) if small]
        # the shard and its sidecars at once: one round trip instead of one each
        together([functools.partial(self.cache.fetch, self.directory, f, self.store, e, ahead=ahead) for f, e in files])
        return self.directory / name

    @contextlib.contextmanager
    def opened(self, name: str) -> Iterator[Path]:
        """``directory/name`` fetched (a shard with its sidecars) and kept from
        eviction while the body opens it: a shared lock on each file's lock
        makes :meth:`ShardCache.make_room` pass it by. Without it, another
        thread's or process's download could evict a shard between its fetch
        and its opening (seen under load, with a cache of three shards).

        Raises:
            RemoteError: the files were evicted again each time before they
                could be locked (a cache too small for the readers at once).
            And what :meth:`fetch` raises.
        """
        info = self.shards.get(name)
        names = [name] if info is None else [data_object(self.manifest, name), *(f for f in (info.index, info.checksums) if f)]
        for _ in range(OPEN_TRIES):
            self.fetch(name)
            with contextlib.ExitStack() as pins:
                for n in names:
                    pins.enter_context(locked(lock_path(self.directory, n), shared=True))
                if all(os.path.exists(entry_inside(self.directory, n)) for n in names):
                    yield self.directory / name
                    return
        raise RemoteError(
            f"{scrub_url(self.store.url_of(name))} was evicted from the shard cache {OPEN_TRIES} times between its "
            f"download and its opening: the cache ({self.cache.limit_bytes} bytes) holds too few shards for the "
            "readers of this machine at once. Fix: pass a larger cache_bytes to localize (or fewer workers)"
        )

    def expected(self, name: str) -> Expected:
        """What the small file ``name`` must be: its size and digest from the
        manifest, so no request asks the server for its size (a manifest
        that predates recorded sizes leaves the size to the server)."""
        return Expected(self.manifest.size_of(name), self.manifest.digest_of(name))

    def missing(self, name: str) -> FormatError:
        return FormatError(
            "listed in the manifest but missing on the server",
            path=scrub_url(self.store.url_of(name)),
            hint="the upload was incomplete or the object was deleted; re-upload the dataset",
        )


def together(calls: list[Callable[[], object]]) -> None:
    """Run ``calls`` at once (the first in this thread, each other in its
    own), wait for all, then raise the error of the first that failed, in
    list order: overlapped requests fail as the same requests in series would."""
    errors: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            calls[i]()
        except BaseException as exc:  # noqa: BLE001 - raised below, in this thread
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name="fastdata-fetch", daemon=True) for i in range(1, len(calls))]
    for t in threads:
        t.start()
    if calls:
        run(0)
    for t in threads:
        t.join()
    for exc in errors:
        if exc is not None:
            raise exc


def evictable_files(directory: Path) -> list[str]:
    """The shards and indexes of a localized dataset directory (may be re-fetched)."""
    if not (directory / SETTINGS_NAME).exists():
        return []
    try:
        manifest = Manifest.read(directory)
        data = [data_object(manifest, s.file) for s in manifest.shards]
    except (ManifestError, ConfigError):  # unreadable, or a format this fastdata does not know: leave it alone
        return []
    return data + [s.index for s in manifest.shards if s.index] + [s.checksums for s in manifest.shards if s.checksums]


def data_object(manifest: Manifest, shard: str) -> str:
    """The object holding shard ``shard``'s records, whose size and sha256 the
    manifest records: the shard itself, or the file in it (the format spec's
    ``data_name``, LMDB's ``data.mdb``) where the format's shard is a directory."""
    return registry.get(manifest.format).data_file(shard).as_posix()


_MIRRORS: dict[str, Mirror | None] = {}
_lock = ForkSafeLock()


def mirror_of(directory: str | os.PathLike[str]) -> Mirror | None:
    """The :class:`Mirror` of ``directory`` when it is a localized dataset, else
    None (cached per process: one ``stat`` per directory)."""
    key = os.fspath(directory)
    with _lock:
        if key not in _MIRRORS:
            path = Path(key)
            _MIRRORS[key] = Mirror(path) if (path / SETTINGS_NAME).is_file() else None
        return _MIRRORS[key]
