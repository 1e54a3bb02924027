"""CPU per image of writing one pass-through RecordIO record, path against path, interleaved.

What ``fastdata convert --passthrough --format recordio`` does per image once
the file is read: IRHeader, framing (magic-word search), the record's CRC32C
for the ``.crc`` sidecar and the whole file's CRC32C for the manifest, the
writes, the ``.idx`` line. Rows, each reading every photo from the page cache
and writing one ``.rec`` (thread CPU time, so a busy neighbour costs little):

- ``read``: only reading the files: subtracted from the others in ``write us``.
- ``plain loop``: fastdata.bench's im2rec-like loop (no checksums, no checks),
  the floor conversion is compared with.
- ``old``: the Writer as it was (``pack`` joins header and image, ``bytes.find``
  search, the CRC run twice), rebuilt here from the same framing functions.
- ``portable``: ``Writer.write_parts`` on the portable path (numpy word search, CRC twice).
- ``compiled``: ``Writer.write_parts`` with fastdata.formats._speedups (one CRC pass).
- ``shard portable`` / ``shard compiled``: the converter's per-image work
  around the write as well: read, ``jpeg_check.passthrough_size``, a
  ``Sample``, ``recordio.shards.write_shard`` (one shard: partial names,
  ``.crc`` sidecar, ``.idx`` digest, renames).
- ``jpeg check python`` / ``jpeg check compiled``: converters.jpeg_check's
  structural check alone, on bytes already in memory (no read).

Rounds rotate the order; medians are printed with ratios, and JSON (machine,
versions, every round) goes to ``--json``. Example:

    python benchmarks/record_write_cost.py ../shared/data/photos/hymenoptera/train --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from crc32c import crc32c

import fastdata
from fastdata.formats import speedups
from fastdata.formats.recordio import framing
from fastdata.formats.recordio.irheader import IRHeader, pack, pack_header
from fastdata.formats.recordio.writer import Writer

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".JPG", ".JPEG"}


def _old_write(writer: Writer, payload: bytes, key: int) -> None:
    """Writer.write before write_parts: bytes.find search, CRC over the payload and again over every chunk."""
    cuts = framing._cut_points_find(payload)
    size = len(payload)
    chunks = [framing.HEADER.pack(framing.MAGIC, size), payload, framing.PADDING[framing.padded(size) - size]] if not cuts \
        else framing._split(payload, cuts)
    offset = writer._pos
    for chunk in chunks:
        writer._pos += writer._rec.write(chunk)
    writer.crcs.append(crc32c(payload))
    crc = writer.file_crc
    for chunk in chunks:
        crc = crc32c(chunk, crc)
    writer.file_crc = crc
    writer._keys.add(key)
    writer._idx.write(f"{key}\t{offset}\n")


def _read_only(files: list[str], out: Path) -> None:
    for path in files:
        with open(path, "rb") as f:
            f.read()


def _plain(files: list[str], out: Path) -> None:
    from fastdata.bench.suite import _raw_recordio_append

    _raw_recordio_append(files, out, out.with_suffix(".idx"))


def _old(files: list[str], out: Path) -> None:
    with Writer(out, checksums=True) as w:
        for key, path in enumerate(files):
            with open(path, "rb") as f:
                _old_write(w, pack(IRHeader(0, float(key % 2), key, 0), f.read()), key)


def _parts(compiled: bool):
    def run(files: list[str], out: Path) -> None:
        with speedups.using(compiled), Writer(out, checksums=True) as w:
            for key, path in enumerate(files):
                with open(path, "rb") as f:
                    w.write_parts(pack_header(IRHeader(0, float(key % 2), key, 0)), f.read(), key)
    return run


def _shard(compiled: bool):
    from fastdata.converters.jpeg_check import passthrough_size
    from fastdata.formats.recordio.shards import write_shard
    from fastdata.formats.sample import Sample

    def samples(files: list[str]):
        for key, path in enumerate(files):
            with open(path, "rb") as f:
                data = f.read()
            if passthrough_size(data) is None:
                continue  # the converter would decode it: not timed here
            yield Sample(data, key % 2, key)

    def run(files: list[str], out: Path) -> None:
        with speedups.using(compiled):
            write_shard(out, samples(files))
    return run


def _jpeg_rows(datas: list[bytes]) -> dict:
    from fastdata.converters import jpeg_check

    def timed(compiled: bool):
        def run(files: list[str], out: Path) -> None:
            with speedups.using(compiled):
                for data in datas:
                    jpeg_check.passthrough_size(data)
        return run

    rows = {"jpeg check python": timed(False)}
    if speedups.available():
        rows["jpeg check compiled"] = timed(True)
    return rows


def _machine() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    import crc32c as crc_module

    return {
        "cpu_model": cpu, "cpu_count": os.cpu_count(), "platform": platform.platform(),
        "python": platform.python_version(), "numpy": np.__version__, "crc32c": crc_module.__version__,
        "crc32c_hardware": bool(getattr(crc_module, "hardware_based", False)),
        "fastdata": fastdata.__file__, "commit": commit, "speedups": speedups.status(),
        "load_average": os.getloadavg(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", help="a folder of JPEGs (searched recursively)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=None, help="where the .rec files go (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()

    files = sorted(str(p) for p in Path(args.photos).rglob("*") if p.suffix in IMAGE_SUFFIXES and p.is_file())
    if not files:
        print(f"record_write_cost: no JPEGs under {args.photos}", file=sys.stderr)
        return 2
    datas = [Path(f).read_bytes() for f in files]  # also warms the page cache
    rows = {"read": _read_only, "plain loop": _plain, "old": _old, "portable": _parts(False)}
    if speedups.available():
        rows["compiled"] = _parts(True)
    rows["shard portable"] = _shard(False)
    if speedups.available():
        rows["shard compiled"] = _shard(True)
    else:
        print(f"record_write_cost: no compiled row: {speedups.status()}", file=sys.stderr)
    jpeg_rows = _jpeg_rows(datas)
    rows.update(jpeg_rows)

    times: dict[str, list[float]] = {name: [] for name in rows}
    names = list(rows)
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                out = Path(tmp) / f"{name.replace(' ', '_')}.rec"
                t = time.thread_time()
                rows[name](files, out)
                times[name].append((time.thread_time() - t) / len(files) * 1e6)
                for p in Path(tmp).iterdir():
                    p.unlink()

    med = {name: statistics.median(v) for name, v in times.items()}
    read = med["read"]
    print(f"{len(files)} JPEGs, mean {sum(map(len, datas)) / len(datas) / 1e3:.0f} KB, {args.rounds} rounds; "
          f"thread CPU us per image (median); 'write us' subtracts 'read'; speedups: {speedups.status()}")
    print(f"{'row':<22}{'us/image':>10}{'write us':>10}{'vs old':>9}{'vs plain':>10}")
    for name in names:
        write = med[name] - read if name not in jpeg_rows and name != "read" else med[name]
        old = med["old"] - read
        plain = med["plain loop"] - read
        vs_old = f"{write / old:.2f}x" if name not in jpeg_rows and name != "read" else ""
        vs_plain = f"{write / plain:.2f}x" if name not in jpeg_rows and name != "read" else ""
        print(f"{name:<22}{med[name]:>10.1f}{write:>10.1f}{vs_old:>9}{vs_plain:>10}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": _machine(), "images": len(files), "rounds": args.rounds,
                                               "median_us": med, "us": times}, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
