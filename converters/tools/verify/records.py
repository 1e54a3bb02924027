"""Reading every record for ``fastdata verify``, decoding in worker processes.

This process opens each shard once, when its turn comes, and checks what
belongs to the shard as a whole (see :func:`check_records`). A task is a run
of records of one shard: whoever runs it (this process, through that same
reader; under ``--decode`` with ``--workers`` > 1 a worker, which opens each
shard it gets once) reads each record (the format readers check framing and
CRCs), checks int labels against the class list and, with ``--decode``,
decodes the image. Only findings travel back, never image bytes, and they
come back in task order, so the report is the same for any ``--workers``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastdata.errors import FastDataError
from fastdata.formats.hooks import CheckedRecords

from ...workers.parallel import ordered_map
from ..probe import close_reader
from .findings import Cut, Note, RecordProblem

CHUNK = 32  # records per task: enough to amortise a round trip, small enough to balance

# This process's settings, installed once by _init.
_STATE: dict[str, Any] = {}


@dataclasses.dataclass(frozen=True)
class ShardSource:
    """One shard's records: ``open()`` (picklable: workers call it) gives a
    reader whose ``sample(j)`` is ``(image bytes or None, label)``; problems
    name ``path``."""

    path: Path
    open: Callable[[], CheckedRecords]


@dataclasses.dataclass
class Chunk:
    """What one task found: ``checked`` records tried, ``records`` read,
    problems (:class:`.RecordProblem`), labels seen; ``notes``: problems of
    the shard as a whole, found before its records were read; ``cut``: the
    shard's data file is shorter than the manifest says (its lost records are
    then reported as one line)."""

    shard: int
    checked: int = 0
    records: int = 0
    problems: list[RecordProblem] = dataclasses.field(default_factory=list)
    labels: Counter = dataclasses.field(default_factory=Counter)
    notes: list[Note] = dataclasses.field(default_factory=list)
    cut: Cut | None = None


class SourceFiles:
    """The converter's record-to-source-file list (``manifest.extra["sources"]``), read once, when first needed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: bytes | None = None  # its bytes, when read already (for its digest)
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        if self._names is None:
            try:
                if self.data is not None:
                    text = self.data.decode("utf-8")
                else:
                    text = self.path.read_text(encoding="utf-8") if self.path is not None else ""
                self._names = [str(json.loads(line)) for line in text.splitlines()]
            except (OSError, ValueError):
                self._names = []
        return self._names

    def at(self, index: int) -> str | None:
        names = self.names()
        return names[index] if 0 <= index < len(names) else None

    def problem(self, expected: int) -> str | None:
        """What is wrong with the list for a dataset of ``expected`` records, or None."""
        if self.path is None:
            return None
        if not self.path.is_file():
            return "the list of source files named in the manifest is missing"
        if len(self.names()) != expected:
            return f"names {len(self.names())} source files for {expected} records (damaged?)"
        return None


def image_decoder() -> Callable[[bytes], Any]:
    """``decode(data)`` raising on a bad image: ``fastdata.decode`` when it offers one, else Pillow."""
    fast_decode: Callable[[bytes], Any] | None
    try:
        from fastdata.decode import decode as fast_decode
    except ImportError:
        fast_decode = None
    if callable(fast_decode):
        return fast_decode
    from PIL import Image

    def pillow_decode(data: bytes) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            img = Image.open(io.BytesIO(data))
            img.load()
        return img

    return pillow_decode


@dataclasses.dataclass
class Opened:
    """A shard as this process opened it for ``verify``: the reader the
    records are read through (None when it would not open), what was found
    before reading them, and its :class:`.Cut` when it is truncated."""

    reader: CheckedRecords | None
    notes: list[Note] = dataclasses.field(default_factory=list)
    cut: Cut | None = None


def check_records(
    sources: list[ShardSource],
    prepare: Callable[[int], Opened],
    *,
    total: int,
    classes: list[str],
    decode: bool,
    workers: int,
    progress: Callable[[int, int], None],
) -> Iterator[Chunk]:
    """Check every record of each ``sources[k]``; yields a :class:`Chunk` per task, in order, shard after shard.

    ``prepare(k)`` runs in this process when shard ``k`` comes up: it opens
    the shard once (the record count comes from that reader) and checks what
    is checked once per shard (digests; the whole-file one over the reader's
    own mapping), so a shard's bytes come from storage once and are still in
    the page cache when its records are read. Its notes come back first, in a
    Chunk of no records. Without workers the records are read through that
    same reader; workers open the shard themselves (pickled ``source.open``).
    ``total`` (the expected record count) only sizes the worker pool: workers
    are used only under ``decode`` (reading alone costs less than starting
    them). ``progress(records, 0)`` is called after every task.
    """
    workers = min(workers, -(-total // CHUNK)) if decode else 1
    here = workers <= 1
    heads: dict[int, Chunk] = {}
    opened: list[CheckedRecords] = []  # this process's reader of the shard being read

    def tasks() -> Iterator[tuple[int, int, int]]:
        for k in range(len(sources)):
            _close_opened(opened)
            shard = prepare(k)
            heads[k] = Chunk(k, notes=shard.notes, cut=shard.cut)
            yield k, -1, -1
            if shard.reader is None:
                continue
            opened.append(shard.reader)
            if here:
                _STATE["readers"][k] = shard.reader
            n = len(shard.reader)
            yield from ((k, start, min(start + CHUNK, n)) for start in range(0, n, CHUNK))

    def head(task: tuple[int, int, int]) -> Chunk | None:
        return heads.pop(task[0]) if task[1] < 0 else None

    if here:
        run: Callable[[tuple[int, int, int]], Chunk] = lambda task: head(task) or _check_task(task)  # noqa: E731 -- typed here, one line
    else:
        run = _check_task
    results = ordered_map(run, tasks(), workers=workers, init=_init, init_args=(sources, classes, decode), local=head)
    try:
        for chunk in results:
            progress(chunk.checked, 0)
            yield chunk
    finally:
        results.close()
        _close_opened(opened)


def _close_opened(opened: list[CheckedRecords]) -> None:
    """Close this process's reader of the shard read last (held in ``_STATE``, for the tasks run here, only while open)."""
    _STATE.get("readers", {}).clear()
    while opened:
        close_reader(opened.pop())


def _init(sources: list[ShardSource], classes: list[str], decode: bool) -> None:
    _close_readers()
    _STATE.update(sources=sources, classes=classes, decode=decode, readers={})
    _STATE["decoder"] = image_decoder() if decode else None


def _close_readers() -> None:
    readers = _STATE.get("readers", {})
    while readers:
        close_reader(readers.popitem()[1])


def _check_task(task: tuple[int, int, int]) -> Chunk:
    k, start, stop = task
    readers = _STATE["readers"]
    if k not in readers:
        for other in list(readers):  # tasks come shard after shard: keep one reader open
            close_reader(readers.pop(other))
        readers[k] = _STATE["sources"][k].open()
    read = readers[k].sample
    decoder, classes = _STATE["decoder"], _STATE["classes"]
    chunk = Chunk(k, checked=stop - start)
    for j in range(start, stop):
        try:
            data, label = read(j)
            chunk.records += 1
            if isinstance(label, int) and classes:
                if not 0 <= label < len(classes):
                    raise ValueError(f"label {label} is not a class index (0..{len(classes) - 1})")
                chunk.labels[label] += 1
            if decoder is not None and data is not None:
                try:
                    decoder(bytes(data))
                except Exception as exc:  # noqa: BLE001 - any decoder failure is a finding, named with its record
                    raise ValueError(f"image does not decode ({type(exc).__name__}: {exc})") from None
        except (FastDataError, ValueError, OSError) as exc:
            chunk.problems.append(RecordProblem.of(j, exc, _STATE["sources"][k].path))
    return chunk
