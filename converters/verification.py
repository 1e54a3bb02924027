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
``--decode`` also decodes every image. Exit 0 only when nothing was found;
a manifest that cannot be read is an error (exit 2, one line), as for ``inspect``.
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
from typing import TextIO

from fastdata.errors import FastDataError
from fastdata.formats import Manifest, checksums, registry
from fastdata.formats.hooks import FileCheck

from .probe import DATASET, SPLITS, Target, close_reader, identify, shard_opener
from .report import Progress
from .verify_records import Opened, ShardSource, SourceFiles, check_records, image_decoder

MAX_PER_SHARD = 20  # problems listed per shard before the rest are only counted


class Findings:
    """Problems found so far, printed as they come."""

    def __init__(self, stdout: TextIO, stderr: TextIO, *, decode: bool, quiet: bool, workers: int) -> None:
        self.stdout, self.stderr = stdout, stderr
        self.decode, self.quiet, self.workers = decode, quiet, workers
        self.problems = 0
        self.records = 0
        self.shards = 0

    def problem(self, where: str | os.PathLike[str], message: str) -> None:
        self.problems += 1
        print(f"fastdata verify: PROBLEM {where}: {message}", file=self.stdout)


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
            conversion, or a dataset whose manifest cannot be read or does
            not match its checksum (exit 2, as ``inspect`` does; the message
            names the manifest).
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    findings = Findings(stdout, stderr, decode=decode, quiet=quiet, workers=workers)
    target = identify(path)
    if target.kind == SPLITS:
        for directory in target.splits.values():
            _verify_dataset(identify(directory), findings)
    elif target.kind == DATASET:
        _verify_dataset(target, findings)
    else:
        _verify_file(target, findings)
    checked = "read and decoded" if decode else "read"
    if findings.problems:
        print(
            f"fastdata verify: {path}: {findings.problems} problem(s) found "
            f"({findings.records} records in {findings.shards} shard(s) {checked})",
            file=stdout,
        )
        return 1
    if not findings.quiet:
        print(f"fastdata verify: {path}: OK, {findings.records} records in {findings.shards} shard(s) {checked}", file=stdout)
    return 0


def _verify_dataset(target: Target, findings: Findings) -> None:
    m, directory = target.manifest, target.path
    spec = registry.get(m.format)
    starts = list(itertools.accumulate((s.records for s in m.shards), initial=0))  # first record of each shard
    sources = []
    for i, info in enumerate(m.shards):
        opener = shard_opener(directory, m, i)
        if info.checksums:  # workers load it themselves; this process reads it once, in _open_shard
            opener = functools.partial(
                _open_listed, opener, directory / info.checksums, m.digest_of(info.checksums),
                spec.data_file(directory / info.file), directory / info.file,
            )
        sources.append(ShardSource(directory / info.file, opener))
    findings.shards += len(m.shards)
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
    if size != info.bytes:
        notes.append((
            data_file, f"size is {size} bytes, the manifest says {info.bytes}: the shard is truncated or was "
            "replaced; restore it or re-convert the dataset",
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
        reader = spec.open_shard(path, **options)
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
        return Opened(None, notes + [(path, f"cannot open: {exc}")])
    if same is False:
        notes.append(_digest_note(data_file, digest))
    if crcs is not None and callable(use := getattr(reader, "use_checksums", None)):
        try:
            use(checksums.parse(crcs, path=directory / info.checksums, records=n, data_bytes=max(size, 0), data_file=path))
        except FastDataError as exc:
            close_reader(reader)
            return Opened(None, notes + [(path, f"cannot open: {exc}")])
    if n != info.records:
        notes.append((path, f"holds {n} records, the manifest says {info.records}"))
    return Opened(reader, notes)


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


def _open_checked(opener, sidecar: Path, data_file: Path, shard: Path):
    """``opener()`` whose reader checks each record against the shard's checksum file (picklable)."""
    reader = opener()
    use = getattr(reader, "use_checksums", None)
    if callable(use):
        size = data_file.stat().st_size
        use(checksums.load(sidecar, records=len(reader), data_bytes=size, data_file=shard))
    return reader


def _open_listed(opener, sidecar: Path, digest: str | None, data_file: Path, shard: Path):
    """:func:`_open_checked` for a worker reading a dataset's shard: a checksum
    file that is missing or differs from the manifest's ``digest`` is not used,
    as :func:`_open_shard` decided in the main process (picklable)."""
    reader = opener()
    use = getattr(reader, "use_checksums", None)
    data, problem = _read_listed(sidecar.parent, sidecar.name, digest)
    if callable(use) and data is not None and not problem:
        size = data_file.stat().st_size
        use(checksums.parse(data, path=sidecar, records=len(reader), data_bytes=size, data_file=shard))
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
    from when known; returns the label counts."""
    progress = Progress(total, enabled=not findings.quiet, stream=findings.stderr, unit="rec")
    labels: Counter = Counter()
    listed = [0] * len(sources)

    def flush(k: int) -> None:
        if listed[k] > MAX_PER_SHARD:
            print(f"fastdata verify: ... and {listed[k] - MAX_PER_SHARD} more problem(s) in {sources[k].path}", file=findings.stdout)

    shard = None
    try:
        for chunk in check_records(
            sources, prepare, total=total, classes=classes, decode=findings.decode, workers=findings.workers, progress=progress
        ):
            if shard is not None and chunk.shard != shard:
                flush(shard)
            shard = chunk.shard
            for where, message in chunk.notes:
                findings.problem(where, message)
            findings.records += chunk.records
            labels.update(chunk.labels)
            for j, message in chunk.problems:
                listed[shard] += 1
                if listed[shard] <= MAX_PER_SHARD:
                    origin = source_of(shard, j)
                    where = f" (source file {origin})" if origin else ""
                    findings.problem(sources[shard].path, f"record {j}: {message}{where}")
                else:
                    findings.problems += 1
    finally:
        progress.close()
    if shard is not None:
        flush(shard)
    return labels


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
            opener = functools.partial(_open_checked, opener, sidecar, target.found.data_file, path)
        source = ShardSource(path, opener)
        try:
            reader = source.open()  # once: its records are read through it
            n = len(reader)
        except FastDataError as exc:
            findings.problem(source.path, str(exc))
            return
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
        findings.problem(path, f"record {position}: {exc} (records after it were not read)")
