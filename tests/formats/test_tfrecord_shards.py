"""Image shards in TensorFlow's ImageNet layout: write_shard/open_shard, the TF-written
vectors, and interoperability with the tfrecord package, DALI and torch DataLoader."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch.utils.data
from testkit import requires_dali

from fastdata.errors import FormatError
from fastdata.formats import registry
from fastdata.formats import tfrecord as tfr
from fastdata.formats.dataset_writer import write_dataset
from fastdata.formats.manifest import Manifest
from fastdata.formats.sample import Sample

JPEG = b"\xff\xd8\xff\xe0"
PNG = b"\x89PNG\r\n\x1a\n"


def make_samples(n: int, start: int = 0) -> list[Sample]:
    """Tiny fake images whose bytes encode their id (the check is exact, no decoding)."""
    out = []
    for i in range(start, start + n):
        magic = PNG if i % 5 == 4 else JPEG
        image = magic + struct.pack("<I", i) + bytes([i % 256]) * (40 + i % 17)
        out.append(Sample(image=image, label=i % 4, id=i, filename=f"c{i % 4}/{i}.jpg", height=10 + i, width=20 + i, class_text=f"c{i % 4}"))
    return out


def test_format_spec_is_registered():
    spec = registry.get("tfrecord")
    assert spec is tfr.FORMAT
    assert (spec.name, spec.suffix, spec.label_base) == ("tfrecord", ".tfrecord", 1)
    assert spec.write_shard is tfr.write_shard and spec.open_shard is tfr.open_shard


def test_write_shard_round_trip(tmp_path):
    samples = make_samples(12)
    path = tmp_path / "shard-00000.tfrecord"
    info = tfr.write_shard(path, samples)
    assert info.file == path.name and info.index == "shard-00000.tfrecord.idx" and info.records == 12
    assert info.bytes == path.stat().st_size
    from crc32c import crc32c

    assert info.digests[path.name] == "crc32c:%08x" % crc32c(path.read_bytes()) and info.checksums is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name, info.index]  # no .partial left
    shard = tfr.open_shard(path)
    assert len(shard) == 12 and shard.label_base == 1
    assert [shard.sample(i) for i in range(12)] == [(s.image, s.label) for s in samples]
    assert list(shard) == [(s.image, s.label) for s in samples]
    features = tfr.parse_example(tfr.Reader(path)[4])
    assert features["image/class/label"].tolist() == [samples[4].label + 1]
    assert features["image/format"] == [b"PNG"] and tfr.parse_example(tfr.Reader(path)[0])["image/format"] == [b"JPEG"]
    assert features["image/filename"] == [b"c0/4.jpg"] and features["image/class/text"] == [b"c0"]
    assert features["image/height"].tolist() == [14] and features["image/width"].tolist() == [24]


def test_label_vectors_are_float_lists(tmp_path):
    samples = [Sample(image=JPEG + bytes([i]), label=[0.25 * i, 1.0, -1.0]) for i in range(3)]
    path = tmp_path / "vec.tfrecord"
    tfr.write_shard(path, samples)
    stored = tfr.parse_example(tfr.Reader(path)[2])["image/class/label"]
    assert stored.dtype == np.float32 and stored.tolist() == [0.5, 1.0, -1.0]  # never shifted
    image, label = tfr.open_shard(path).sample(2)
    assert image == samples[2].image and label.dtype == np.float32 and label.tolist() == [0.5, 1.0, -1.0]


def test_failed_write_leaves_nothing(tmp_path):
    def broken():
        yield from make_samples(3)
        raise RuntimeError("source died")

    with pytest.raises(RuntimeError):
        tfr.write_shard(tmp_path / "s.tfrecord", broken())
    assert list(tmp_path.iterdir()) == []


def test_label_base_options_and_errors(tmp_path):
    path = tmp_path / "zero.tfrecord"
    with tfr.Writer(path) as w:  # a foreign file with 0-based labels under another key
        for i in range(3):
            w.write(tfr.encode_example({"img": JPEG + bytes([i]), "cls": i, "multi": [i, i + 1]}))
    assert tfr.open_shard(path, image_key="img", label_key="cls").sample(2) == (JPEG + b"\x02", 2)  # other key: base 0
    with pytest.raises(FormatError, match="label_base=0") as info:
        tfr.open_shard(path, image_key="img", label_key="cls", label_base=1).sample(0)
    assert info.value.path == str(path) and info.value.offset == 0 and info.value.key == "cls"
    _, multi = tfr.open_shard(path, image_key="img", label_key="multi").sample(1)
    assert multi.dtype == np.int64 and multi.tolist() == [1, 2]
    with pytest.raises(FormatError, match="no label feature 'image/class/label'.*'cls'"):
        tfr.open_shard(path, image_key="img").sample(0)
    with pytest.raises(FormatError, match="'image/encoded' should hold one bytes value"):
        tfr.open_shard(path, label_key="cls").sample(0)


def test_sequence_example_file_is_refused_clearly(shared_data):
    shard = tfr.open_shard(shared_data / "tfrecord" / "pytorch_data" / "sequence_example.tfrecord")
    with pytest.raises(FormatError, match="SequenceExample") as info:
        shard.sample(1)
    assert info.value.offset is not None and info.value.offset > 0


def _vector_images(shared_data: Path) -> tuple[dict, list[str]]:
    doc = json.loads((shared_data / "vectors" / "images.json").read_text())
    return {img["path"]: img for img in doc["images"]}, doc["classes"]


@pytest.mark.parametrize("name", ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord", "train-gzip.tfrecord.gz"])
def test_tensorflow_written_vectors(shared_data, name):
    images, classes = _vector_images(shared_data)
    path = shared_data / "vectors" / name
    shard = tfr.open_shard(path)  # no index, no label_base: TF's keys imply 1-based labels
    records = list(tfr.Reader(path))
    expected = json.loads((shared_data / "vectors" / "tensorflow_expected.json").read_text())
    counts = {
        "train-00000-of-00002.tfrecord": expected["shards"][0],
        "train-00001-of-00002.tfrecord": expected["shards"][1],
        "train-gzip.tfrecord.gz": expected["records"],
    }
    assert len(records) == len(shard) == counts[name]
    samples = list(shard)
    for record, (image, label) in zip(records, samples):
        features = tfr.parse_example(record)
        filename = features["image/filename"][0].decode()
        meta = images[filename]
        assert image == features["image/encoded"][0] == (shared_data / "vectors" / "images" / filename).read_bytes()
        assert features["image/class/label"].tolist() == [meta["label"] + 1]
        assert label == meta["label"] and features["image/class/text"] == [classes[label].encode()]
        assert features["image/height"].tolist() == [meta["height"]] and features["image/width"].tolist() == [meta["width"]]
    if not name.endswith(".gz"):
        assert [shard.sample(i) for i in range(len(shard))] == samples


def test_tfrecord_package_reads_our_shards(tmp_path):
    from tfrecord.reader import tfrecord_loader
    from tfrecord.tools.tfrecord2idx import create_index

    samples = make_samples(9)
    path = tmp_path / "ours.tfrecord"
    info = tfr.write_shard(path, samples)
    create_index(str(path), str(tmp_path / "ref.idx"))
    assert (tmp_path / info.index).read_bytes() == (tmp_path / "ref.idx").read_bytes()
    loaded = list(tfrecord_loader(str(path), str(tmp_path / info.index), shard=(0, 1)))
    assert len(loaded) == 9
    for sample, features in zip(samples, loaded):
        assert features["image/encoded"] == sample.image
        assert features["image/class/label"].tolist() == [sample.label + 1]
        assert features["image/filename"] == sample.filename.encode()


def _dali_read(files: list[str], indexes: list[str], batch_size: int = 4) -> tuple[list[bytes], list[int]]:
    from nvidia.dali import fn, pipeline_def
    from nvidia.dali import tfrecord as tfrec

    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def pipe():
        out = fn.readers.tfrecord(
            path=files, index_path=indexes, name="reader", random_shuffle=False, pad_last_batch=True,
            features={
                "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            },
        )
        return out["image/encoded"], out["image/class/label"]

    p = pipe()
    p.build()
    n = p.epoch_size("reader")
    images, labels = [], []
    while len(images) < n:
        encoded, label = p.run()
        for j in range(len(encoded)):
            images.append(encoded.at(j).tobytes())
            labels.append(int(np.asarray(label.at(j))[0]))
    return images[:n], labels[:n]


@requires_dali
def test_dali_reads_a_single_shard(tmp_path):
    samples = make_samples(10)
    path = tmp_path / "one.tfrecord"
    info = tfr.write_shard(path, samples)
    images, labels = _dali_read([str(path)], [str(tmp_path / info.index)])
    assert images == [s.image for s in samples]
    assert [label - tfr.FORMAT.label_base for label in labels] == [s.label for s in samples]


@requires_dali
def test_dali_reads_a_multi_shard_dataset(tmp_path):
    samples = make_samples(23)
    manifest = write_dataset(tmp_path / "ds", "tfrecord", samples, ["c0", "c1", "c2", "c3"], shard_bytes=300)
    assert len(manifest.shards) > 2 and manifest.label_base == 1
    assert Manifest.read(tmp_path / "ds").num_samples == 23
    files = [str(tmp_path / "ds" / s.file) for s in manifest.shards]
    indexes = [str(tmp_path / "ds" / s.index) for s in manifest.shards]
    images, labels = _dali_read(files, indexes, batch_size=5)
    assert images == [s.image for s in samples]  # each sample once, in order
    assert [label - manifest.label_base for label in labels] == [s.label for s in samples]
    ours = [tfr.open_shard(f, label_base=manifest.label_base).sample(i) for f in files for i in range(len(tfr.Reader(f)))]
    assert ours == [(s.image, s.label) for s in samples]


class ShardDataset:
    """What a Dataset layer does with a SampleReader (kept torch-free on purpose)."""

    def __init__(self, shard):
        self.shard = shard

    def __len__(self):
        return len(self.shard)

    def __getitem__(self, i):
        image, label = self.shard.sample(i)
        return image, label


def test_shard_pickles_with_paths_only(tmp_path):
    path = tmp_path / "p.tfrecord"
    tfr.write_shard(path, make_samples(5))
    shard = tfr.open_shard(path, label_base=1, verify=False)
    shard.sample(0)
    blob = pickle.dumps(shard)
    assert b"mmap" not in blob and len(blob) < 1000
    clone = pickle.loads(blob)
    assert clone.sample(4) == shard.sample(4) and clone.reader.verify is False


@pytest.mark.timeout(120)
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers(tmp_path, context):
    samples = make_samples(16)
    path = tmp_path / "w.tfrecord"
    tfr.write_shard(path, samples)
    shard = tfr.open_shard(path)
    len(shard)  # opened in the parent first: workers must reopen, not inherit the map
    loader = torch.utils.data.DataLoader(
        ShardDataset(shard), batch_size=3, num_workers=2, collate_fn=list, multiprocessing_context=context
    )
    got = [item for batch in loader for item in batch]
    assert got == [(s.image, s.label) for s in samples]
