"""Write-then-rename helpers: nothing half-written ever carries a final name.

Renames are atomic whatever the setting below; whether each commit also
waits for the disk (``fsync`` of the file and its directory) is the
process-wide :func:`durable` setting, on by default. The converter turns it
off while it writes shards: an fsync per shard made a pass-through conversion
wait for the disk about as long as it computed (0.66 s for 435 MB here), and
its done records carry the CRC32C digests that ``--resume`` checks instead
(see ``converters/output/state.py``). ``fastdata convert --fsync`` keeps it on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

PARTIAL_SUFFIX = ".partial"

_SETTINGS = {"durable": True}


@contextlib.contextmanager
def durable(enabled: bool) -> Iterator[None]:
    """Within the block, commits of this process fsync (``True``) or only rename (``False``)."""
    before = _SETTINGS["durable"]
    _SETTINGS["durable"] = bool(enabled)
    try:
        yield
    finally:
        _SETTINGS["durable"] = before


def is_durable() -> bool:
    """Whether commits made now wait for the disk (see :func:`durable`)."""
    return _SETTINGS["durable"]


def partial_path(final: str | os.PathLike[str]) -> Path:
    """The temporary name a file or directory is written under before it is final."""
    final = Path(final)
    return final.with_name(final.name + PARTIAL_SUFFIX)


def commit(partial: str | os.PathLike[str], final: str | os.PathLike[str]) -> None:
    """Rename ``partial`` to ``final`` (atomic on POSIX filesystems), after an
    fsync when :func:`is_durable`, and fsync the directory after."""
    partial, final = Path(partial), Path(final)
    sync = _SETTINGS["durable"]
    if partial.is_dir():
        if sync:
            for child in partial.iterdir():
                _fsync(child)
        if final.exists():
            shutil.rmtree(final)
    elif sync:
        _fsync(partial)
    os.replace(partial, final)
    if sync:
        _fsync_dir(final.parent)


@contextlib.contextmanager
def written(*finals: str | os.PathLike[str]) -> Iterator[list[Path]]:
    """Write files (or directories) under their partial names, then give them their final names.

    Yields the partial path of each of ``finals``. When the block ends
    normally each is committed in the order given, so list a shard's data
    file last: whoever sees it under its final name finds its index and
    checksums beside it. When the block raises, every partial is removed
    (leftovers of an interrupted earlier run are removed before it starts).
    """
    partials = [partial_path(f) for f in finals]
    for p in partials:
        remove(p)
    try:
        yield partials
        for p, f in zip(partials, finals):
            commit(p, f)
    except BaseException:
        for p in partials:
            remove(p)
        raise


def sync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory itself (its entries: names renamed into it), not what is in it."""
    _fsync_dir(Path(path))


def sync(path: str | os.PathLike[str]) -> None:
    """fsync a file, or everything under a directory and the directory itself (nothing if it is missing)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            sync(child)
        _fsync_dir(path)
    else:
        _fsync(path)


def remove(path: str | os.PathLike[str]) -> None:
    """Remove a file, link or folder if there is one. One ``lstat`` when there
    is none: a converter clears every name a shard may have left before it
    writes one, and most are absent."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    tmp = partial_path(path)
    tmp.write_text(text, encoding="utf-8")
    commit(tmp, path)


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    import hashlib  # loads OpenSSL (~3 ms): only for sha256 digests, which fastdata does not write

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    if path.is_file():
        with open(path, "rb+") as f:
            os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
