"""Digests the manifest records, checked with each file read once: a listed
file's bytes serve its digest and its use (:func:`read_listed`); a data
file's digest is computed over the mapping its records are then read through
(:func:`reader_matches`), so the pages it pulled in are still cached."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from fastdata.formats import checksums

from .findings import Note


def read_listed(directory: Path, name: str, digest: str | None) -> tuple[bytes | None, list[Note]]:
    """File ``name`` the manifest lists, read once: its bytes (None when it
    cannot be read) and what is wrong with it (missing, or not ``digest``)."""
    path = directory / name
    try:
        data = path.read_bytes()
    except OSError:
        return None, [Note(path, "listed in the manifest but missing: restore it or re-convert the dataset")]
    if digest is not None and not checksums.buffer_matches(data, digest):
        return data, [Note(path, "differs from the digest the manifest records: damaged or replaced; "
                                 "restore it or re-convert the dataset")]
    return data, []


def reader_matches(reader: object, data_file: Path, digest: str) -> bool:
    """Whether ``data_file`` has ``digest``, over ``reader``'s own mapping of
    it; a reader that does not map its data file (LMDB's is liblmdb's own
    map) has it read here, before it touches it, so that what it reads next
    is in the page cache."""
    whole = _mapping(reader)
    return mapped_matches(data_file, digest) if whole is None else _whole_matches(whole, digest)


def mapped_matches(path: Path, digest: str) -> bool:
    """:func:`checksums.matches` through a mapping: the file's pages are read
    into the page cache, not also copied into this process."""
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return checksums.buffer_matches(b"", digest)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as whole:
            return _whole_matches(whole, digest)


def digest_note(data_file: Path, digest: str) -> Note:
    return Note(
        data_file, f"{digest.partition(':')[0]} differs from the manifest's: the file changed or is damaged "
        "(the records below say where; restore it or re-convert)",
    )


def _whole_matches(whole: mmap.mmap | bytes, digest: str) -> bool:
    """Whether a whole mapped file has ``digest``. The kernel is first asked to
    read all of it ahead: page faults alone would pull a cold file in through
    the small readahead window of a mapping, one fault after the other."""
    if isinstance(whole, mmap.mmap) and hasattr(mmap, "MADV_WILLNEED"):
        whole.madvise(mmap.MADV_WILLNEED)
    return checksums.buffer_matches(whole, digest)


def _mapping(reader: object):
    """The whole data file as ``reader`` maps it, or None for a format whose reader does not."""
    mapping = getattr(getattr(reader, "reader", None), "mapping", None)
    return mapping() if callable(mapping) else None
