"""RecordIO's hooks for the registry: detection, ``fastdata inspect`` /
``verify`` / ``index`` of a single ``.rec``, and what DALI's mxnet reader needs."""

from __future__ import annotations

import functools
import mmap
import os
from pathlib import Path
from typing import Any

from ...errors import FastDataError, FormatError
from ..checksums import mismatch, record_crc
from ..hooks import Detected, FileCheck, Inspected, Problem, existing, json_label, truncated_file
from ..images import image_kind
from ..manifest import MANIFEST_NAME, Manifest
from .framing import HEADER, LENGTH_BITS, LENGTH_MASK, MAGIC, MAGIC_BYTES, join, walk
from .index import build_index, default_index_path, parse_index
from .irheader import IR_SIZE, unpack
from .reader import Reader
from .shards import DALI_INDEX_KEY


def sniff(head: bytes) -> bool:
    """A RecordIO file starts with the magic word."""
    return head[:4] == MAGIC_BYTES


def claim(path: Path) -> Detected | None:
    """The ``.rec`` beside a given ``.idx``."""
    rec = path.with_suffix(".rec")
    if path.suffix == ".idx" and rec.is_file():
        return Detected("recordio", rec, data_file=rec)
    return None


def inspect(found: Detected, n: int) -> tuple[int, list[Inspected]]:
    """Record count and the first ``n`` records: key, offset, IRHeader, image."""
    reader = Reader(found.shard_file)
    shown = []
    for i in range(min(n, len(reader))):
        payload = reader[i]
        fields: dict[str, Any] = {"position": i, "key": int(reader.key(i)), "offset": int(reader.offset(i)), "bytes": len(payload)}
        try:
            header, image = unpack(payload)
        except FastDataError:
            fields["payload"] = f"not an image record (shorter than the {IR_SIZE}-byte IRHeader)"
            shown.append(Inspected(fields))
            continue
        fields |= {"flag": header.flag, "label": json_label(header.label), "id": int(header.id), "image_bytes": len(image)}
        shown.append(Inspected(fields, image))
    count = len(reader)
    reader.close()
    return count, shown


class PayloadReader:
    """A foreign ``.rec`` whose payloads may not be image records, for ``verify``:
    ``sample(j)`` reads record ``j`` (framing checked) and gives ``(image, None)``,
    the image None when the payload is no IRHeader + image file.

    ``bounds`` (record starts, then where the last record ends), from a scan
    of the file, reads the records without an ``.idx``: those a truncated
    file still holds. Without them, a file with no ``.idx`` that ends inside
    a record is read up to it: ``truncated`` is then True and ``notes`` says
    which records survive, as ``(file, message)`` for ``verify`` to report.
    """

    def __init__(self, rec: str | os.PathLike[str], bounds: tuple[int, ...] | None = None) -> None:
        self.truncated, self.notes = bounds is not None, []
        self.reader: Reader | _Scanned
        if bounds is not None:
            self.reader = _Scanned(os.fspath(rec), bounds)
        else:
            try:
                self.reader = Reader(rec)  # scans the file when it has no .idx
            except FormatError as exc:
                if not _cut_short(exc):
                    raise
                starts, size, stop = _scan(Path(rec))
                if stop is None or stop.offset is None or not _cut_short(stop):
                    raise
                self.reader = _Scanned(os.fspath(rec), (*starts, stop.offset))
                self.truncated, self.notes = True, [(Path(rec), truncated_file(len(starts), size, stop.offset))]
        self._crcs: memoryview | None = None

    def use_checksums(self, crcs: memoryview | None) -> None:
        self._crcs = crcs

    def __len__(self) -> int:
        return len(self.reader)

    def sample(self, j: int) -> tuple[bytes | None, None]:
        payload = self.reader[j]  # raises FormatError for damaged framing
        if self._crcs is not None and record_crc(payload) != self._crcs[j]:
            raise mismatch(self.reader.rec, j, offset=self.reader.offset(j), key=self.reader.key(j))
        try:
            image = unpack(payload)[1]
        except FastDataError:
            return None, None  # not an image record: framing is all there is to check
        return (image if image_kind(image) != "?" else None), None

    def close(self) -> None:
        self.reader.close()


class _Scanned:
    """The records of a ``.rec`` at ``bounds`` found by a scan (keys: positions)."""

    def __init__(self, rec: str, bounds: tuple[int, ...]) -> None:
        self.rec, self.bounds = rec, bounds
        self._mm: Any = None

    def __getstate__(self) -> dict:
        return {"rec": self.rec, "bounds": self.bounds}

    def __setstate__(self, state: dict) -> None:
        self.rec, self.bounds = state["rec"], state["bounds"]
        self._mm = None

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def __getitem__(self, j: int) -> bytes:
        if self._mm is None:
            with open(self.rec, "rb") as f:
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        spans, _ = walk(self._mm, self.bounds[j], self.bounds[j + 1], self.rec, key=j)
        return join(self._mm, spans)

    def offset(self, j: int) -> int:
        return self.bounds[j]

    def key(self, j: int) -> int:
        return j

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None


def _scan(rec: Path) -> tuple[list[int], int, FormatError | None]:
    """The start of every record a front-to-back scan finds, the file's size,
    and the error that stopped the scan before the end (None when it reached it)."""
    size = os.path.getsize(rec)
    starts: list[int] = []
    if not size:
        return starts, size, None
    with open(rec, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = 0
        try:
            while pos < size:
                end = walk(buf, pos, size, os.fspath(rec), key=len(starts))[1]
                starts.append(pos)
                pos = end
        except FormatError as exc:
            return starts, size, exc
    return starts, size, None


def _cut_short(exc: FormatError) -> bool:
    """Whether a scan stopped because the file ends inside a record (truncated), not at damage."""
    return exc.reason.startswith("truncated record") or "runs past the end of the file" in exc.reason


def verify(found: Detected) -> FileCheck:
    """An existing ``.idx`` must agree with a fresh scan; then every record is
    read. A file that ends inside a record (truncated) is one problem that
    says which records it still holds, and those are read."""
    rec = found.shard_file
    idx = default_index_path(rec)
    if not idx.is_file():  # the reader scans it (once); a truncated file: see PayloadReader
        return FileCheck(records=functools.partial(PayloadReader, rec))
    starts, size, exc = _scan(rec)
    if exc is not None and exc.offset is not None and _cut_short(exc):
        bounds = (*starts, exc.offset)
        return FileCheck(problems=((rec, truncated_file(len(starts), size, exc.offset)),),
                         records=functools.partial(PayloadReader, rec, bounds), truncated=True)
    if exc is not None:
        places, cause, fix = exc.parts(path=rec)
        text = f"scanning the file: {', '.join(places) + ': ' if places else ''}{cause}" + (f"; {fix}" if fix else "")
        return FileCheck(problems=((rec, text),))
    problems: tuple[Problem, ...] = ()
    try:
        listed = parse_index(idx)[1]
    except FastDataError as exc:
        problems = ((idx, str(exc)),)
    else:
        if sorted(listed.tolist()) != starts:
            problems = ((idx, f"lists {len(listed)} record offsets; the file holds {len(starts)} records at other offsets"),)
    return FileCheck(problems=problems, records=functools.partial(PayloadReader, rec))


def record_checksums(found: Detected) -> tuple[list[int], int]:
    """The CRC32C of every payload, in file order (framing checked on the way), and the ``.rec``'s size."""
    reader = Reader(found.shard_file)
    try:
        return [record_crc(reader[i]) for i in range(len(reader))], os.stat(found.shard_file).st_size
    finally:
        reader.close()


def build(found: Detected, out: Path) -> str:
    """Write the ``.idx`` of ``found`` to ``out``: keyed by IRHeader ids when
    the file holds image records (as im2rec writes them), else by position."""
    keys = "id" if _holds_images(found.shard_file) else "position"
    build_index(found.shard_file, out, keys=keys)
    return f"keys = {'IRHeader ids' if keys == 'id' else 'record positions'}"


def _holds_images(rec: Path) -> bool:
    """Whether the first record is an image record (IRHeader, labels, then an image file).

    Reads the first record's framing directly: an existing ``.idx`` may be
    the stale one being replaced, so no Reader (which would trust it) is used.
    """
    with open(rec, "rb") as f:
        head = f.read(HEADER.size)
        if len(head) < HEADER.size:
            return False
        magic, lrecord = HEADER.unpack(head)
        if magic != MAGIC or lrecord >> LENGTH_BITS != 0:  # split record (holds the magic word): not worth guessing
            return False
        payload = f.read(min(lrecord & LENGTH_MASK, 1 << 16))
    if len(payload) < IR_SIZE:
        return False
    flag = int.from_bytes(payload[:4], "little")
    start = IR_SIZE + 4 * flag
    return start < len(payload) and image_kind(payload[start:]) != "?"


def dali_index_paths(directory: Path, manifest: Manifest) -> tuple[str, ...]:
    """The one index over all shards that DALI's mxnet reader takes."""
    # Its offsets count from the start of the concatenated .rec files; the
    # per-shard .idx files do not do.
    name = manifest.extra.get(DALI_INDEX_KEY)
    if not name:
        raise FormatError(
            f"{MANIFEST_NAME} names no DALI index (extra.{DALI_INDEX_KEY})",
            path=directory,
            hint="DALI needs one index over all .rec shards, written at conversion time: re-run the conversion",
        )
    hint = (
        "DALI needs this one index over all .rec shards: rebuild it with "
        f"fastdata.formats.recordio.write_dali_index(directory, Manifest.read(directory).shards, {name!r})"
    )
    return (existing(manifest.path_of(directory, name), "DALI index", hint, manifest.digests.get(name)),)


def check_finalized(directory: Path, manifest: Manifest) -> list[Problem]:
    """The DALI index ``finalize`` wrote has one entry per record."""
    name = manifest.extra.get(DALI_INDEX_KEY)
    if not name:
        return []
    path = Path(directory) / name
    if not path.is_file():
        return [(path, "the DALI index named in the manifest is missing")]
    lines = [ln for ln in path.read_text(encoding="ascii", errors="replace").splitlines() if ln.strip()]
    if len(lines) != manifest.num_samples:
        return [(path, f"has {len(lines)} entries for {manifest.num_samples} records")]
    return []

