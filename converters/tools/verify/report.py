"""Every record of a list of shards read (and decoded), and what was found
printed shard by shard (:func:`check_all`): at most :data:`MAX_PER_SHARD`
problems a shard, each with the file its record came from when known, and
the records a truncated shard lost as one line that says which survive."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ...conversion.report import Progress
from .findings import Cut, Findings, RecordProblem, record_line
from .records import Chunk, Opened, ShardSource, check_records

MAX_PER_SHARD = 20  # problems listed per shard before the rest are only counted


def check_all(
    sources: list[ShardSource],
    prepare: Callable[[int], Opened],
    total: int,
    findings: Findings,
    classes: list[str],
    source_of: Callable[[int, int], str | None] = lambda k, j: None,
) -> Counter:
    """Open each of ``sources`` once (``prepare``) and read (and decode) every
    record, reporting problems shard by shard with the file each record came
    from (``source_of(shard, record)``) when known; returns the label counts."""
    progress = Progress(total, enabled=not findings.quiet, stream=findings.stderr, unit="rec")
    report = _ShardReport(findings, sources, source_of)
    try:
        for chunk in check_records(
            sources, prepare, total=total, classes=classes, decode=findings.decode, workers=findings.workers, progress=progress
        ):
            report.add(chunk)
    finally:
        progress.close()
    report.end_shard()
    return report.labels


class _ShardReport:
    """The chunks of one shard after the other, printed as they come; a
    truncated shard's problems are held until its lost tail is known (the
    unreadable records from the first that is followed only by unreadable
    ones to the end are one line, not a line each)."""

    def __init__(self, findings: Findings, sources: list[ShardSource], source_of: Callable[[int, int], str | None]) -> None:
        self._findings, self._sources, self._source_of = findings, sources, source_of
        self._listed = [0] * len(sources)  # problems found in each shard
        self.labels: Counter = Counter()
        self._shard: int | None = None  # the shard being read
        self._cut: Cut | None = None
        self._checked = 0
        self._held: list[RecordProblem] = []

    def add(self, chunk: Chunk) -> None:
        if chunk.shard != self._shard:
            self.end_shard()
            self._shard, self._cut, self._checked = chunk.shard, None, 0
        for note in chunk.notes:
            self._findings.note(note)
        if chunk.cut is not None:
            self._cut = chunk.cut
        self._checked += chunk.checked
        self._findings.records += chunk.records
        self.labels.update(chunk.labels)
        for problem in chunk.problems:
            if self._cut is not None:
                self._held.append(problem)
            else:
                self._report(chunk.shard, problem)

    def end_shard(self) -> None:
        """Say what the shard being read has left to say (its lost tail, how many problems went unlisted)."""
        k = self._shard
        if k is None:
            return
        if self._cut is not None:
            lost = _lost_tail(self._held, self._checked)
            for problem in self._held:
                if problem.record < lost:
                    self._report(k, problem)
            self._findings.note(self._cut.note(lost, self._checked))
            self._held.clear()
        if self._listed[k] > MAX_PER_SHARD:
            print(f"fastdata verify: ... and {self._listed[k] - MAX_PER_SHARD} more problem(s) in {self._sources[k].path}",
                  file=self._findings.stdout)

    def _report(self, k: int, problem: RecordProblem) -> None:
        self._listed[k] += 1
        if self._listed[k] <= MAX_PER_SHARD:
            self._findings.problem(self._sources[k].path, record_line(problem, self._source_of(k, problem.record)))
        else:
            self._findings.problems += 1


def _lost_tail(problems: list[RecordProblem], checked: int) -> int:
    """The first record of the run of unreadable records that ends the shard
    (``checked`` when its last record reads)."""
    bad = {p.record for p in problems}
    first = checked
    while first > 0 and first - 1 in bad:
        first -= 1
    return first
