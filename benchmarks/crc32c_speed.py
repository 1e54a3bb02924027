"""The compiled CRC-32C (fastdata.formats._speedups.crc32c) against the crc32c
package, and what not importing the package saves a converter's start-up.

    python benchmarks/crc32c_speed.py [--rounds 15] [--starts 15] [--out bench-results/crc32c_speed.json]

* ``speed``: GB/s on a 111 KB buffer (the median JPEG of the test photos),
  16 MiB, and ns per call on 8 bytes (a TFRecord length header), both
  functions timed in alternating order within each round; the ratio is
  taken per round, then the median.
* ``start``: wall time of fresh interpreters, interleaved: ``pass``,
  ``import crc32c``, ``import fastdata.converters.conversion.convert`` (which no longer
  imports the package), and the same plus ``import crc32c`` (what it paid
  before). Median of ``--starts`` runs each.
* ``worker``: what a forked worker pays to ask for PR_SET_PDEATHSIG, timed
  in fresh forks of this process (which has imported neither ctypes nor the
  package when they are taken): ``import ctypes`` + ``CDLL(None).prctl``
  against ``_speedups.set_parent_death_signal``, beside a fork that runs
  nothing (page faults of a fresh fork land in whatever runs first).

Prints a table and writes JSON (with the machine) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZES = {"111 KB": 111_000, "16 MiB": 16 << 20}
STARTS = {
    "python -c pass": "pass",
    "import crc32c": "import crc32c",
    "import fastdata.converters.conversion.convert": "import fastdata.converters.conversion.convert",
    "  + import crc32c (as before)": "import fastdata.converters.conversion.convert, crc32c",
}


def _rate(fn, data, seconds: float = 0.02) -> float:
    """Calls per second of fn(data), over about ``seconds``."""
    calls, start = 0, time.perf_counter()
    while True:
        for _ in range(16):
            fn(data)
        calls += 16
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed


def speed(rounds: int, compiled, package) -> dict:
    buffers = {label: os.urandom(size) for label, size in SIZES.items()} | {"8 B": os.urandom(8)}
    out = {}
    for label, data in buffers.items():
        ours, theirs, ratio = [], [], []
        for r in range(rounds):
            order = [(compiled, ours), (package, theirs)]
            for fn, rates in order if r % 2 == 0 else order[::-1]:
                rates.append(_rate(fn, data))
            ratio.append(ours[-1] / theirs[-1])
        row = {"compiled_calls_per_s": statistics.median(ours), "package_calls_per_s": statistics.median(theirs),
               "ratio_compiled_over_package": statistics.median(ratio), "bytes": len(data)}
        if len(data) > 8:
            row["compiled_GB_per_s"] = row["compiled_calls_per_s"] * len(data) / 1e9
            row["package_GB_per_s"] = row["package_calls_per_s"] * len(data) / 1e9
        else:
            row["compiled_ns_per_call"] = 1e9 / row["compiled_calls_per_s"]
            row["package_ns_per_call"] = 1e9 / row["package_calls_per_s"]
        out[label] = row
    return out


def start(starts: int) -> dict:
    times: dict[str, list[float]] = {label: [] for label in STARTS}
    for _ in range(starts):
        for label, code in STARTS.items():
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times[label].append(time.perf_counter() - t)
    return {label: {"median_ms": statistics.median(v) * 1e3, "runs_ms": [round(x * 1e3, 2) for x in v]}
            for label, v in times.items()}


def _in_fork(code: str) -> float:
    """Seconds a fresh fork of this process takes to run ``code``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: time, report, leave without running the parent's cleanup
        try:
            t = time.perf_counter()
            exec(code, {})  # noqa: S102 -- the benchmark's own two snippets
            os.write(write, str(time.perf_counter() - t).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        value = float(pipe.read())
    os.waitpid(pid, 0)
    return value


WORKER = {
    "nothing (a fresh fork's own cost)": "pass",
    "ctypes prctl": "import ctypes\nctypes.CDLL(None, use_errno=True).prctl(1, 9)",
    "_speedups.set_parent_death_signal": "from fastdata.formats._speedups import set_parent_death_signal\n"
                                         "set_parent_death_signal(9)",
}


def worker(rounds: int) -> dict:
    if "ctypes" in sys.modules:
        return {"skipped": "ctypes is already imported in this process, so a fork would not pay for it"}
    import fastdata.formats.speedups  # noqa: F401 -- loads _speedups, as a converter has before it forks

    times: dict[str, list[float]] = {label: [] for label in WORKER}
    for _ in range(rounds):
        for label, code in WORKER.items():
            times[label].append(_in_fork(code))
    return {label: {"median_ms": statistics.median(v) * 1e3} for label, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--out", default="bench-results/crc32c_speed.json")
    args = parser.parse_args()

    workers = worker(args.rounds) if sys.platform.startswith("linux") else {"skipped": "PR_SET_PDEATHSIG is Linux only"}

    from crc32c import crc32c as package

    from fastdata.formats import crc

    if crc.hardware is None:
        sys.exit(f"crc32c_speed: no compiled hardware CRC-32C to compare: {crc.describe()}")
    speeds = speed(args.rounds, crc.crc32c, package)
    starts = start(args.starts)

    from fastdata.bench.report import machine_info

    result = {"machine": machine_info(), "crc32c": crc.describe(), "rounds": args.rounds, "starts": args.starts,
              "speed": speeds, "start": starts, "worker": workers}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")

    print(f"CRC-32C: {crc.describe()} against the crc32c package; median of {args.rounds} interleaved rounds")
    for label, row in speeds.items():
        if "compiled_GB_per_s" in row:
            print(f"  {label:>7}: {row['compiled_GB_per_s']:6.1f} GB/s against {row['package_GB_per_s']:6.1f} GB/s,"
                  f" ratio {row['ratio_compiled_over_package']:.2f}")
        else:
            print(f"  {label:>7}: {row['compiled_ns_per_call']:6.0f} ns/call against {row['package_ns_per_call']:6.0f} ns/call,"
                  f" ratio {row['ratio_compiled_over_package']:.2f}")
    print(f"fresh interpreters, median wall time of {args.starts}:")
    for label, row in starts.items():
        print(f"  {label:<36} {row['median_ms']:7.1f} ms")
    print("a forked worker asking for PR_SET_PDEATHSIG, median:")
    for label, row in workers.items():
        print(f"  {label:<36} {row['median_ms']:7.2f} ms" if isinstance(row, dict) else f"  {label}: {row}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
