"""What ``verify`` found and how it says it: :class:`Findings` (counts, and
each problem printed as it comes), a :class:`Note` (a problem of a file as a
whole), a :class:`Cut` (a data file shorter than its manifest says) and a
:class:`RecordProblem` (one record's), printed as one line (:func:`record_line`)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import NamedTuple, TextIO

from fastdata.errors import FormatError
from fastdata.formats import checksums
from fastdata.formats.hooks import readable


@dataclasses.dataclass(frozen=True)
class Note:
    """A problem of a file as a whole (not of one record): ``where`` is the file, ``message`` what is wrong."""

    where: Path
    message: str


@dataclasses.dataclass(frozen=True)
class Cut:
    """A data file shorter than the manifest says: its ``size``, and the
    manifest's ``expected`` bytes and ``records``. Its lost records are said
    in one line (:meth:`note`) once the records that survive are known."""

    data_file: Path
    size: int
    expected: int
    records: int

    def note(self, lost: int, checked: int) -> Note:
        """The line that says which records survive: ``checked`` records were
        found in the file (fewer than the manifest's when the format found only
        those before the cut), the first ``lost`` of them read."""
        survive = readable(lost, max(self.records, checked))
        return Note(
            self.data_file, f"size is {self.size} bytes, the manifest says {self.expected}: truncated; {survive}; "
            "restore the shard from a good copy or re-convert the dataset",
        )


class RecordProblem(NamedTuple):
    """What is wrong with one record, as parts that ``verify`` joins into one
    line with the shard and the record's source file, each fact once:
    ``places`` (a byte offset, a key, another file: what the shard and record
    number do not already say), ``cause`` and ``fix`` (None when the cause says it)."""

    record: int
    places: tuple[str, ...]
    cause: str
    fix: str | None = None

    @classmethod
    def of(cls, record: int, exc: BaseException, shard: str | os.PathLike[str] | None = None) -> RecordProblem:
        """The problem ``exc`` reports with record ``record`` of ``shard``."""
        if isinstance(exc, FormatError):
            if shard is not None and exc.path is not None and Path(exc.path).parent == Path(shard):
                shard = exc.path  # a file inside the shard (an LMDB's data.mdb): the shard names it
            places, cause, fix = exc.parts(path=shard, record=record)
            return cls(record, tuple(places), cause, fix)
        return cls(record, (), str(exc))


class Findings:
    """Problems found so far, printed as they come, and what was read."""

    def __init__(self, stdout: TextIO, stderr: TextIO, *, decode: bool, quiet: bool, workers: int) -> None:
        self.stdout, self.stderr = stdout, stderr
        self.decode, self.quiet, self.workers = decode, quiet, workers
        self.problems = 0
        self.records = 0
        self.shards = 0
        self.unread = 0  # damaged manifests: the shards they list were not read
        self.listed = 0  # records the manifests list (a bare shard lists none)

    def counted(self, checked: str) -> str:
        """``35 of the 36 records listed in 1 shard(s) read``: what was read beside what should have been."""
        if self.listed and self.listed != self.records:
            return f"{self.records} of the {self.listed} records listed in {self.shards} shard(s) {checked}"
        return f"{self.records} records in {self.shards} shard(s) {checked}"

    def problem(self, where: str | os.PathLike[str], message: str) -> None:
        """Print ``PROBLEM where: message``; a message that starts by naming
        ``where`` (an error's own text) does not name it a second time."""
        self.problems += 1
        name = os.fspath(where)
        for lead in (f"{name}: ", f"{name}, "):
            message = message.removeprefix(lead)
        print(f"fastdata verify: PROBLEM {name}: {message}", file=self.stdout)

    def note(self, note: Note) -> None:
        self.problem(note.where, note.message)


def record_line(problem: RecordProblem, origin: str | None = None) -> str:
    """One record's problem as ``verify`` prints it after the shard's name:
    record, byte offset (or key, or another file), source file, cause, fix;
    each once."""
    facts = [f"record {problem.record}", *problem.places]
    if origin:
        facts.append(f"source file {origin}")
    fix = problem.fix.removesuffix(f"; {checksums.VERIFY_LISTS}") if problem.fix else None  # this is verify
    return f"{', '.join(facts)}: {problem.cause}" + (f"; {fix}" if fix else "")


def message(exc: BaseException, path: str | os.PathLike[str]) -> str:
    """``exc``'s message for a line that names ``path`` already: places, cause; fix."""
    if not isinstance(exc, FormatError):
        return str(exc)
    places, cause, fix = exc.parts(path=path)
    return f"{', '.join(places) + ': ' if places else ''}{cause}" + (f"; {fix}" if fix else "")


def cannot_open(exc: BaseException, path: Path) -> Note:
    """Why shard ``path`` does not open, without naming it a second time."""
    return Note(path, f"cannot open: {message(exc, path)}")
