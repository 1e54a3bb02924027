"""Tiny datasets for the remote tests: sample ``i``'s image bytes are unique,
so a read-back sample names its index exactly."""

from __future__ import annotations

import io
import itertools
import multiprocessing as mp
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fastdata.formats import Sample
from fastdata.formats.dataset_writer import write_dataset

CLASSES = ["a", "b"]
_counter = itertools.count()


def image_bytes(i: int, size: int = 24) -> bytes:
    rng = np.random.default_rng(i)
    pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def make_dataset(root: Path, fmt: str, n: int = 40, *, shards: int = 4, size: int = 24) -> dict[bytes, int]:
    """Write ``n`` samples in about ``shards`` shards; returns image bytes -> index."""
    images = [image_bytes(i, size) for i in range(n)]
    per_shard = sum(len(b) for b in images) // shards + 1
    samples = [Sample(image=b, label=i % 2, id=i, filename=f"{CLASSES[i % 2]}/{i}.jpg") for i, b in enumerate(images)]
    write_dataset(root, fmt, samples, CLASSES, shard_bytes=per_shard)
    return {b: i for i, b in enumerate(images)}


def unique_prefix(stem: str) -> str:
    return f"{stem}-{next(_counter)}"


def upload(fs, local: Path, target: str) -> None:
    """Copy a dataset directory to ``target`` (``bucket/prefix``), the manifest last."""
    files = sorted(p for p in local.rglob("*") if p.is_file())
    for path in sorted(files, key=lambda p: p.name == "manifest.json"):
        fs.put_file(str(path), f"{target}/{path.relative_to(local).as_posix()}")


def run_forked(target, *args, copies: int, timeout: float) -> list:
    """Run ``target(*args, out)`` in ``copies`` forked processes at once;
    returns what each put on the queue ``out``."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, out)) for _ in range(copies)]
    for p in procs:
        p.start()
    results = [out.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return results


BUDGET_TEST = "test_eight_workers_stop_within_the_default_budget"
BUDGET_JOB = pytest.StashKey[subprocess.Popen]()


def budget_job() -> subprocess.Popen:
    """tests/remote/budget_job.py, started now: it waits out a whole default
    retry budget (120 s), mostly asleep, so the session runs it beside the
    other tests (conftest starts it once the test is collected)."""
    return subprocess.Popen([sys.executable, str(Path(__file__).with_name("budget_job.py"))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
