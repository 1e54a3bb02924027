"""One remote directory (``s3://bucket/prefix``, ``https://host/path``...) read
and written through fsspec, every call retried as a :class:`RetryPolicy` says.

fsspec and the protocol's backend are imported on first use, so ``import
fastdata`` and local datasets need neither; a missing one raises
:class:`~fastdata.errors.MissingDependencyError` with the install line.
Credentials are never passed here: each backend reads its usual environment
variables and config files (``AWS_*`` and ``~/.aws`` for S3,
``GOOGLE_APPLICATION_CREDENTIALS`` for GCS, ``~/.netrc`` for HTTP).
"""

from __future__ import annotations

import errno
import hashlib
import os
from typing import Any

from .._optional import require
from ..errors import ConfigError, MissingDependencyError
from ._forklock import ForkSafeLock
from .retry import ObjectMissing, RetryPolicy, call
from .urls import join, protocol, scrub

# protocol -> (module its fsspec implementation imports, the pip line that fixes it)
_BACKENDS = {
    "s3": ("s3fs", "remote"),
    "s3a": ("s3fs", "remote"),
    "http": ("aiohttp", "remote"),
    "https": ("aiohttp", "remote"),
    "gs": ("gcsfs", "gcs"),
    "gcs": ("gcsfs", "gcs"),
}
_ENV_PREFIXES = ("AWS_", "GOOGLE_", "GCS", "FSSPEC_", "HTTP_PROXY", "HTTPS_PROXY")
_SECRET_OPTIONS = ("key", "secret", "token", "password", "session_token", "client_secret")

_lock = ForkSafeLock()


def without_credentials(options: dict[str, Any] | None, why: str) -> dict[str, Any]:
    """A copy of fsspec ``options``, refused when it holds credentials: fastdata
    takes them only from each backend's environment and files. ``why`` says
    where the options would have gone and what to do instead.

    Raises:
        ConfigError: naming the credential options.
    """
    copy = dict(options or {})
    secret = sorted(k for k in copy if k in _SECRET_OPTIONS)
    if secret:
        raise ConfigError(f"storage_options {secret} hold credentials; {why}")
    return copy
_filesystems: dict[tuple[int, str, str], Any] = {}


def filesystem(proto: str, options: dict[str, Any], policy: RetryPolicy) -> Any:
    """This process's fsspec filesystem for ``proto`` (cached; rebuilt after a fork)."""
    # the backends read credentials from the environment when they are made: a change makes a new one
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
    key = (os.getpid(), proto, repr(sorted(options.items())) + repr(policy) + hashlib.sha256(repr(env).encode()).hexdigest())
    with _lock:
        fs = _filesystems.get(key)
        if fs is None:
            fs = _make(proto, options, policy)
            _filesystems[key] = fs
        return fs


def _make(proto: str, options: dict[str, Any], policy: RetryPolicy) -> Any:
    fsspec = require("fsspec", extra="remote", purpose=f"reading {proto}:// URLs")
    module, extra = _BACKENDS.get(proto, (None, "remote"))
    if module is not None:
        require(module, extra=extra, purpose=f"{proto}:// URLs")
    kwargs = dict(options)
    if proto in ("s3", "s3a"):
        config = dict(kwargs.pop("config_kwargs", {}) or {})
        config.setdefault("connect_timeout", policy.timeout)
        config.setdefault("read_timeout", policy.timeout)
        config.setdefault("retries", {"total_max_attempts": 1})  # fastdata's RetryPolicy retries
        kwargs["config_kwargs"] = config
    elif proto == "file":  # a folder as a bucket: an object's name makes its folders, as in a bucket
        kwargs.setdefault("auto_mkdir", True)
    elif proto in ("http", "https"):
        import aiohttp

        client = dict(kwargs.pop("client_kwargs", {}) or {})
        client.setdefault("timeout", aiohttp.ClientTimeout(total=None, sock_connect=policy.timeout, sock_read=policy.timeout))
        kwargs["client_kwargs"] = client
    try:
        fs = fsspec.filesystem(proto, skip_instance_cache=True, **kwargs)
    except ImportError as exc:
        raise MissingDependencyError(f"{proto}:// URLs need a package that is not installed ({exc}). "
                                     "Fix: pip install 'fastdata[remote]' (and the fsspec backend it names)") from exc
    except ValueError as exc:  # fsspec: "Protocol not known"
        raise MissingDependencyError(f"{proto}:// is not a protocol fsspec knows ({exc})") from exc
    if hasattr(fs, "retries"):
        fs.retries = 1  # s3fs retries 5 times on its own; one budget (ours) bounds the total
    return fs


def _http_size(fs: Any, url: str) -> int | None:
    """HEAD ``url``; unlike fsspec's ``info`` (which reports every failure,
    a refused connection included, as a missing file) errors keep their kind."""
    from fsspec.asyn import sync
    from fsspec.implementations.http import _file_info

    async def head() -> dict:
        session = await fs.set_session()
        return await _file_info(url, session, **fs.kwargs)

    size = sync(fs.loop, head).get("size")
    return int(size) if size is not None else None


class Store:
    """The objects under one URL. Picklable: holds the URL and settings only.

    Args:
        url: the directory URL, e.g. ``s3://bucket/imagenet/train``.
        options: fsspec storage options without credentials (e.g.
            ``{"endpoint_url": ...}``); credentials come from the backend's
            environment and config files.
        policy: retries and timeouts of every call.
    """

    def __init__(self, url: str, options: dict[str, Any] | None = None, policy: RetryPolicy | None = None) -> None:
        self.url = url.rstrip("/")
        self.options = dict(options or {})
        self.policy = policy or RetryPolicy()

    @property
    def fs(self) -> Any:
        return filesystem(protocol(self.url), self.options, self.policy)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(str(v) for k, v in self.options.items() if k in _SECRET_OPTIONS and v)

    def url_of(self, name: str) -> str:
        return join(self.url, name) if name else self.url

    def _call(self, name: str, action: str, fn):
        return call(fn, url=self.url_of(name), action=action, policy=self.policy, secrets=self.secrets)

    def read_bytes(self, name: str) -> bytes:
        """The whole object ``name`` (small files: manifests, indexes).

        Raises:
            FileNotFoundError: no such object. RemoteError: see :func:`call`.
        """
        url = self.url_of(name)
        # s3fs asks for the size first (a HEAD) to split a large object in parts; these are small
        options = {"max_concurrency": 1} if protocol(url) in ("s3", "s3a") else {}
        return self._call(name, "reading", lambda: self.fs.cat_file(url, **options))

    def size(self, name: str) -> int | None:
        """The size of ``name`` in bytes, or None when it does not exist."""
        url = self.url_of(name)

        def info() -> int | None:
            if protocol(url) in ("http", "https"):
                return _http_size(self.fs, url)
            try:
                return int(self.fs.info(url)["size"])
            except FileNotFoundError:
                return None

        try:
            return self._call(name, "looking up", info)
        except FileNotFoundError:  # an HTTP 404
            return None

    def download(self, name: str, local: str) -> None:
        """Copy object ``name`` to the local file ``local`` (overwritten).

        Raises:
            ObjectMissing: no such object. OSError: the local disk is full,
            or ``local``'s directory went away. RemoteError: see :func:`call`.
        """
        url = self.url_of(name)
        try:
            self._call(name, "downloading", lambda: self.fs.get_file(url, local))
        except ObjectMissing:
            folder = os.path.dirname(local) or "."
            if not os.path.isdir(folder):  # the backend's FileNotFoundError was about our side
                raise OSError(errno.ENOENT, "the cache directory was removed during the download", folder) from None
            raise

    def upload(self, local: str, name: str) -> None:
        url = self.url_of(name)
        self._call(name, "uploading to", lambda: self.fs.put_file(local, url))

    def copy(self, name: str, new: str) -> None:
        """Copy object ``name`` to ``new`` inside the store (S3: CopyObject, no bytes through here)."""
        self._call(name, "copying", lambda: self.fs.copy(self.url_of(name), self.url_of(new)))

    def write_bytes(self, name: str, data: bytes) -> None:
        url = self.url_of(name)
        self._call(name, "writing", lambda: self.fs.pipe_file(url, data))

    def remove(self, name: str) -> None:
        url = self.url_of(name)

        def rm() -> None:
            try:
                self.fs.rm_file(url)
            except FileNotFoundError:
                pass

        self._call(name, "deleting", rm)

    def listing(self) -> dict[str, int]:
        """``{relative name: size}`` of every object under the URL (recursive);
        empty when there is none. Not every protocol can list (plain HTTP cannot)."""
        fs = self.fs
        base = fs._strip_protocol(self.url).rstrip("/")

        def find() -> dict[str, int]:
            try:
                found = fs.find(self.url, detail=True)
            except FileNotFoundError:
                return {}
            return {p[len(base) + 1:]: int(i.get("size") or 0) for p, i in found.items() if p.startswith(base + "/")}

        if hasattr(fs, "invalidate_cache"):
            fs.invalidate_cache()
        return self._call("", "listing", find)

    def scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def __repr__(self) -> str:
        return f"Store({self.scrub(self.url)!r})"
