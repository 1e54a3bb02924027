"""What a second process can add to copying bytes on this machine: the ceiling for 2 conversion workers.

A pass-through conversion is mostly copies: the kernel copies each photo from
the page cache into the worker, and the worker's write copies it back into
the page cache. Two workers gain only what the machine gives two processes
copying at once, so this measures that, with nothing of fastdata's in it:

* ``mem1``, ``mem2``: a 16 MiB ``bytearray`` slice assignment (one memcpy)
  repeated until as many bytes as the photos hold are copied, in 1 process,
  then split over 2 forked processes;
* ``file1``, ``file2``: every photo read with ``os.read`` and appended with
  ``os.write`` to one output file per process (no framing, no Python around
  the bytes), 1 process, then 2 processes with half the files each.

Variants run interleaved (rotating order, one of each per round); each
figure is MB/s of the median round, and the ratio ``x2 / x1`` is what the
second process added. Compare it with ``w2 / w1`` from
``convert_scaling.py``. Results: a table on stdout and JSON (``--json``).

    python benchmarks/copy_ceiling.py [--src DIR] [--rounds 9] [--json out.json]
    python benchmarks/copy_ceiling.py --quick    # a check that it runs: 16 generated photos, 1 round

Without ``--src`` it copies ``--generate`` photo-like JPEGs (``fastdata bench``'s
default set). RESULTS.md's figure read the folder ``convert_scaling.py`` builds
from hymenoptera/train x16 (3,904 files, under its ``--scratch``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from photos import photo_folder

BLOCK = 16 << 20


def split(n: int, parts: int, me: int) -> tuple[int, int]:
    return n * me // parts, n * (me + 1) // parts


def forked(parts: int, work) -> float:
    """Wall seconds of ``work(me)`` run in ``parts`` processes at once (``me`` = 0 .. parts-1)."""
    start = time.perf_counter()
    children = []
    for me in range(1, parts):
        pid = os.fork()
        if pid == 0:
            try:
                work(me)
            finally:
                os._exit(0)
        children.append(pid)
    work(0)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        if status:
            raise SystemExit(f"a copying process failed (status {status})")
    return time.perf_counter() - start


def memcpy_work(total: int, parts: int):
    blocks = max(parts, total // BLOCK)

    def work(me: int) -> None:
        src, dst = bytes(os.urandom(BLOCK)), bytearray(BLOCK)
        lo, hi = split(blocks, parts, me)
        for _ in range(lo, hi):
            dst[:] = src
    return work, blocks * BLOCK


def file_work(files: list[str], out_dir: str, parts: int):
    def work(me: int) -> None:
        lo, hi = split(len(files), parts, me)
        out = os.open(os.path.join(out_dir, f"out{me}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for path in files[lo:hi]:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.write(out, os.read(fd, os.fstat(fd).st_size))
                finally:
                    os.close(fd)
        finally:
            os.close(out)
    return work


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", type=Path, help="a folder of photos (default: --generate generated photos)")
    p.add_argument("--generate", type=int, default=240, metavar="N", help="photos to generate without --src")
    p.add_argument("--out", type=Path, default=None, help="where the file copies are written (default: a temporary folder)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--json", type=Path)
    p.add_argument("--quick", action="store_true", help="a check that it runs, not a measurement: 16 photos, 1 round")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.generate = 1, 16
    args.src = photo_folder("copy_ceiling", args.src, args.generate, flag="--src")
    files = sorted(str(f) for f in args.src.rglob("*") if f.is_file())
    total = sum(os.path.getsize(f) for f in files)
    for f in files:  # into the page cache, as for convert_scaling.py
        Path(f).read_bytes()
    out = tempfile.mkdtemp(prefix="copy-ceiling-", dir=args.out)
    variants = {
        "mem1": ("memcpy, 1 process", 1, "mem"),
        "mem2": ("memcpy, 2 processes", 2, "mem"),
        "file1": ("read + write each photo, 1 process", 1, "file"),
        "file2": ("read + write each photo, 2 processes", 2, "file"),
    }
    rates: dict[str, list[float]] = {k: [] for k in variants}
    keys = list(variants)
    try:
        for r in range(args.rounds):
            for key in keys[r % len(keys):] + keys[: r % len(keys)]:
                _, parts, kind = variants[key]
                if kind == "mem":
                    work, nbytes = memcpy_work(total, parts)
                else:
                    work, nbytes = file_work(files, out, parts), total
                rates[key].append(nbytes / forked(parts, work) / 1e6)
                for name in os.listdir(out):  # not timed: dropping the copies' pages is not the copy
                    os.unlink(os.path.join(out, name))
    finally:
        for name in os.listdir(out):
            os.unlink(os.path.join(out, name))
        os.rmdir(out)
    median = {k: statistics.median(v) for k, v in rates.items()}
    spread = {k: max(v) / min(v) for k, v in rates.items()}
    ratios = {"mem2 / mem1": median["mem2"] / median["mem1"], "file2 / file1": median["file2"] / median["file1"]}
    print(f"{len(files)} files, {total / 1e6:.0f} MB from {args.src}, median of {args.rounds} interleaved rounds")
    print(f"{'variant':<44}{'MB/s':>8}  spread")
    for k, (label, _, _) in variants.items():
        print(f"{label:<44}{median[k]:>8,.0f}  {spread[k]:.2f}x")
    for name, value in ratios.items():
        print(f"{name:<44}{value:>8.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "src": str(args.src), "files": len(files), "bytes": total, "rounds": args.rounds,
            "mb_per_s": rates, "median": median, "spread": spread, "ratios": ratios,
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
