"""The one exception hierarchy users catch: everything fastdata raises on bad
input derives from :class:`FastDataError` and says where and how to fix it."""

from __future__ import annotations

import os


class FastDataError(Exception):
    """Base class of every error fastdata raises on purpose."""


class ConfigError(FastDataError, ValueError):
    """An argument or option that cannot work (wrong value, conflicting options)."""


class MissingDependencyError(FastDataError, ImportError):
    """An optional package is not installed; the message names the pip command."""


class FormatError(FastDataError):
    """A shard, index or record is malformed, truncated or fails its checksum.

    The message names the file, the byte offset and/or key when known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        offset: int | None = None,
        key: object = None,
        hint: str | None = None,
    ) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.offset = offset
        self.key = key
        self.reason = message
        self.hint = hint
        where = []
        if self.path is not None:
            where.append(self.path)
        if offset is not None:
            where.append(f"byte offset {offset}")
        if key is not None:
            where.append(f"key {key!r}")
        text = f"{': '.join([', '.join(where)]) + ': ' if where else ''}{message}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)

    def __reduce__(self):  # keep context across DataLoader worker pickling
        return (_rebuild_format_error, (type(self), self.reason, self.path, self.offset, self.key, self.hint))


def _rebuild_format_error(cls, reason, path, offset, key, hint):
    return cls(reason, path=path, offset=offset, key=key, hint=hint)


class ManifestError(FastDataError):
    """A dataset directory's manifest.json is missing, unreadable or of an unknown version."""


class DecodeError(FastDataError):
    """An image could not be decoded (truncated, corrupt, not an image, or too large)."""


class RemoteError(FastDataError):
    """Object storage or a web server failed (after retries), refused the
    credentials, or the local cache of remote shards is full; the message
    names the URL (without secrets) and the cause."""


__all__ = [
    "ConfigError",
    "DecodeError",
    "FastDataError",
    "FormatError",
    "ManifestError",
    "MissingDependencyError",
    "RemoteError",
]
