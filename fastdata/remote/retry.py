"""Retries with exponential backoff inside a bounded total time.

A transient failure (connection refused or reset, a timeout, a 5xx) is tried
again after 0.25 s, 0.5 s, 1 s, ... (capped at ``max_delay``) until
``total_seconds`` have passed since the first attempt; then a
:class:`~fastdata.errors.RemoteError` names the URL and the last cause. A
permanent one (missing object, refused credentials) fails at once. Each
attempt is bounded too: the backends get ``timeout`` as their connect and
read timeouts, so a server that stops answering cannot hang a worker.
"""

from __future__ import annotations

import dataclasses
import errno
import time
from collections.abc import Callable
from typing import TypeGuard, TypeVar

from ..errors import ConfigError, FastDataError, RemoteError
from .urls import scrub, scrub_url

T = TypeVar("T")

# Errors retrying cannot fix: the object is not there, the credentials are
# refused, the protocol cannot do it. Anything else -- a client library's
# odd exception while a server restarts included -- is tried again until the
# budget is spent, then reported with its type and message.
PERMANENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, NotImplementedError,
             FastDataError)
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying one remote operation.

    Attributes:
        total_seconds: give up once this much time has passed since the first
            attempt (the attempt running then finishes or times out first).
        first_delay: the wait after the first failure; doubled after each.
        max_delay: the longest single wait.
        timeout: connect and read timeout of each attempt, in seconds.
    """

    total_seconds: float = 120.0
    first_delay: float = 0.25
    max_delay: float = 8.0
    timeout: float = 30.0

    def __post_init__(self) -> None:
        for name in ("total_seconds", "first_delay", "max_delay", "timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"RetryPolicy.{name} must be positive, got {getattr(self, name)!r}")


class ObjectMissing(FileNotFoundError):
    """The server answered that the object is not there (a 404, or the
    backend's own "no such key"). Only this means "missing on the server": a
    local file error, such as a cache file another process renamed, is never
    taken for it."""


def is_disk_full(exc: BaseException) -> TypeGuard[OSError]:
    return isinstance(exc, OSError) and exc.errno in _DISK_FULL


def call(fn: Callable[[], T], *, url: str, action: str, policy: RetryPolicy, secrets: tuple[str, ...] = ()) -> T:
    """``fn()``, retried on transient errors as ``policy`` allows.

    Raises:
        RemoteError: permission refused at once; transient errors once the
            time budget is spent. The message names ``action``, the URL and
            the cause, with credentials masked.
        ObjectMissing: the server says the object does not exist (callers
            turn it into the error that fits: a missing manifest, a missing shard).
        OSError: the local disk is full (callers name the cache directory).
    """
    start = time.monotonic()
    delay = policy.first_delay
    attempts = 0
    while True:
        attempts += 1
        try:
            return fn()
        except FastDataError:
            raise
        except FileNotFoundError:  # the backend's answer for a missing object
            raise ObjectMissing(scrub_url(url)) from None
        except Exception as exc:
            status = http_status(exc)
            if isinstance(exc, PermissionError) or status in (401, 403):
                raise RemoteError(
                    f"{action} {scrub_url(url)}: access denied ({scrub(describe(exc), secrets)}); check the "
                    "credentials the backend reads (for s3:// the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY "
                    "environment variables or ~/.aws/credentials, for gs:// GOOGLE_APPLICATION_CREDENTIALS)"
                ) from None
            if status == 404:
                raise ObjectMissing(scrub_url(url)) from None
            if isinstance(exc, PERMANENT) or (status is not None and 400 <= status < 500 and status not in (408, 429)):
                raise RemoteError(f"{action} {scrub_url(url)}: {scrub(describe(exc), secrets)}") from None
            if is_disk_full(exc):
                raise
            # connection refused/reset, timeouts, 5xx, 429: worth another try
            elapsed = time.monotonic() - start
            if elapsed + delay > policy.total_seconds:
                raise RemoteError(
                    f"{action} {scrub_url(url)}: still failing after {attempts} attempt(s) in {elapsed:.1f} s "
                    f"(retry budget {policy.total_seconds:g} s): {scrub(describe(exc), secrets)}"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, policy.max_delay)


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an aiohttp/botocore error carries, when it has one."""
    status = getattr(exc, "status", None)
    response = getattr(exc, "response", None)
    if status is None and isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def describe(exc: BaseException) -> str:
    """One line for ``exc``: its type and message, without a traceback."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
