"""Mutated shards must only ever raise FastDataError, in bounded time.

Each format is fuzzed in a child process so that a crash or a hang in a
reader (or in a C library under it) fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fastdata.formats import registry

HERE = Path(__file__).resolve().parent
CHILD = textwrap.dedent(
    """
    import json, os, shutil, sys, time
    from pathlib import Path
    import numpy as np
    sys.path.insert(0, {here!r})
    from formatkit import make_samples, write, data_file, read_all
    from fastdata.errors import FastDataError

    fmt, work, rounds = {fmt!r}, Path({work!r}), {rounds}
    clean = work / "clean"
    manifest = write(clean, fmt, make_samples(12, seed=3), shard_bytes=10**6)
    original = data_file(clean, manifest).read_bytes()
    rng = np.random.default_rng(0)
    report = {{"ok": 0, "fastdata_errors": 0, "other": [], "slowest": 0.0}}
    for r in range(rounds):
        trial = work / f"t{{r}}"
        shutil.copytree(clean, trial)
        data = bytearray(original)
        kind = r % 4
        if kind == 0:  # random bytes anywhere
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 8))):
                data[pos] = int(rng.integers(0, 256))
        elif kind == 1:  # truncation
            del data[int(rng.integers(0, len(data))):]
        elif kind == 2:  # a huge length at a random 4-aligned place
            pos = int(rng.integers(0, max(1, len(data) // 4))) * 4
            data[pos:pos + 8] = b"\\xff\\xff\\xff\\x1f\\xff\\xff\\xff\\x7f"[: len(data) - pos]
        else:  # a run of random bytes
            pos = int(rng.integers(0, len(data)))
            n = int(rng.integers(1, 64))
            data[pos:pos + n] = rng.integers(0, 256, size=len(data[pos:pos + n]), dtype=np.uint8).tobytes()
        data_file(trial, manifest).write_bytes(bytes(data))
        if r % 2 and manifest.shards[0].index:  # half the time make the reader scan instead of trusting an index
            (trial / manifest.shards[0].index).unlink()
        t0 = time.perf_counter()
        try:
            read_all(trial, manifest)
            report["ok"] += 1
        except FastDataError:
            report["fastdata_errors"] += 1
        except BaseException as exc:
            report["other"].append(f"round {{r}} kind {{kind}}: {{type(exc).__name__}}: {{exc}}"[:300])
        report["slowest"] = max(report["slowest"], time.perf_counter() - t0)
        shutil.rmtree(trial)
    print(json.dumps(report))
    """
)


@pytest.mark.parametrize("fmt", registry.names())
def test_mutated_shards_raise_only_fastdata_errors(tmp_path, fmt):
    code = CHILD.format(here=str(HERE), fmt=fmt, work=str(tmp_path), rounds=120)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{fmt}: reading mutated shards hung (no answer in 120 s)")
    assert proc.returncode == 0, f"{fmt}: reader process died (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["other"] == [], f"{fmt}: non-fastdata exceptions escaped:\n" + "\n".join(report["other"])
    assert report["fastdata_errors"] > 0, f"{fmt}: no mutation was detected at all: {report}"
    assert report["slowest"] < 10, f"{fmt}: one mutated shard took {report['slowest']:.1f} s"
