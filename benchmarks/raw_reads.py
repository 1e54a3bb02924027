"""Raw record reads on one core: every registered format's ``sample(i)``
(random and in order) over one generated shard, the raw readers' ``r[i]``,
and the ``tfrecord`` package's readers for comparison. Rates are process CPU
time, best of ``--rounds``, file in the page cache.

    python benchmarks/raw_reads.py [--records 10000] [--size 200] [--rounds 3]
    python benchmarks/raw_reads.py --quick    # a check that it runs: 500 records, 1 round
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from fastdata.formats import Sample, registry


def rate(fn: Callable[[Iterable[int]], object], items: list[int] | range, rounds: int) -> float:
    """Best items/s of ``rounds`` calls of ``fn(items)``, in process CPU time."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn(items)
        best = min(best, time.process_time() - start)
    return len(items) / max(best, 1e-9)


def each(get: Callable[[int], object]) -> Callable[[Iterable[int]], None]:
    def run(ids: Iterable[int]) -> None:
        for i in ids:
            get(i)

    return run


def shard_rates(directory: Path, n: int, size: int, rounds: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    samples = [Sample(image=b"\xff\xd8\xff\xe0" + rng.bytes(size), label=i % 1000, id=i) for i in range(n)]
    order = np.random.default_rng(1).permutation(n).tolist()
    out = {}
    for name in registry.names():
        spec = registry.get(name)
        path = directory / f"bench{spec.suffix}"
        spec.write_shard(path, samples)
        reader = spec.open_shard(path)
        reader.sample(0)  # open and map outside the timing
        out[f"{name} sample(i), random"] = rate(each(reader.sample), order, rounds)
        out[f"{name} sample(i), in order"] = rate(each(reader.sample), range(n), rounds)
        raw = reader.reader  # the format's raw record reader, by position
        out[f"{name} Reader r[i], random"] = rate(each(raw.__getitem__), order, rounds)
    out |= tfrecord_package_rates(directory / "bench.tfrecord", order, rounds)
    return out


def tfrecord_package_rates(path: Path, order: list[int], rounds: int) -> dict[str, float]:
    try:
        from tfrecord.reader import example_loader, tfrecord_iterator
    except ImportError:
        return {}
    index = str(registry.get("tfrecord").index.path(path))
    n = len(order)

    def sequential(ids: Iterable[int]) -> None:  # the package's fastest path: raw records in file order
        for _ in tfrecord_iterator(str(path), index, shard=(0, 1)):
            pass

    def parsed(ids: Iterable[int]) -> None:
        for _ in example_loader(str(path), index, shard=(0, 1)):
            pass

    def one_record_shards(ids: Iterable[int]) -> None:  # its only way to one record: open, load the index, read
        for i in ids:
            next(iter(tfrecord_iterator(str(path), index, shard=(i, n))))

    return {
        "tfrecord package tfrecord_iterator, in order (raw)": rate(sequential, range(n), rounds),
        "tfrecord package example_loader, in order (parsed)": rate(parsed, range(n), rounds),
        "tfrecord package one-record shard per read, random": rate(one_record_shards, order[: max(n // 100, 20)], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=200, help="image bytes per record")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a check that it runs, not a measurement: 500 records, 1 round")
    args = ap.parse_args()
    if args.quick:
        args.records, args.rounds = 500, 1
    with tempfile.TemporaryDirectory() as tmp:
        figures = shard_rates(Path(tmp), args.records, args.size, args.rounds)
    print(f"{args.records} records of {args.size} B, one core")
    for name, value in figures.items():
        print(f"{name:52s} {value:>12,.0f} records/s")


if __name__ == "__main__":
    main()
