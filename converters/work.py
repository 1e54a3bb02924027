"""What a worker process does: read each image file and prepare it for storage.

Kept apart from :mod:`.pack` so that a spawned worker imports only Pillow and
this, not the planning and writing machinery.
"""

from __future__ import annotations

import time
from typing import Any

from .normalize import EncodeOptions, prepare, stored_as_is
from .scan import SkippedFile

# Per image: (bytes to store, height, width, normalisation reasons, source size), or the skip reason.
Outcome = tuple[bytes, int, int, tuple[str, ...], int] | str

# This process's settings, installed once by init_worker.
_WORKER: dict[str, Any] = {}


def init_worker(encode: EncodeOptions, delay: float) -> None:
    _WORKER["encode"] = encode
    _WORKER["delay"] = delay


def read_file(path: str) -> bytes:
    """The file's bytes, or SkippedFile saying why it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise SkippedFile(path, "is a directory, not an image file") from None
    except OSError as exc:
        raise SkippedFile(path, f"cannot read: {exc.strerror or exc}") from None


def process_batch(paths: list[str]) -> list[Outcome]:
    """Read and prepare each image, in order (runs in a worker, or in-process for one worker)."""
    encode, delay = _WORKER["encode"], _WORKER["delay"]
    out: list[Outcome] = []
    for path in paths:
        if delay:  # test-only --test-delay: slow enough to be killed mid-run
            time.sleep(delay)
        try:
            data = read_file(path)
            img = prepare(data, path, encode)
        except SkippedFile as exc:
            out.append(exc.reason)
            continue
        out.append((img.data, img.height, img.width, img.reasons, len(data)))
    return out


def batch_in_parent(paths: list[str]) -> list[Outcome] | None:
    """The batch's outcomes when every file is a pass-through JPEG the structural
    check vouches for (reading a file and walking its markers costs less than
    pickling its bytes back from a worker); None sends the batch to a worker.
    """
    encode, delay = _WORKER["encode"], _WORKER["delay"]
    if delay or encode.reencode or encode.verify_decode or encode.restart_markers:
        return None
    out: list[Outcome] = []
    for path in paths:
        try:
            data = read_file(path)
        except SkippedFile:
            return None  # the worker reports it, with the same reason as ever
        kept = stored_as_is(data, encode)
        if kept is None:
            return None
        out.append((kept.data, kept.height, kept.width, kept.reasons, len(data)))
    return out
