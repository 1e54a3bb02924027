"""open_dataset chooses the class from what fastdata.formats.detect finds (the
manifest, the first bytes, the layout, the suffix) or an image folder, reads
a converted directory's manifest once, and says what it found when nothing fits."""

from __future__ import annotations

import pytest

from fastdata.datasets import (
    FormatStream,
    ImageFolder,
    LMDBDataset,
    RecordIODataset,
    RecordIOStream,
    TFRecordDataset,
    TFRecordStream,
    open_dataset,
)
from fastdata.errors import ConfigError, ManifestError
from fastdata.formats import Manifest


def test_foreign_files_by_suffix_and_layout(shared_data):
    v = shared_data / "vectors"
    assert type(open_dataset(v / "im2rec_passthrough.rec")) is RecordIODataset
    assert type(open_dataset(v / "train-00000-of-00002.tfrecord")) is TFRecordDataset
    assert type(open_dataset(str(v / "train-*-of-00002.tfrecord"))) is TFRecordDataset
    assert type(open_dataset([v / "train-00001-of-00002.tfrecord"])) is TFRecordDataset
    assert type(open_dataset(shared_data / "lmdb" / "png_values" / "gt.lmdb")) is LMDBDataset
    assert type(open_dataset(v / "images")) is ImageFolder


def test_streaming_variants(shared_data):
    v = shared_data / "vectors"
    assert type(open_dataset(v / "im2rec_passthrough.rec", streaming=True)) is RecordIOStream
    stream = open_dataset(v / "train-00000-of-00002.tfrecord", streaming=True, seed=4)
    assert type(stream) is TFRecordStream and stream.seed == 4 and len(stream) == 7
    # a format with no stream alias gets the generic stream (every format streams)
    lmdb = open_dataset(shared_data / "lmdb" / "png_values" / "gt.lmdb", streaming=True, shuffle=False, decode=False)
    assert type(lmdb) is FormatStream and lmdb.format == "lmdb" and len(list(lmdb)) == 2
    with pytest.raises(ConfigError, match="image folder has no streaming"):
        open_dataset(v / "images", streaming=True)


def test_files_without_a_known_suffix_are_sniffed(shared_data, tmp_path):
    v = shared_data / "vectors"
    (tmp_path / "train-00000-of-00001").symlink_to(v / "train-00000-of-00002.tfrecord")
    (tmp_path / "data.bin").symlink_to(v / "im2rec_passthrough.rec")
    (tmp_path / "notes").write_bytes(b"hello, not a dataset")
    assert type(open_dataset(tmp_path / "train-00000-of-00001")) is TFRecordDataset
    assert type(open_dataset(tmp_path / "data.bin")) is RecordIODataset
    with pytest.raises(ConfigError, match="not a RecordIO file .*not a TFRecord file .*which tool wrote it"):
        open_dataset(tmp_path / "notes")


def test_unrecognisable_paths(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        open_dataset(tmp_path / "missing")
    with pytest.raises(ConfigError, match="matches no file"):
        open_dataset(str(tmp_path / "*.rec"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="not a fastdata dataset .*nor an image folder"):
        open_dataset(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{")
    with pytest.raises(ManifestError):
        open_dataset(tmp_path / "bad")


def test_wrong_class_for_a_converted_directory(tmp_path):
    from dskit import write_kind

    root = write_kind(tmp_path, "lmdb", n=3)
    with pytest.raises(ConfigError, match="lmdb dataset, not recordio"):
        RecordIODataset(root)


def test_a_converted_directory_s_manifest_is_read_once(tmp_path, monkeypatch):
    from dskit import write_kind

    root = write_kind(tmp_path, "recordio", n=3)
    reads = []
    real = Manifest.read.__func__
    monkeypatch.setattr(Manifest, "read", classmethod(lambda cls, d: reads.append(d) or real(cls, d)))
    ds = open_dataset(root, decode=False)
    assert type(ds) is RecordIODataset and len(ds) == 3 and len(reads) == 1
    reads.clear()
    assert type(open_dataset(root, streaming=True)) is RecordIOStream and len(reads) == 1


def test_a_split_output_root_names_the_datasets_to_open(tmp_path):
    from dskit import write_kind

    out = tmp_path / "out"
    for split in ("train", "val"):
        write_kind(out / split, "recordio", n=3)
    for streaming in (False, True):
        with pytest.raises(ConfigError) as err:
            open_dataset(out, streaming=streaming)
        assert str(err.value) == (
            f"{out} holds fastdata datasets for the splits train, val, not one dataset: open {out}/train or {out}/val"
        )
    with pytest.raises(ConfigError, match=f"open {out}/train or {out}/val"):
        RecordIODataset(out)
    assert type(open_dataset(out / "val", decode=False)) is RecordIODataset
