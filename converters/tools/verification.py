"""``fastdata verify PATH [--decode]``: read everything, report every problem with its place.

For a dataset directory: the manifest parses and matches its own checksum;
each shard exists, has the manifest's size, digest (CRC32C, or sha256 in
older manifests) and record count; every other file the manifest lists
(indexes, record checksums, the DALI index, the list of source files) has
its recorded digest; every record reads (the format readers check framing,
CRCs and each record's checksum); int labels are valid
class indices; what the format's ``finalize`` wrote is complete (its
``check_finalized`` hook: RecordIO's DALI index covers every record); the
converter's list of source files has one entry per record, and a problem
with a record names the file it was converted from. For a single
file: what the format's ``verify`` hook checks (an existing index agrees
with a fresh scan), then every record reads.
Each shard is opened once and its bytes read once: the data file's digest
is computed over the mapping its records are then read through (LMDB's, which
liblmdb maps itself, just before), the record count comes from that reader,
and an index or checksum file is read once for its digest and its contents;
shard after shard, so the pages a digest pulled in are still cached when the
records are read, even for a dataset larger than memory.
``--decode`` also decodes every image. Exit 0 only when nothing was found,
1 when something is damaged: a manifest that is damaged or was edited (not
JSON, unknown fields, its checksum) is reported as a problem, as a damaged
shard is (its shards cannot be checked without it); a path that is missing or
of no known format, an unfinished conversion or a manifest of a newer version
is an error (exit 2, one line), as for ``inspect``.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import mmap
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from fastdata.errors import FastDataError, FormatError, ManifestError
from fastdata.formats import MANIFEST_NAME, Manifest, checksums, registry
from fastdata.formats import SampleReader
from fastdata.formats.hooks import Detected, FileCheck, readable

from ..conversion.report import Progress
from ..output.state import SPLIT_NAMES
from .probe import DATASET, Target, close_reader, identify, shard_opener
from .verify_records import Opened, RecordProblem, ShardSource, SourceFiles, check_records, image_decoder

MAX_PER_SHARD = 20  # problems listed per shard before the rest are only counted


class Findings:
    """Problems found so far, printed as they come."""

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


def run(
    path: str,
    *,
    decode: bool = False,
    quiet: bool = False,
    workers: int = 1,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Verify ``path``; returns 0 when clean, 1 when problems were found.

    With ``decode``, ``workers`` processes decode the images. A progress bar
    goes to ``stderr`` when it is a terminal and ``quiet`` is not set, as
    ``fastdata convert`` does.

    Raises:
        FastDataError: ``path`` is missing, of no known format, an unfinished
            conversion, or a dataset whose manifest cannot be read for another
            reason than damage (a newer version, no permission; exit 2, as
            ``inspect`` does; the message names the manifest). A damaged or
            edited manifest is a problem found (returns 1).
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    findings = Findings(stdout, stderr, decode=decode, quiet=quiet, workers=workers)
    splits = _splits(path)
    target = _identify(path, findings) if not splits else None
    if splits:  # OUT/train and OUT/val, each on its own: a damaged manifest in one leaves the other checked
        for directory in splits:
            if (split := _identify(directory, findings)) is not None:
                _verify_dataset(split, findings)
    elif target is None:
        pass
    elif target.kind == DATASET:
        _verify_dataset(target, findings)
    else:
        _verify_file(target, findings)
    checked = "read and decoded" if decode else "read"
    if findings.problems:
        unread = f"; {findings.unread} damaged manifest(s): their shards were not read" if findings.unread else ""
        print(
            f"fastdata verify: {path}: {findings.problems} problem(s) found "
            f"({findings.counted(checked)}{unread})",
            file=stdout,
        )
        return 1
    if not findings.quiet:
        print(f"fastdata verify: {path}: OK, {findings.counted(checked)}", file=stdout)
    return 0


def _splits(path: str | os.PathLike[str]) -> list[Path]:
    """The split datasets (OUT/train, OUT/val) of a ``--val-fraction`` conversion at ``path``, else []."""
    path = Path(path)
    if not path.is_dir() or (path / MANIFEST_NAME).is_file():
        return []
    return [path / s for s in SPLIT_NAMES if (path / s / MANIFEST_NAME).is_file()]


def _identify(path: str | os.PathLike[str], findings: Findings) -> Target | None:
    """:func:`identify`, with a damaged or edited manifest reported as a
    problem found (exit 1: damage, as for any other file of the dataset) and
    None returned; other errors (no such path, an unknown format, an
    unfinished conversion, a manifest of a newer version) raise (exit 2)."""
    try:
        return identify(path)
    except ManifestError as exc:
        if not exc.damaged:
            raise
        where, _, what = str(exc).partition(": ")
        if not what:
            where, what = os.fspath(Path(path) / MANIFEST_NAME), str(exc)
        findings.problem(where, what)
        findings.unread += 1
        return None


def _verify_dataset(target: Target, findings: Findings) -> None:
    m, directory = target.manifest, target.path
    spec = registry.get(m.format)
    starts = list(itertools.accumulate((s.records for s in m.shards), initial=0))  # first record of each shard
    sources = []
    for i, info in enumerate(m.shards):
        opener = shard_opener(directory, m, i)
        data_file = spec.data_file(directory / info.file)
        cut = _shorter(data_file, info.bytes)
        if cut:  # workers read what a truncated shard still holds, as _open_shard does
            opener = functools.partial(_open_surviving, opener, m.format, directory / info.file, data_file)
        if info.checksums:  # workers load it themselves; this process reads it once, in _open_shard
            opener = functools.partial(
                _open_listed, opener, directory / info.checksums, m.digest_of(info.checksums),
                data_file, directory / info.file, cut,
            )
        sources.append(ShardSource(directory / info.file, opener))
    findings.shards += len(m.shards)
    findings.listed += starts[-1]
    own_checks = {m.extra.get("sources"), m.extra.get("dali_index")}  # their absence is reported below
    source_files = SourceFiles(m.sources_file(directory))
    for name in m.extra_files():
        if (directory / name).is_file() or name not in own_checks:
            data, problems = _read_listed(directory, name, m.digests.get(name))
            for where, problem in problems:
                findings.problem(where, problem)
            if name == m.extra.get("sources") and data is not None:
                source_files.data = data  # read once, for its digest and its names
    prepare = functools.partial(_open_shard, spec, directory, m, sources)
    labels = _check_all(sources, prepare, m.num_samples, findings, m.classes, lambda k, j: source_files.at(starts[k] + j))
    if problem := source_files.problem(m.num_samples):
        findings.problem(source_files.path, problem)
    for where, problem in spec.check_finalized(directory, m) if spec.check_finalized else ():
        findings.problem(where, problem)
    if not findings.quiet and m.classes:
        shown = ", ".join(f"{c} {labels.get(k, 0)}" for k, c in enumerate(m.classes[:20]))
        print(f"fastdata verify: {directory}: per class: {shown}{' ...' if len(m.classes) > 20 else ''}", file=findings.stdout)


def _open_shard(spec: registry.FormatSpec, directory: Path, m: Manifest, sources: list[ShardSource], i: int) -> Opened:
    """Shard ``i`` opened once, with what is checked once per shard: its files
    exist, the data file's size and digest (over the reader's own mapping, so
    the records read next find its pages in the page cache), the digests of
    its index and checksum file (that one read once, for its digest and for
    the CRCs the reader checks), and its record count."""
    info, path = m.shards[i], sources[i].path
    if not path.exists():
        return Opened(None, [(path, "shard listed in the manifest is missing: restore it or re-convert the dataset")])
    notes: list[tuple[Path, str]] = []
    data_file = spec.data_file(path)
    size = data_file.stat().st_size if data_file.is_file() else -1
    digest = info.data_digest(spec.data_name)
    cut = None
    if 0 <= size < info.bytes:  # said once its records are read, with the ones that survive
        cut = (data_file, size, info.bytes, info.records)
        digest = None
    elif size != info.bytes:
        notes.append((
            data_file, f"size is {size} bytes, the manifest says {info.bytes}: the shard was replaced or appended "
            "to; restore it or re-convert the dataset",
        ))
        digest = None
    options = spec.shard_options(m)
    if info.index:
        data, problem = _read_listed(directory, info.index, m.digest_of(info.index))
        notes += problem
        if data is not None and "index" in inspect.signature(spec.open_shard).parameters:
            options["index"] = checksums.FileBytes(directory / info.index, data)  # parsed from these bytes
    crcs = None
    if info.checksums:
        crcs, problem = _read_listed(directory, info.checksums, m.digest_of(info.checksums))
        notes += problem
        crcs = None if problem else crcs  # a damaged checksum file checks nothing
    reader, same = None, None
    try:
        opener = functools.partial(spec.open_shard, path, **options)
        reader = _open_surviving(opener, m.format, path, data_file) if cut is not None else opener()
        if digest is not None:
            whole = _mapping(reader)
            # a reader that does not map its data file (LMDB's is liblmdb's own map): read it here,
            # before the reader touches it, so that what it reads next is in the page cache
            same = _mapped_matches(data_file, digest) if whole is None else _whole_matches(whole, digest)
        n = len(reader)
    except (FastDataError, OSError) as exc:
        if reader is not None:
            close_reader(reader)
        if digest is not None and same is None:  # said even of a shard that will not open
            try:
                same = checksums.matches(data_file, digest)
            except OSError:
                pass
        if same is False:
            notes.append(_digest_note(data_file, digest))
        return Opened(None, notes + [(path, _cannot_open(exc, path))], cut)
    if same is False:
        notes.append(_digest_note(data_file, digest))
    if crcs is not None and callable(use := getattr(reader, "use_checksums", None)):
        try:
            use(_sidecar(crcs, directory / info.checksums, n, max(size, 0), path, cut is not None))
        except FastDataError as exc:
            close_reader(reader)
            return Opened(None, notes + [(path, _cannot_open(exc, path))], cut)
    if n != info.records and cut is None:  # a truncated shard's count is said with the records that survive
        notes.append((path, f"holds {n} records, the manifest says {info.records}"))
    return Opened(reader, notes, cut)


def _shorter(data_file: Path, expected: int) -> bool:
    """Whether ``data_file`` exists and is shorter than the manifest's ``expected`` size (truncated)."""
    try:
        return data_file.stat().st_size < expected
    except OSError:
        return False


def _surviving(fmt: str, path: Path, data_file: Path) -> SampleReader | None:
    """A reader of the records a truncated shard still holds, from its
    format's ``verify`` hook (which reads a file without its index), or None
    when the format cannot find them."""
    spec = registry.get(fmt)
    if spec.verify is None:
        return None
    try:
        check = spec.verify(Detected(fmt, path, data_file=data_file))
        if check.records is not None:
            reader = check.records()
            len(reader)
            return reader
        if check.stream is not None:
            return _Streamed(check.stream, check.image)
    except (FastDataError, OSError):
        pass
    return None


class _Streamed:
    """The records a format's ``stream`` yields (up to the first damaged one)
    as a reader of ``(image, None)`` samples: a truncated TFRecord shard."""

    def __init__(self, stream: Callable[[], Any], image: Callable[[bytes], bytes | None] | None) -> None:
        self.records: list[bytes] = []
        self.image = image
        try:
            for record in stream():
                self.records.append(record)
        except FastDataError:
            pass  # the records after a damaged one cannot be found

    def __len__(self) -> int:
        return len(self.records)

    def sample(self, j: int) -> tuple[bytes | None, None]:
        record = self.records[j]
        return (self.image(record) if self.image is not None else None), None


def _open_surviving(opener, fmt: str, path: Path, data_file: Path):
    """``opener()``, or for a truncated shard that will not open so, a reader
    of the records it still holds (picklable: workers call it)."""
    reader = None
    try:
        reader = opener()
        len(reader)  # a truncated shard's index may be refused only when first used
        return reader
    except (FastDataError, OSError):
        if reader is not None:
            close_reader(reader)
        reader = _surviving(fmt, path, data_file)
        if reader is None:
            raise
        return reader


def _sidecar(data: bytes, sidecar: Path, records: int, size: int, shard: Path, truncated: bool) -> memoryview:
    """The CRCs of a checksum file read already; for a ``truncated`` shard, one
    made for the whole file (its digest matched the manifest's) still checks
    the records that are left."""
    if truncated:
        made_for = checksums.described(data)
        if made_for is not None and records <= made_for[0] and size < made_for[1]:
            records, size = made_for
    return checksums.parse(data, path=sidecar, records=records, data_bytes=size, data_file=shard)


def _cannot_open(exc: BaseException, path: Path) -> str:
    """Why shard ``path`` does not open, without naming it a second time."""
    return f"cannot open: {_message(exc, path)}"


def _message(exc: BaseException, path: str | os.PathLike[str]) -> str:
    """``exc``'s message for a line that names ``path`` already: places, cause; fix."""
    if not isinstance(exc, FormatError):
        return str(exc)
    places, cause, fix = exc.parts(path=path)
    return f"{', '.join(places) + ': ' if places else ''}{cause}" + (f"; {fix}" if fix else "")


def _digest_note(data_file: Path, digest: str) -> tuple[Path, str]:
    return (
        data_file, f"{digest.partition(':')[0]} differs from the manifest's: the file changed or is damaged "
        "(the records below say where; restore it or re-convert)",
    )


def _mapped_matches(path: Path, digest: str) -> bool:
    """:func:`checksums.matches` through a mapping: the file's pages are read
    into the page cache, not also copied into this process."""
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return checksums.buffer_matches(b"", digest)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as whole:
            return _whole_matches(whole, digest)


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


def _read_listed(directory: Path, name: str, digest: str | None) -> tuple[bytes | None, list[tuple[Path, str]]]:
    """File ``name`` the manifest lists, read once: its bytes (None when it
    cannot be read) and what is wrong with it (missing, or not ``digest``)."""
    path = directory / name
    try:
        data = path.read_bytes()
    except OSError:
        return None, [(path, "listed in the manifest but missing: restore it or re-convert the dataset")]
    if digest is not None and not checksums.buffer_matches(data, digest):
        return data, [(path, "differs from the digest the manifest records: damaged or replaced; "
                             "restore it or re-convert the dataset")]
    return data, []


def _open_checked(opener, sidecar: Path, data_file: Path, shard: Path, truncated: bool = False):
    """``opener()`` whose reader checks each record against the shard's
    checksum file (picklable). For a ``truncated`` shard, a checksum file made
    for the whole file checks the records that are left."""
    reader = opener()
    use = getattr(reader, "use_checksums", None)
    truncated = truncated or getattr(reader, "truncated", False)  # found so by the reader itself
    if callable(use):
        size = data_file.stat().st_size
        if truncated:
            use(_sidecar(sidecar.read_bytes(), sidecar, len(reader), size, shard, truncated))
        else:
            use(checksums.load(sidecar, records=len(reader), data_bytes=size, data_file=shard))
    return reader


def _open_listed(opener, sidecar: Path, digest: str | None, data_file: Path, shard: Path, truncated: bool = False):
    """:func:`_open_checked` for a worker reading a dataset's shard: a checksum
    file that is missing or differs from the manifest's ``digest`` is not used,
    as :func:`_open_shard` decided in the main process (picklable)."""
    reader = opener()
    use = getattr(reader, "use_checksums", None)
    data, problem = _read_listed(sidecar.parent, sidecar.name, digest)
    if callable(use) and data is not None and not problem:
        size = data_file.stat().st_size
        use(_sidecar(data, sidecar, len(reader), size, shard, truncated))
    return reader


def _check_all(
    sources: list[ShardSource],
    prepare: Callable[[int], Opened],
    total: int,
    findings: Findings,
    classes: list[str],
    source_of: Callable[[int, int], str | None] = lambda k, j: None,
) -> Counter:
    """Open each of ``sources`` once (``prepare``) and read (and decode) every
    record, reporting problems shard by shard with the file each record came
    from when known; returns the label counts.

    The records a truncated shard lost (the unreadable ones from the first
    that is followed only by unreadable ones to the end) are one line that
    says which records survive, not a line each."""
    progress = Progress(total, enabled=not findings.quiet, stream=findings.stderr, unit="rec")
    labels: Counter = Counter()
    listed = [0] * len(sources)
    held: list[RecordProblem] = []  # a truncated shard's problems, until its lost tail is known
    state: dict[str, Any] = {"shard": None, "cut": None, "checked": 0}

    def report(k: int, problem: RecordProblem) -> None:
        listed[k] += 1
        if listed[k] <= MAX_PER_SHARD:
            findings.problem(sources[k].path, record_line(problem, source_of(k, problem.record)))
        else:
            findings.problems += 1

    def flush(k: int) -> None:
        if state["cut"] is not None:
            lost = _lost_tail(held, state["checked"])
            for problem in held:
                if problem.record < lost:
                    report(k, problem)
            findings.problem(*_truncation(state["cut"], lost, state["checked"]))
            held.clear()
        if listed[k] > MAX_PER_SHARD:
            print(f"fastdata verify: ... and {listed[k] - MAX_PER_SHARD} more problem(s) in {sources[k].path}", file=findings.stdout)

    try:
        for chunk in check_records(
            sources, prepare, total=total, classes=classes, decode=findings.decode, workers=findings.workers, progress=progress
        ):
            if state["shard"] is not None and chunk.shard != state["shard"]:
                flush(state["shard"])
            if chunk.shard != state["shard"]:
                state.update(shard=chunk.shard, cut=None, checked=0)
            for where, message in chunk.notes:
                findings.problem(where, message)
            if chunk.cut is not None:
                state["cut"] = chunk.cut
            state["checked"] += chunk.checked
            findings.records += chunk.records
            labels.update(chunk.labels)
            for problem in chunk.problems:
                if state["cut"] is not None:
                    held.append(problem)
                else:
                    report(chunk.shard, problem)
    finally:
        progress.close()
    if state["shard"] is not None:
        flush(state["shard"])
    return labels


def record_line(problem: RecordProblem, origin: str | None = None) -> str:
    """One record's problem as ``verify`` prints it after the shard's name:
    record, byte offset (or key, or another file), source file, cause, fix;
    each once."""
    facts = [f"record {problem.record}", *problem.places]
    if origin:
        facts.append(f"source file {origin}")
    fix = problem.fix.removesuffix(f"; {checksums.VERIFY_LISTS}") if problem.fix else None  # this is verify
    return f"{', '.join(facts)}: {problem.cause}" + (f"; {fix}" if fix else "")


def _lost_tail(problems: list[RecordProblem], checked: int) -> int:
    """The first record of the run of unreadable records that ends the shard
    (``checked`` when its last record reads)."""
    bad = {p.record for p in problems}
    first = checked
    while first > 0 and first - 1 in bad:
        first -= 1
    return first


def _truncation(cut: tuple[Path, int, int, int], lost: int, checked: int) -> tuple[Path, str]:
    """The line for a data file shorter than the manifest says: which records
    survive. ``checked`` records were found in it (fewer than the manifest's
    when the format found only those before the cut), the first ``lost``
    of them read."""
    data_file, size, expected, records = cut
    records = max(records, checked)
    survive = readable(lost, records)
    return (
        data_file, f"size is {size} bytes, the manifest says {expected}: truncated; {survive}; "
        "restore the shard from a good copy or re-convert the dataset",
    )


def _verify_file(target: Target, findings: Findings) -> None:
    findings.shards += 1
    check: FileCheck = registry.get(target.format).verify(target.found)
    for where, problem in check.problems:
        findings.problem(where, problem)
    path = target.path  # the shard as its format opens it (an LMDB directory, the .rec of a given .idx)
    if check.stream is not None:
        _read_stream(path, check, findings)
    elif check.records is not None:
        opener, sidecar = check.records, checksums.sidecar_path(path)
        if sidecar.is_file():  # computed by `fastdata index --checksums`: damaged payloads are found too
            opener = functools.partial(_open_checked, opener, sidecar, target.found.data_file, path, check.truncated)
        source = ShardSource(path, opener)
        try:
            reader = source.open()  # once: its records are read through it
            n = len(reader)
        except FastDataError as exc:
            findings.problem(source.path, _message(exc, source.path))
            return
        for where, problem in getattr(reader, "notes", ()):  # found while opening it (a truncated file)
            findings.problem(where, problem)
        _check_all([source], lambda k: Opened(reader), n, findings, [])


def _read_stream(path: Path, check: FileCheck, findings: Findings) -> None:
    """Records read front to back, for formats without random access (a
    compressed file); the first damaged record ends the read."""
    decoder = image_decoder() if findings.decode else None
    position = 0
    try:
        for record in check.stream():
            findings.records += 1
            if decoder is not None and check.image is not None:
                image = check.image(record)
                if image is not None:
                    try:
                        decoder(image)
                    except Exception as exc:  # noqa: BLE001 - a decoder failure is a finding
                        findings.problem(path, f"record {position}: image does not decode ({type(exc).__name__}: {exc})")
            position += 1
    except FastDataError as exc:
        line = record_line(RecordProblem.of(position, exc, path))
        findings.problem(path, f"{line} (records after it were not read)")
