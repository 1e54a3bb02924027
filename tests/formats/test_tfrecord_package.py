"""fastdata's TFRecord readers return what the ``tfrecord`` package reads from
the same file (its read speed is compared in ``benchmarks/raw_reads.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from fastdata.formats import tfrecord as tfr
from fastdata.formats.sample import Sample

tfrecord_reader = pytest.importorskip("tfrecord.reader", reason="the tfrecord package is the reference reader")


def test_records_and_labels_agree_with_the_tfrecord_package(tmp_path):
    rng = np.random.default_rng(0)
    samples = [
        Sample(image=b"\xff\xd8\xff" + rng.bytes(int(rng.integers(200, 600))), label=i % 1000, filename=f"{i}.jpg")
        for i in range(2000)
    ]
    path = tmp_path / "bench.tfrecord"
    tfr.write_shard(path, samples)
    index = tfr.default_index_path(path)
    theirs = [bytes(r) for r in tfrecord_reader.tfrecord_iterator(str(path), index, shard=(0, 1))]
    assert theirs == list(tfr.Reader(path)) and len(theirs) == 2000
    examples = tfrecord_reader.example_loader(str(path), index, shard=(0, 1))
    labels = [int(e["image/class/label"][0]) - 1 for e in examples]
    shard = tfr.open_shard(path)
    assert labels == [shard.sample(i)[1] for i in range(2000)] == [s.label for s in samples]
    assert [bytes(shard.sample(i)[0]) for i in range(2000)] == [s.image for s in samples]
