"""The "read" group: raw record reads, one core, no decoding, on ~10k small
records per format and on the run's own shards, beside the tfrecord package's
reader when it is installed."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ..formats import Manifest, Sample, registry
from ..formats.dataset_writer import write_dataset
from .harness import Variant
from .peers import has_tfrecord_package
from .settings import FORMATS, Settings
from .steady import Expected, repeated


def _readers(path: str):
    m = Manifest.read(path)
    spec = registry.get(m.format)
    return [spec.open_shard(os.path.join(path, sh.file), **spec.shard_options(m)) for sh in m.shards]


def _read_pass(path: str, *, random: bool, seed: int) -> Callable[[], int]:
    readers = _readers(path)
    pairs = np.array([(r, i) for r, reader in enumerate(readers) for i in range(len(reader))], dtype=np.int64)
    if random:
        pairs = pairs[np.random.default_rng(seed).permutation(len(pairs))]
    pairs_list = pairs.tolist()

    def run() -> int:
        for r, i in pairs_list:
            readers[r].sample(i)
        return len(pairs_list)

    return run


def small_records(scratch: str, n: int = 10_000, size: int = 200) -> dict[str, str]:
    """~10k small records per format, the per-core raw-read benchmark's data."""
    rng = np.random.default_rng(0)
    samples = [Sample(image=b"\xff\xd8\xff\xe0" + rng.bytes(size), label=int(i % 10), id=i) for i in range(n)]
    out = {}
    for fmt in FORMATS:
        d = os.path.join(scratch, f"small-{fmt}")
        if not os.path.exists(os.path.join(d, "manifest.json")):
            write_dataset(d, fmt, samples, [str(c) for c in range(10)], shard_bytes=1 << 40, overwrite=True)
        out[fmt] = d
    return out


def raw_reads(s: Settings) -> list[Variant]:
    rows = []
    small = small_records(s.scratch)
    timing: Expected = {"expect": s.pass_seconds + 0.1, "expect_warm": 0.15}
    # the third-party package on fastdata's TFRecord shards; the main job's extras leave it out: no row, no failure
    tf_base = "tfrecord package reader, sequential (small)" if has_tfrecord_package() else None
    if tf_base:
        one = _tfrecord_package_pass(small["tfrecord"])
        rows.append(Variant(tf_base, "read", repeated(one, s.pass_seconds), warm=one, unit="rec", **timing))
    for fmt in FORMATS:
        for random in (True, False):
            kind = "random" if random else "sequential"
            one = _read_pass(small[fmt], random=random, seed=s.seed)
            rows.append(Variant(f"fastdata {fmt} {kind} (10k x 200 B)", "read", repeated(one, s.pass_seconds), warm=one,
                                unit="rec", baseline=tf_base, **timing))
    for fmt, path in s.shards.items():
        m = Manifest.read(path)
        per = sum(sh.bytes for sh in m.shards) / max(1, m.num_samples)
        one = _read_pass(path, random=True, seed=s.seed)
        rows.append(Variant(f"fastdata {fmt} random (dataset images)", "read", repeated(one, s.pass_seconds), warm=one,
                            unit="rec", bytes_per_item=per, note=f"{per / 1e3:,.0f} kB a record", **timing))
    return rows


def _tfrecord_package_pass(path: str) -> Callable[[], int]:
    m = Manifest.read(path)
    shard = m.shards[0]

    def run() -> int:
        from tfrecord.reader import tfrecord_loader

        n = 0
        index = os.path.join(path, shard.index) if shard.index else None  # None: the package reads front to back
        for _ in tfrecord_loader(os.path.join(path, shard.file), index,
                                 {"image/encoded": "byte", "image/class/label": "int"}):
            n += 1
        return n

    return run
