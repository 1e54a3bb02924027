"""``fastdata verify`` from a cold page cache: this checkout against another, interleaved.

Each run verifies one converted dataset in a fresh process, after every file of the dataset has
been written back and dropped from the page cache (``fsync`` + ``posix_fadvise(DONTNEED)``, no root
needed). The child reports the seconds ``verification.run`` took and, from ``/proc/self/io``
and ``getrusage`` around it: ``read_bytes`` (bytes this process caused to be read from storage),
``rchar`` (bytes it copied through ``read(2)``-like calls: a mapped file's bytes are not counted
there) and page faults (a count: the kernel maps up to 16 cached pages per fault). ``rchar`` at
the size of the dataset, beside the mapped reads of the records, is the second whole read of
every data file. ``read_bytes`` shows storage reads only
once per byte here, because this machine's page cache holds the whole dataset between the two
passes; on a dataset larger than the page cache the old way (every digest first, then every
record) reads it from storage twice. The variants alternate run by run, so a drift of the
machine hits both alike.

    git -C . archive 75464ea | (mkdir -p /tmp/verify-base && tar -x -C /tmp/verify-base)
    python benchmarks/verify_reads.py --variant before=/tmp/verify-base --variant after=. \\
        --copies 16 --rounds 3 --out verify_reads.json

The dataset is the hymenoptera train photos hard-linked ``--copies`` times (as in issue 20),
converted once per format by this checkout into ``--work`` (reused when already there), or
``--data DIR`` (any converted dataset, verified as is). ``--warm`` skips the eviction: the cost
of the second pass over cached pages. Prints a table of medians and the ratio
of each variant to the first; writes everything (every run, machine, commit) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
checkout = Path(sys.argv[1])
# An editable install maps fastdata (and fastdata.converters) to its own checkout: point it here.
for name, module in list(sys.modules.items()):
    if name.startswith("__editable___fastdata") and hasattr(module, "MAPPING"):
        module.MAPPING.update({"fastdata": str(checkout / "fastdata"), "fastdata.converters": str(checkout / "converters")})
sys.path.insert(0, str(checkout))
from fastdata.converters.tools import verification
assert Path(verification.__file__).resolve().is_relative_to(checkout.resolve()), verification.__file__

def io():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    counts = {k: int(v) for k, v in (line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())}
    return {**counts, "faults": usage.ru_minflt + usage.ru_majflt}

before, t0 = io(), time.perf_counter()
code = verification.run(sys.argv[2], quiet=True, decode=sys.argv[3] == "1")
seconds = time.perf_counter() - t0
after = io()
print(json.dumps({"code": code, "seconds": seconds, "file": verification.__file__,
                  **{k: after[k] - before[k] for k in ("read_bytes", "rchar", "syscr", "faults")}}))
"""


def _variant(text: str) -> tuple[str, Path]:
    name, _, path = text.partition("=")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"--variant NAME=CHECKOUT, got {text!r}")
    return name, Path(path).resolve()


def evict(directory: Path) -> int:
    """Write back and drop from the page cache every file under ``directory``; returns their bytes."""
    total = 0
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


def prepare(work: Path, copies: int, formats: list[str]) -> dict[str, Path]:
    """The photos hard-linked ``copies`` times, converted once per format (reused when there)."""
    photos = Path(os.environ.get("FASTDATA_SHARED", HERE.parent / "shared")) / "data/photos/hymenoptera/train"
    if not photos.is_dir():
        photos = Path("/work/shared/data/photos/hymenoptera/train")
    source = work / f"photos-x{copies}"
    if not source.is_dir():
        for copy in range(copies):
            for image in sorted(photos.rglob("*.jpg")):
                target = source / image.parent.name / f"{copy:02d}_{image.name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(image, target)
    out = {}
    for fmt in formats:
        out[fmt] = work / f"{fmt}-x{copies}"
        if not (out[fmt] / "manifest.json").is_file():
            cmd = [sys.executable, "-m", "fastdata", "convert", str(source), str(out[fmt]), "--format", fmt, "-q",
                   "--allow-skips"]
            subprocess.run(cmd, check=True, cwd=HERE)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", type=_variant, action="append", required=True, help="NAME=CHECKOUT (twice or more)")
    ap.add_argument("--data", type=Path, help="verify this converted dataset instead of building one")
    ap.add_argument("--work", type=Path, default=Path("/tmp/fastdata-verify-reads"))
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--formats", default="recordio,tfrecord,lmdb")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--decode", action="store_true", help="verify --decode (mostly decoding time then)")
    ap.add_argument("--warm", action="store_true", help="leave the page cache warm (what a second pass costs in CPU)")
    ap.add_argument("--out", default="verify_reads.json")
    args = ap.parse_args()
    datasets = {"data": args.data} if args.data else prepare(args.work, args.copies, args.formats.split(","))
    runs: list[dict] = []
    for rnd in range(args.rounds):
        for label, directory in datasets.items():
            for name, checkout in args.variant:
                size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) if args.warm else evict(directory)
                cmd = [sys.executable, "-c", CHILD, str(checkout), str(directory), "1" if args.decode else "0"]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/")
                if done.returncode:
                    print(f"{name} {label} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                    return 1
                row = {"round": rnd, "dataset": label, "variant": name, "bytes": size, **json.loads(done.stdout.splitlines()[-1])}
                runs.append(row)
                print(f"round {rnd} {label:9s} {name:8s} {row['seconds']:7.3f} s  storage {row['read_bytes'] / 2**20:8.1f} MiB"
                      f"  read() {row['rchar'] / 2**20:8.1f} MiB  faults {row['faults']:7d}"
                      f"  (dataset {size / 2**20:.1f} MiB, exit {row['code']})", flush=True)
    first = args.variant[0][0]
    summary = {}
    print(f"\n{'dataset':10s} {'variant':8s} {'median s':>9s} {'x ' + first:>9s} {'storage MiB':>12s} {'read() MiB':>11s}"
          f" {'faults':>8s} {'dataset MiB':>12s}")
    for label in datasets:
        base = None
        for name, _ in args.variant:
            mine = [r for r in runs if r["dataset"] == label and r["variant"] == name]
            med = {k: statistics.median(r[k] for r in mine) for k in ("seconds", "read_bytes", "rchar", "faults")}
            base = base or med["seconds"]
            summary[f"{label}/{name}"] = {**med, "bytes": mine[0]["bytes"], "time_vs_first": med["seconds"] / base}
            print(f"{label:10s} {name:8s} {med['seconds']:9.3f} {med['seconds'] / base:9.2f} {med['read_bytes'] / 2**20:12.1f}"
                  f" {med['rchar'] / 2**20:11.1f} {med['faults']:8.0f} {mine[0]['bytes'] / 2**20:12.1f}")
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {
        "benchmark": "verify_reads", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "args": {k: str(v) for k, v in vars(args).items()}, "summary": summary, "runs": runs,
    }
    Path(args.out).write_text(json.dumps(doc, indent=2))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
