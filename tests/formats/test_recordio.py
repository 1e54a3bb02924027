"""RecordIO against the files MXNet itself wrote (../shared/data), plus byte-exact writing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fastdata.formats.recordio import (
    IRHeader,
    Reader,
    ShardReader,
    Writer,
    build_index,
    open_shard,
    pack,
    read_lst,
    unpack,
)


@pytest.fixture(scope="module")
def vectors(shared_data) -> Path:
    return shared_data / "vectors"


@pytest.fixture(scope="module")
def expected(vectors) -> dict:
    return json.loads((vectors / "mxnet_expected.json").read_text())


def _index_lines(path: Path) -> list[tuple[int, int]]:
    return [tuple(map(int, line.split("\t"))) for line in path.read_text().splitlines()]


def test_multipart_records_are_joined_with_the_magic_restored(vectors, expected):
    reader = Reader(vectors / "multipart.rec")
    want = [bytes.fromhex(expected["multipart"][str(i)]) for i in range(len(expected["multipart"]))]
    assert len(reader) == len(want) == 6
    assert [reader[i] for i in range(6)] == want
    assert list(reader) == want
    assert reader[4] == b"\x0a\x23\xd7\xce" and reader[5] == b""
    assert [reader.key(i) for i in range(6)] == list(range(6))
    assert [reader.get(k) for k in range(6)] == want
    # the file really holds continuation parts: record 4 (magic only) is two empty parts
    raw = (vectors / "multipart.rec").read_bytes()
    start = reader.offset(4)
    assert raw[start + 4 : start + 8] == (1 << 29).to_bytes(4, "little")
    assert raw[start + 12 : start + 16] == (3 << 29).to_bytes(4, "little")


def test_sequential_rec_without_index_is_scanned(vectors, expected):
    assert not (vectors / "sequential.idx").exists()
    reader = Reader(vectors / "sequential.rec")
    assert [r.hex() for r in reader] == expected["sequential"]
    assert [reader.key(i) for i in range(len(reader))] == list(range(7))
    assert reader.get(3).hex() == expected["sequential"][3]


def test_multilabel_headers(vectors, expected):
    reader = Reader(vectors / "multilabel.rec")
    assert len(reader) == len(expected["multilabel"])
    for i in range(len(reader)):
        want = expected["multilabel"][str(reader.key(i))]
        header, data = unpack(reader[i])
        assert header.flag == 3 and header.id == want["id"] and header.id2 == 0
        assert header.label.dtype == np.float32 and header.label.tolist() == want["label"]
        assert data.hex() == want["payload_hex"]
    samples = open_shard(vectors / "multilabel.rec")
    image, label = samples.sample(2)
    assert image.hex() == expected["multilabel"]["2"]["payload_hex"]
    assert label.dtype == np.float32 and label.tolist() == expected["multilabel"]["2"]["label"]


def test_im2rec_passthrough_holds_the_original_files(vectors):
    images = json.loads((vectors / "images.json").read_text())["images"]
    label_of = {img["path"]: img["label"] for img in images}
    lst = read_lst(vectors / "im2rec_passthrough.lst")
    assert len(lst) == len(images) == 13
    by_id = {index: (label, rel) for index, label, rel in lst}
    reader = open_shard(vectors / "im2rec_passthrough.rec")
    assert isinstance(reader, ShardReader) and len(reader) == 13
    # im2rec writes the shuffled list order; the .idx follows it and keys are the .lst ids
    assert [reader.records.key(i) for i in range(13)] == [index for index, _, _ in lst]
    for i in range(len(reader)):
        image, label = reader.sample(i)
        header = reader.header(i)
        lst_label, rel = by_id[header.id]
        assert header.id == reader.records.key(i) and header.flag == 0
        assert isinstance(label, int) and label == lst_label == label_of[rel]
        assert image == (vectors / "images" / rel).read_bytes()


def test_im2rec_resized_records_are_32px_jpegs(vectors):
    images = {img["path"]: img for img in json.loads((vectors / "images.json").read_text())["images"]}
    by_id = {index: (label, rel) for index, label, rel in read_lst(vectors / "im2rec_resized.lst")}
    reader = open_shard(vectors / "im2rec_resized.rec")
    assert len(reader) == 13
    for i in range(len(reader)):
        image, label = reader.sample(i)
        lst_label, rel = by_id[reader.header(i).id]
        assert label == lst_label
        with Image.open(io.BytesIO(image)) as im:
            assert im.format == "JPEG" and min(im.size) == 32
            src = images[rel]
            assert abs(im.size[0] / im.size[1] - src["width"] / src["height"]) < 0.05


def test_shuffled_idx_keys_equal_header_ids_and_lst(shared_data):
    folder = shared_data / "recordio" / "adaface_shuffled_idx"
    reader = open_shard(folder / "train.rec")
    lst = {index: (label, rel) for index, label, rel in read_lst(folder / "train.lst")}
    keys = [reader.records.key(i) for i in range(len(reader))]
    assert keys == [0, 4, 7, 5, 1, 6, 3, 2]  # file order, not key order
    offsets = [reader.records.offset(i) for i in range(len(reader))]
    assert offsets == sorted(offsets) and offsets[0] == 0
    for i, key in enumerate(keys):
        image, label = reader.sample(i)
        assert reader.header(i).id == key
        assert label == lst[key][0] and isinstance(label, int)
        assert image[:2] == b"\xff\xd8"
        with Image.open(io.BytesIO(image)) as im:
            assert im.size == (112, 112)
        assert reader.records.get(key) == reader.records[i]


def test_detection_label_vectors(shared_data):
    folder = shared_data / "recordio" / "detection_label_vectors"
    reader = open_shard(folder / "train.rec")
    lst = {index: labels for index, labels, _ in read_lst(folder / "train.lst")}
    assert len(reader) == len(lst) == 12
    for i in range(len(reader)):
        image, label = reader.sample(i)
        header = reader.header(i)
        assert header.flag == 9 and header.label.shape == (9,)
        assert label.dtype == np.float32 and label.shape == (9,)
        np.testing.assert_array_equal(label, np.float32(lst[header.id]))
        assert label[:2].tolist() == [4.0, 5.0]
        assert image[:2] == b"\xff\xd8"


def test_read_lst_shapes(shared_data, vectors):
    items = read_lst(vectors / "im2rec_passthrough.lst")
    assert items[0] == (9, 2.0, "zebra_7/zebra_7_00.jpg")
    detection = read_lst(shared_data / "recordio" / "detection_label_vectors" / "train.lst")
    assert isinstance(detection[0][1], tuple) and len(detection[0][1]) == 9
    assert detection[0][2] == "Mercedes/mercedes/1.jpg"


@pytest.mark.parametrize("name", ["multipart", "multilabel", "sequential"])
def test_writer_reproduces_mxnet_bytes(tmp_path, vectors, expected, name):
    if name == "multilabel":
        payloads = [
            pack(IRHeader(0, e["label"], e["id"], 0), bytes.fromhex(e["payload_hex"]))
            for e in (expected[name][str(i)] for i in range(len(expected[name])))
        ]
    elif name == "multipart":
        payloads = [bytes.fromhex(expected[name][str(i)]) for i in range(len(expected[name]))]
    else:
        payloads = [bytes.fromhex(h) for h in expected[name]]
    with Writer(tmp_path / "out.rec") as writer:
        for p in payloads:
            writer.write(p)
    assert (tmp_path / "out.rec").read_bytes() == (vectors / f"{name}.rec").read_bytes()
    if (vectors / f"{name}.idx").exists():
        assert (tmp_path / "out.idx").read_bytes() == (vectors / f"{name}.idx").read_bytes()


def test_build_index_matches_mxnet(tmp_path, vectors, shared_data):
    build_index(vectors / "multipart.rec", tmp_path / "a.idx")
    assert (tmp_path / "a.idx").read_bytes() == (vectors / "multipart.idx").read_bytes()
    # im2rec keys are IRHeader ids; its lines are in file order here, so the text matches exactly
    for rec in (vectors / "im2rec_passthrough.rec", shared_data / "recordio/adaface_shuffled_idx/train.rec"):
        build_index(rec, tmp_path / "b.idx", keys="id")
        assert _index_lines(tmp_path / "b.idx") == _index_lines(rec.with_suffix(".idx"))
    build_index(vectors / "sequential.rec", tmp_path / "s.idx")
    assert [Reader(vectors / "sequential.rec", tmp_path / "s.idx")[i] for i in range(7)] == list(
        Reader(vectors / "sequential.rec")
    )
