"""``fastdata verify PATH [--decode]``: read everything, report every problem with its place.

For a dataset directory: the manifest parses; each shard exists, has the
manifest's size and sha256 and record count, and its index; every record
reads (the format readers check framing and CRCs); int labels are valid
class indices; the recordio DALI index covers every record. For a single
file: every record reads and an existing index agrees with a fresh scan.
``--decode`` also decodes every image. Exit 0 only when nothing was found.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from fastdata.errors import FastDataError, ManifestError
from fastdata.formats._atomic import sha256_file
from fastdata.formats.manifest import MANIFEST_NAME

from .probe import DATASET, SPLITS, Target, identify, image_kind, open_dataset_shard

MAX_PER_SHARD = 20  # problems listed per shard before the rest are only counted


class Findings:
    """Problems found so far, printed as they come."""

    def __init__(self, stdout: TextIO) -> None:
        self.stdout = stdout
        self.problems = 0
        self.records = 0
        self.shards = 0

    def problem(self, where: str | os.PathLike[str], message: str) -> None:
        self.problems += 1
        print(f"fastdata verify: PROBLEM {where}: {message}", file=self.stdout)


def run(path: str, *, decode: bool = False, quiet: bool = False, stdout: TextIO | None = None) -> int:
    """Verify ``path``; returns 0 when clean, 1 when problems were found.

    Raises:
        FastDataError: ``path`` is missing, of no known format or an unfinished
            conversion (exit 2, as ``inspect`` does). A dataset directory whose
            manifest cannot be read is a problem found (1).
    """
    stdout = stdout or sys.stdout
    findings = Findings(stdout)
    decoder = image_decoder() if decode else None
    try:
        target = identify(path)
    except ManifestError as exc:
        manifest = Path(path) / MANIFEST_NAME
        if not manifest.is_file():
            raise  # not a dataset (yet): an error, as for inspect
        findings.problem(manifest, str(exc).removeprefix(f"{manifest}: "))  # a damaged dataset: a finding
        return 1
    if target.kind == SPLITS:
        for directory in target.splits.values():
            _verify_dataset(identify(directory), findings, decoder, quiet)
    elif target.kind == DATASET:
        _verify_dataset(target, findings, decoder, quiet)
    else:
        _verify_file(target, findings, decoder)
    checked = "read and decoded" if decode else "read"
    if findings.problems:
        print(
            f"fastdata verify: {path}: {findings.problems} problem(s) found "
            f"({findings.records} records in {findings.shards} shard(s) {checked})",
            file=stdout,
        )
        return 1
    if not quiet:
        print(f"fastdata verify: {path}: OK, {findings.records} records in {findings.shards} shard(s) {checked}", file=stdout)
    return 0


def image_decoder() -> Callable[[bytes], Any]:
    """``decode(data)`` raising on a bad image: ``fastdata.decode`` when it offers one, else Pillow."""
    try:
        from fastdata.decode import decode as fast_decode  # type: ignore[attr-defined]
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


def _verify_dataset(target: Target, findings: Findings, decoder: Callable | None, quiet: bool) -> None:
    m, directory = target.manifest, target.path
    counts: Counter = Counter()
    for i, info in enumerate(m.shards):
        path = directory / info.file
        findings.shards += 1
        if not path.exists():
            findings.problem(path, "shard listed in the manifest is missing")
            continue
        data_file = path / "data.mdb" if path.is_dir() else path
        size = data_file.stat().st_size if data_file.is_file() else -1
        if size != info.bytes:
            findings.problem(data_file, f"size is {size} bytes, the manifest says {info.bytes}")
        elif sha256_file(data_file) != info.sha256:
            findings.problem(data_file, "sha256 differs from the manifest's: the file changed or is damaged")
        if info.index and not (directory / info.index).is_file():
            findings.problem(directory / info.index, "index file listed in the manifest is missing")
        try:
            reader = open_dataset_shard(directory, m, i)
            n = len(reader)
        except (FastDataError, OSError) as exc:
            findings.problem(path, f"cannot open: {exc}")
            continue
        if n != info.records:
            findings.problem(path, f"holds {n} records, the manifest says {info.records}")
        _read_all(path, n, reader.sample, findings, decoder, m.classes, counts)
        close = getattr(reader, "close", None)
        if close:
            close()
    dali = m.extra.get("dali_index")
    if dali:
        _check_dali_index(directory / dali, m.num_samples, findings)
    if not quiet and m.classes:
        shown = ", ".join(f"{c} {counts.get(k, 0)}" for k, c in enumerate(m.classes[:20]))
        print(f"fastdata verify: {directory}: per class: {shown}{' ...' if len(m.classes) > 20 else ''}", file=findings.stdout)


def _read_all(
    path: Path,
    n: int,
    read: Callable[[int], tuple[bytes | None, Any]],
    findings: Findings,
    decoder: Callable | None,
    classes: list[str],
    counts: Counter,
) -> None:
    listed = 0
    for j in range(n):
        try:
            data, label = read(j)
            findings.records += 1
            if isinstance(label, int) and classes:
                if not 0 <= label < len(classes):
                    raise ValueError(f"label {label} is not a class index (0..{len(classes) - 1})")
                counts[label] += 1
            if decoder is not None and data is not None:
                try:
                    decoder(bytes(data))
                except Exception as exc:  # noqa: BLE001 - any decoder failure is a finding, named with its record
                    raise ValueError(f"image does not decode ({type(exc).__name__}: {exc})") from None
        except (FastDataError, ValueError, OSError) as exc:
            listed += 1
            if listed <= MAX_PER_SHARD:
                findings.problem(path, f"record {j}: {exc}")
            else:
                findings.problems += 1
    if listed > MAX_PER_SHARD:
        print(f"fastdata verify: ... and {listed - MAX_PER_SHARD} more problem(s) in {path}", file=findings.stdout)


def _check_dali_index(path: Path, expected: int, findings: Findings) -> None:
    if not path.is_file():
        findings.problem(path, "the DALI index named in the manifest is missing")
        return
    lines = [ln for ln in path.read_text(encoding="ascii", errors="replace").splitlines() if ln.strip()]
    if len(lines) != expected:
        findings.problem(path, f"has {len(lines)} entries for {expected} records")


def _verify_file(target: Target, findings: Findings, decoder: Callable | None) -> None:
    findings.shards += 1
    if target.format == "recordio":
        _verify_recordio(target, findings, decoder)
    elif target.format == "tfrecord":
        _verify_tfrecord(target, findings, decoder)
    else:
        from fastdata.formats.lmdb import open_shard

        try:
            reader = open_shard(target.path)
            n = len(reader)
        except FastDataError as exc:
            findings.problem(target.path, str(exc))
            return
        _read_all(target.path, n, reader.sample, findings, decoder, [], Counter())
        reader.close()


def _verify_recordio(target: Target, findings: Findings, decoder: Callable | None) -> None:
    from fastdata.formats.recordio import Reader, build_index, parse_index, unpack

    rec = target.data_file
    idx = rec.with_suffix(".idx")
    if idx.is_file():
        with tempfile.TemporaryDirectory() as tmp:
            try:
                scanned = parse_index(build_index(rec, Path(tmp) / "scan.idx"))[1]
            except FastDataError as exc:
                findings.problem(rec, f"scanning the file: {exc}")
                return
        try:
            listed = parse_index(idx)[1]
        except FastDataError as exc:
            findings.problem(idx, str(exc))
        else:
            if sorted(listed.tolist()) != scanned.tolist():
                findings.problem(idx, f"lists {len(listed)} record offsets; the file holds {len(scanned)} records at other offsets")
    try:
        reader = Reader(rec)
        n = len(reader)
    except FastDataError as exc:
        findings.problem(rec, str(exc))
        return

    def read(j: int) -> tuple[bytes | None, Any]:
        payload = reader[j]  # raises FormatError for damaged framing
        if decoder is None:
            return payload, None
        try:
            image = unpack(payload)[1]
        except FastDataError:
            return None, None  # not an image record: framing is all there is to check
        return (image if image_kind(image) != "?" else None), None

    _read_all(rec, n, read, findings, decoder, [], Counter())
    reader.close()


def _verify_tfrecord(target: Target, findings: Findings, decoder: Callable | None) -> None:
    from fastdata.formats.tfrecord import (
        Reader,
        build_index,
        default_index_path,
        parse_example,
    )

    path = target.data_file
    index = Path(default_index_path(path))
    if index.is_file() and not target.compressed:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fresh = Path(build_index(path, Path(tmp) / "scan.idx"))
                if fresh.read_bytes() != index.read_bytes():
                    findings.problem(index, "disagrees with a fresh scan of the file (stale or damaged index)")
            except FastDataError as exc:
                findings.problem(path, str(exc))
                return
    position = 0
    try:
        for record in Reader(path, index=None if target.compressed else (index if index.is_file() else None)):
            findings.records += 1
            if decoder is not None:
                encoded = parse_example(record).get("image/encoded")
                if isinstance(encoded, list) and encoded:
                    try:
                        decoder(encoded[0])
                    except Exception as exc:  # noqa: BLE001 - a decoder failure is a finding
                        findings.problem(path, f"record {position}: image does not decode ({type(exc).__name__}: {exc})")
            position += 1
    except FastDataError as exc:
        # TFRecord has no resynchronisation marker: nothing after a damaged record can be trusted.
        findings.problem(path, f"record {position}: {exc} (records after it were not read)")
