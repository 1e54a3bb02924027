"""A failed download, told to every process that asks for the same file.

The cache's per-file lock makes the processes of a machine (DataLoader
workers, ranks, read-ahead threads) fetch a file one at a time. Without a
shared outcome, each waiter would take the lock after the first one failed
and spend a whole retry budget of its own: with the server down, N workers
learned it after N budgets. So the process that fails writes what happened
beside the lock, and whoever takes the lock within ``remember_seconds`` of it
raises the same error at once; after that, a new attempt is made (the
server may be back, the object re-uploaded). A success needs no record: the
file itself is there.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import FormatError, RemoteError

SUFFIX = ".failed"


def record_path(lock: Path) -> Path:
    return lock.with_name(lock.name + SUFFIX)


def remember(lock: Path, exc: BaseException) -> None:
    """Write ``exc`` (a RemoteError, a FormatError or a missing object) beside ``lock``."""
    doc: dict[str, Any]
    if isinstance(exc, FormatError):
        doc = {"kind": "format", "reason": exc.reason, "path": os.fspath(exc.path) if exc.path else None,
               "hint": exc.hint}
    elif isinstance(exc, RemoteError):
        doc = {"kind": "remote", "message": str(exc)}
    else:
        return
    doc.update(time=time.time(), pid=os.getpid())
    tmp = record_path(lock).with_name(f"{record_path(lock).name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):  # the record only saves time: failing to write it costs one more budget
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, record_path(lock))


def forget(lock: Path) -> None:
    with contextlib.suppress(OSError):
        record_path(lock).unlink()


def recent(lock: Path, remember_seconds: float, asked: float) -> BaseException | None:
    """The error another process met fetching this file less than
    ``remember_seconds`` ago, rebuilt for this process, or None.

    ``asked`` is when this process asked for the file (``time.monotonic()``):
    the message says how long it waited, the real time it took to learn."""
    try:
        doc = json.loads(record_path(lock).read_text(encoding="utf-8"))
        age = time.time() - float(doc["time"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not 0 <= age < remember_seconds:
        return None
    waited = time.monotonic() - asked
    told = (f"met by process {doc.get('pid')} {age:.1f} s ago and shared with this one, which asked "
            f"{waited:.1f} s ago; fastdata tries again after {remember_seconds:g} s")
    if doc.get("kind") == "format":
        return FormatError(f"{doc.get('reason')} ({told})", path=doc.get("path"), hint=doc.get("hint"))
    if doc.get("kind") == "remote":
        return RemoteError(f"{doc.get('message')} ({told})")
    return None
