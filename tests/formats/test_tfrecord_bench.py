"""Read-speed comparison with the ``tfrecord`` package (reported, not asserted).

Run ``python tests/formats/test_tfrecord_bench.py [records]`` for the figures;
under pytest (``-m slow -s``) it runs a small version and checks that the readers
compared return identical records. Rates are process CPU time on one core,
best of three rounds, file in the page cache.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from fastdata.formats import tfrecord as tfr
from fastdata.formats.sample import Sample


def make_file(directory: Path, n: int) -> Path:
    rng = np.random.default_rng(0)
    samples = [
        Sample(image=b"\xff\xd8\xff" + rng.bytes(int(rng.integers(200, 600))), label=i % 1000, filename=f"{i}.jpg")
        for i in range(n)
    ]
    path = directory / "bench.tfrecord"
    tfr.write_shard(path, samples)
    return path


def rate(fn, items, rounds: int = 3) -> float:
    """Best items/s of ``rounds`` calls of ``fn(items)``, in process CPU time."""
    best = 0.0
    for _ in range(rounds):
        start = time.process_time()
        fn(items)
        best = max(best, len(items) / max(time.process_time() - start, 1e-9))
    return best


def measure(path: Path, reads: int) -> dict[str, float]:
    from tfrecord.reader import example_loader, tfrecord_iterator

    index = tfr.default_index_path(path)
    reader = tfr.Reader(path)
    shard = tfr.open_shard(path)
    n = len(reader)
    order = np.random.default_rng(1).integers(0, n, reads).tolist()

    def ours(ids):
        get = reader.__getitem__
        for i in ids:
            get(i)

    def ours_samples(ids):
        get = shard.sample
        for i in ids:
            get(i)

    def theirs_sequential(ids):  # the package's fastest path: raw records in file order
        for _ in tfrecord_iterator(str(path), index, shard=(0, 1)):
            pass

    def theirs_parsed(ids):
        for _ in example_loader(str(path), index, shard=(0, 1)):
            pass

    def theirs_random(ids):  # its only way to one record: a one-record shard (opens the file, loads the index)
        for i in ids:
            next(iter(tfrecord_iterator(str(path), index, shard=(i, n))))

    reader[0], shard.sample(0)  # open and map outside the timing
    return {
        "fastdata Reader[i], random, CRCs checked": rate(ours, order),
        "fastdata open_shard().sample(i), random": rate(ours_samples, order),
        "fastdata iteration, in order": rate(lambda ids: sum(1 for _ in reader), range(n)),
        "tfrecord tfrecord_iterator, in order (raw)": rate(theirs_sequential, range(n)),
        "tfrecord example_loader, in order (parsed)": rate(theirs_parsed, range(n)),
        "tfrecord one-record shard per read, random": rate(theirs_random, order[: max(reads // 100, 20)], rounds=1),
    }


def report(figures: dict[str, float]) -> str:
    return "\n".join(f"{name:48s} {value:>12,.0f} records/s" for name, value in figures.items())


@pytest.mark.slow
def test_compared_readers_agree_and_report(tmp_path):
    from tfrecord.reader import example_loader, tfrecord_iterator

    path = make_file(tmp_path, 2000)
    index = tfr.default_index_path(path)
    reader = tfr.Reader(path)
    theirs = [bytes(r) for r in tfrecord_iterator(str(path), index, shard=(0, 1))]
    assert theirs == list(reader) and len(theirs) == 2000
    labels = [int(e["image/class/label"][0]) - 1 for e in example_loader(str(path), index, shard=(0, 1))]
    shard = tfr.open_shard(path)
    assert labels == [shard.sample(i)[1] for i in range(2000)] == [i % 1000 for i in range(2000)]
    figures = measure(path, 20000)
    print("\n" + report(figures))
    assert all(v > 0 for v in figures.values())


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    with tempfile.TemporaryDirectory() as tmp:
        file = make_file(Path(tmp), count)
        print(f"{count} records, {file.stat().st_size / count:.0f} bytes each on average")
        print(report(measure(file, 200000)))
