"""The one exception hierarchy users catch: everything fastdata raises on bad
input derives from :class:`FastDataError` and says where and how to fix it."""

from __future__ import annotations

import os
import re

_RECORD = re.compile(r"record (\d+): ")


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
        places, cause, fix = self.parts()
        text = f"{', '.join(places)}: {cause}" if places else cause
        if fix:
            text += f" ({fix})"
        super().__init__(text)

    @property
    def record(self) -> int | None:
        """The record number the reason starts with (``"record 12: ..."``), or None."""
        match = _RECORD.match(self.reason)
        return int(match.group(1)) if match else None

    def parts(
        self, *, path: str | os.PathLike[str] | None = None, record: int | None = None
    ) -> tuple[list[str], str, str | None]:
        """The message as ``(places, cause, fix)``, each fact once, less what
        the caller names itself: the file ``path`` and the record ``record``.

        ``places`` are the file (unless it is ``path``), the record (unless it
        is ``record``), ``byte offset N`` and ``key K`` (unless the key is a
        record number said already); ``cause`` is the reason without its
        record number; ``fix`` is the hint. ``fastdata verify`` composes its
        lines from them, so that a record's file and number appear once.
        """
        places: list[str] = []
        if self.path is not None and (path is None or os.path.normpath(self.path) != os.path.normpath(os.fspath(path))):
            places.append(self.path)
        cause, number = self.reason, self.record
        if number is not None:
            lead = _RECORD.match(self.reason)
            cause = self.reason[lead.end():] if lead else self.reason
            if record is None or number != record:
                places.append(f"record {number}")
        if self.offset is not None:
            places.append(f"byte offset {self.offset}")
        if self.key is not None and str(self.key) not in {str(number), str(record)}:
            places.append(f"key {self.key!r}")
        return places, cause, self.hint

    def __reduce__(self):  # keep context across DataLoader worker pickling
        return (_rebuild_format_error, (type(self), self.reason, self.path, self.offset, self.key, self.hint))


def _rebuild_format_error(cls, reason, path, offset, key, hint):
    return cls(reason, path=path, offset=offset, key=key, hint=hint)


class ManifestError(FastDataError):
    """A dataset directory's manifest.json is missing, unreadable or of an unknown version.

    ``damaged`` is True when its content is damaged or was edited (not JSON,
    unknown fields, a checksum that does not match, ...): ``fastdata verify``
    reports that as damage found (exit 1), not as an error (exit 2).
    """

    def __init__(self, message: str, *, damaged: bool = False) -> None:
        super().__init__(message)
        self.damaged = damaged

    def __reduce__(self):
        return (_rebuild_manifest_error, (type(self), str(self), self.damaged))


def _rebuild_manifest_error(cls, message, damaged):
    error = cls(message)
    error.damaged = damaged
    return error


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
