"""DALI's fn.readers.mxnet (CPU) reads what fastdata writes, shard by shard and through dali.idx."""

from __future__ import annotations

import numpy as np
from testkit import requires_dali

from fastdata.formats import Manifest, Sample
from fastdata.formats.dataset_writer import write_dataset
from fastdata.formats.recordio import DALI_INDEX, open_shard, write_shard

pytestmark = requires_dali

MAGIC = b"\x0a\x23\xd7\xce"


def make_samples(n: int, seed: int = 0, vectors: bool = False) -> list[Sample]:
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        image = b"\xff\xd8" + i.to_bytes(4, "little") + rng.bytes(int(rng.integers(0, 300)))
        if i % 7 == 3:  # the magic word at a payload-aligned offset: a multi-part record
            image = b"\xff\xd8\xff\xe0" + MAGIC + image + MAGIC
        label = [float(i), 0.5, -1.0] if vectors else i % 5
        samples.append(Sample(image=image, label=label, id=i))
    return samples


def dali_read(paths: list[str], index: str, count: int) -> tuple[list[bytes], list[np.ndarray]]:
    """One unshuffled epoch of fn.readers.mxnet on the CPU, as (payload bytes, float32 labels)."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=count, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        images, labels = fn.readers.mxnet(path=paths, index_path=[index], random_shuffle=False, name="reader")
        return images, labels

    p = pipe()
    p.build()
    assert p.epoch_size("reader") == count
    images, labels = p.run()
    return [bytes(np.array(images[i])) for i in range(count)], [np.array(labels[i]) for i in range(count)]


def test_single_shard(tmp_path):
    samples = make_samples(20)
    info = write_shard(tmp_path / "one.rec", samples)
    # some records are multi-part: DALI must join them as dmlc-core does
    assert MAGIC + ((1 << 29) | 28).to_bytes(4, "little") in (tmp_path / info.file).read_bytes()
    images, labels = dali_read([str(tmp_path / info.file)], str(tmp_path / info.index), len(samples))
    assert images == [s.image for s in samples]
    assert all(lab.dtype == np.float32 and lab.tolist() == [s.label] for lab, s in zip(labels, samples))
    reader = open_shard(tmp_path / info.file)
    assert [reader.sample(i) for i in range(len(reader))] == [(s.image, s.label) for s in samples]


def test_label_vectors(tmp_path):
    samples = make_samples(9, seed=1, vectors=True)
    info = write_shard(tmp_path / "v.rec", samples)
    images, labels = dali_read([str(tmp_path / info.file)], str(tmp_path / info.index), len(samples))
    assert images == [s.image for s in samples]
    for lab, s, (_, ours) in zip(labels, samples, (open_shard(tmp_path / info.file).sample(i) for i in range(9))):
        assert lab.dtype == np.float32 and lab.shape == (3,)
        np.testing.assert_array_equal(lab, np.float32(s.label))
        np.testing.assert_array_equal(lab, ours)


def test_multi_shard_dataset_through_dali_index(tmp_path):
    samples = make_samples(45, seed=2)
    manifest = write_dataset(tmp_path, "recordio", samples, ["a", "b", "c", "d", "e"], shard_bytes=2500)
    assert len(manifest.shards) >= 3
    assert Manifest.read(tmp_path).extra["dali_index"] == DALI_INDEX
    paths = [str(tmp_path / s.file) for s in manifest.shards]
    images, labels = dali_read(paths, str(tmp_path / DALI_INDEX), len(samples))
    # every sample exactly once, in manifest order, byte for byte
    id_of = {s.image: s.id for s in samples}
    assert sorted(id_of[img] for img in images) == list(range(len(samples)))
    assert images == [s.image for s in samples]
    assert [float(lab[0]) for lab in labels] == [float(s.label) for s in samples]


def test_per_shard_indexes_concatenated_do_not_work(tmp_path):
    """Why dali.idx exists: DALI reads offsets as positions in the concatenated files."""
    samples = make_samples(36, seed=3)
    manifest = write_dataset(tmp_path, "recordio", samples, ["a", "b", "c", "d", "e"], shard_bytes=1500)
    assert len(manifest.shards) >= 3
    (tmp_path / "naive.idx").write_text("".join((tmp_path / s.index).read_text() for s in manifest.shards))
    paths = [str(tmp_path / s.file) for s in manifest.shards]
    try:
        images, _ = dali_read(paths, str(tmp_path / "naive.idx"), len(samples))
    except (AssertionError, RuntimeError):
        return
    assert images != [s.image for s in samples]
