"""DALI's fn.readers.caffe reads what write_shard writes (CPU pipelines, device_id=None)."""

from __future__ import annotations

import math

import numpy as np
from testkit import requires_dali

from fastdata.formats import Sample
from fastdata.formats.dataset_writer import write_dataset
from fastdata.formats.lmdb import Reader, decode_datum, write_shard

pytestmark = requires_dali


def make_samples(n: int, seed: int = 0) -> list[Sample]:
    rng = np.random.default_rng(seed)
    return [
        Sample(
            image=b"\xff\xd8\xff\xe0" + i.to_bytes(4, "little") + rng.integers(0, 256, size=int(rng.integers(1, 4000)), dtype=np.uint8).tobytes(),
            label=int(rng.integers(0, 1000)),
            id=i,
            width=64,
            height=48,
        )
        for i in range(n)
    ]


def dali_read(paths: list[str], count: int, batch_size: int = 8) -> list[tuple[bytes, np.ndarray]]:
    """The first ``count`` (data, label) pairs DALI's caffe reader yields over ``paths``, in order."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        images, labels = fn.readers.caffe(path=paths, random_shuffle=False, name="reader")
        return images, labels

    p = pipe()
    p.build()
    assert p.epoch_size("reader") == count
    out = []
    for _ in range(math.ceil(count / batch_size)):
        images, labels = p.run()
        out += [(np.array(images[i]).tobytes(), np.array(labels[i])) for i in range(batch_size)]
    return out[:count]


def test_dali_reads_one_shard(tmp_path):
    samples = make_samples(37)
    write_shard(tmp_path / "shard-00000.lmdb", samples)  # data.mdb only: DALI opens with MDB_NOLOCK
    got = dali_read([str(tmp_path / "shard-00000.lmdb")], len(samples))
    assert [img for img, _ in got] == [s.image for s in samples]
    assert all(lab.dtype == np.int32 and lab.shape == (1,) for _, lab in got)
    assert [int(lab[0]) for _, lab in got] == [s.label for s in samples]


def test_dali_reads_a_multi_shard_dataset_once_each(tmp_path):
    # readers.caffe takes a list of paths and walks them in order as one dataset
    samples = make_samples(90, seed=1)
    manifest = write_dataset(tmp_path, "lmdb", samples, ["c"], shard_bytes=30_000)
    assert len(manifest.shards) >= 4
    got = dali_read([str(tmp_path / s.file) for s in manifest.shards], len(samples))
    assert [(img, int(lab[0])) for img, lab in got] == [(s.image, s.label) for s in samples]


def test_dali_returns_caffe_raw_datums_unconverted(shared_data):
    # Pinned fact for spec.md: DALI gives a raw datum's bytes as they are,
    # shaped (H, W, C), although Caffe stored them (C, H, W) in BGR; use
    # fastdata's datum_to_image (or open_shard) for the real picture.
    from nvidia.dali import fn, pipeline_def

    path = shared_data / "lmdb" / "caffe_raw_datum" / "test_lmdb"

    @pipeline_def(batch_size=8, num_threads=1, device_id=None)
    def pipe():
        images, labels = fn.readers.caffe(path=str(path), random_shuffle=False)
        return images, labels

    p = pipe()
    p.build()
    images, labels = p.run()
    for i, (key, value) in enumerate(Reader(path)):
        datum = decode_datum(value)
        img = np.array(images[i])
        assert img.shape == (256, 256, 3) and img.tobytes() == datum.data
        assert int(np.array(labels[i])[0]) == datum.label
