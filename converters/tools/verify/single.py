"""``verify`` of a single shard file (fastdata's or another tool's): what
the format's ``verify`` hook checks (an existing index agrees with a fresh
scan), then every record, through a reader (:mod:`.report`) or front to back
for a format without random access."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

from fastdata.errors import FastDataError
from fastdata.formats import checksums, registry
from fastdata.formats.hooks import FileCheck

from ..probe import Target
from .findings import Findings, RecordProblem, message, record_line
from .openers import open_checked
from .records import Opened, ShardSource, image_decoder
from .report import check_all


def verify_file(target: Target, findings: Findings) -> None:
    findings.shards += 1
    check: FileCheck = registry.get(target.format).verify(target.shard)
    for where, problem in check.problems:
        findings.problem(where, problem)
    path = target.path  # the shard as its format opens it (an LMDB directory, the .rec of a given .idx)
    if check.stream is not None:
        _read_stream(path, check.stream, check.image, findings)
    elif check.records is not None:
        opener, sidecar = check.records, checksums.sidecar_path(path)
        if sidecar.is_file():  # computed by `fastdata index --checksums`: damaged payloads are found too
            opener = functools.partial(open_checked, opener, sidecar, target.shard.shard_file, path, check.truncated)
        source = ShardSource(path, opener)
        try:
            reader = source.open()  # once: its records are read through it
            n = len(reader)
        except FastDataError as exc:
            findings.problem(source.path, message(exc, source.path))
            return
        for where, problem in getattr(reader, "notes", ()):  # found while opening it (a truncated file)
            findings.problem(where, problem)
        check_all([source], lambda k: Opened(reader), n, findings, [])


def _read_stream(path: Path, stream: Callable[[], Iterator[bytes]], image_of: Callable[[bytes], bytes | None] | None,
                 findings: Findings) -> None:
    """Records read front to back, for formats without random access (a
    compressed file); the first damaged record ends the read."""
    decoder = image_decoder() if findings.decode else None
    position = 0
    try:
        for record in stream():
            findings.records += 1
            if decoder is not None and image_of is not None:
                image = image_of(record)
                if image is not None:
                    try:
                        decoder(image)
                    except Exception as exc:  # noqa: BLE001 - a decoder failure is a finding
                        findings.problem(path, f"record {position}: image does not decode ({type(exc).__name__}: {exc})")
            position += 1
    except FastDataError as exc:
        line = record_line(RecordProblem.of(position, exc, path))
        findings.problem(path, f"{line} (records after it were not read)")
