"""Files written by MXNet, TensorFlow, Caffe and BasicSR (../shared/data),
read through the datasets with no manual step: 0-based labels, class names
where the files carry them, original image bytes under decode=False."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch
from PIL import Image

from fastdata.datasets import ImageFolder, LMDBDataset, RecordIODataset, RecordIOStream, TFRecordDataset
from fastdata.errors import ConfigError, FastDataError


@pytest.fixture(scope="module")
def vectors(shared_data):
    return shared_data / "vectors"


@pytest.fixture(scope="module")
def originals(vectors):
    """Original image bytes -> label, from images.json (what im2rec and TF were given)."""
    meta = json.loads((vectors / "images.json").read_text())
    return meta["classes"], {(vectors / "images" / m["path"]).read_bytes(): m["label"] for m in meta["images"]}


def _check_against_originals(ds, originals):
    classes, by_bytes = originals
    assert len(ds) == len(by_bytes) == 13
    seen = set()
    for i in range(len(ds)):
        data, target = ds[i]
        assert by_bytes[bytes(data)] == target  # KeyError: bytes not an original image
        seen.add(bytes(data))
    assert len(seen) == 13
    assert ds.targets.tolist() == [by_bytes[bytes(ds[i][0])] for i in range(13)]


def test_im2rec_passthrough(vectors, originals):
    ds = RecordIODataset(vectors / "im2rec_passthrough.rec", decode=False)
    _check_against_originals(ds, originals)
    assert ds.classes == originals[0]  # from the .lst beside the .rec
    image, target = RecordIODataset(vectors / "im2rec_passthrough.rec")[0]
    assert isinstance(image, Image.Image) and image.mode == "RGB" and isinstance(target, int)


def test_im2rec_stream_sees_every_record_once(vectors, originals):
    stream = RecordIOStream(vectors / "im2rec_passthrough.rec", decode=False, rank=1, world_size=2, seed=0)
    other = RecordIOStream(vectors / "im2rec_passthrough.rec", decode=False, rank=0, world_size=2, seed=0)
    got = [bytes(d) for d, _ in stream] + [bytes(d) for d, _ in other]
    assert sorted(got) == sorted(originals[1])


@pytest.mark.parametrize("as_list", [False, True])
def test_tensorflow_imagenet_style_shards_are_0_based(vectors, originals, as_list):
    files = sorted(vectors.glob("train-*-of-00002.tfrecord"))
    path = files if as_list else str(vectors / "train-*-of-00002.tfrecord")
    ds = TFRecordDataset(path, decode=False)
    _check_against_originals(ds, originals)
    assert ds.classes == originals[0]  # from image/class/text
    assert [ds.locate(i)[0] for i in (0, 12)] == [str(files[0]), str(files[1])]


def test_tensorflow_label_base_can_be_overridden(vectors):
    one_based = TFRecordDataset(vectors / "train-00000-of-00002.tfrecord", label_base=0)
    assert one_based.targets.min() == 1
    widths = TFRecordDataset(vectors / "train-00000-of-00002.tfrecord", label_key="image/width")
    image, width = widths[0]
    assert width == image.size[0]  # another key: stored values (base 0)
    floats = TFRecordDataset(vectors / "train-00000-of-00002.tfrecord", label_key="extra/floats", decode=False)
    assert floats.targets.dtype == np.float32 and floats[0][1].tolist() == [0.0, -1.25]


def test_gzip_tfrecord_has_no_random_access(vectors):
    ds = TFRecordDataset(vectors / "train-gzip.tfrecord.gz")
    assert len(ds) == 13
    with pytest.raises(ConfigError, match="(?i)compress"):
        ds[0]


def test_mxnet_label_vectors(vectors):
    expected = json.loads((vectors / "mxnet_expected.json").read_text())["multilabel"]
    ds = RecordIODataset(vectors / "multilabel.rec", decode=False)
    assert ds.targets.dtype == np.float32 and ds.targets.shape == (len(expected), 3)
    for i in range(len(ds)):
        data, target = ds[i]
        assert bytes(data).hex() == expected[str(i)]["payload_hex"]
        assert target.tolist() == expected[str(i)]["label"]
    with pytest.raises(FastDataError, match="not class indices"):
        _ = ds.classes


def test_detection_vectors_collate(shared_data):
    rec = shared_data / "recordio" / "detection_label_vectors" / "train.rec"
    ds = RecordIODataset(rec, transform=lambda im: im.size)
    assert ds.targets.shape == (12, 9)
    loader = torch.utils.data.DataLoader(ds, batch_size=4)
    sizes, labels = next(iter(loader))
    assert labels.shape == (4, 9) and labels[0, 0] == 4 and labels[0, 1] == 5


def test_caffe_raw_datum_lmdb(shared_data):
    root = shared_data / "lmdb" / "caffe_raw_datum"
    expected = [int(line.split()[1]) for line in (root / "test_files.txt").read_text().split("\n") if line.strip()]
    ds = LMDBDataset(root / "test_lmdb")
    assert ds.targets.tolist() == expected and ds.classes == ["0", "1"]
    for i in range(len(ds)):
        image, target = ds[i]
        assert image.mode == "RGB" and image.size == (256, 256) and target == expected[i]
    data, _ = LMDBDataset(root / "test_lmdb", decode=False)[0]
    assert bytes(data[:2]) == b"P6"  # raw pixels come back as a lossless PPM file


def test_png_values_lmdb(shared_data):
    ds = LMDBDataset(shared_data / "lmdb" / "png_values" / "gt.lmdb")
    assert len(ds) == 2 and ds.targets.tolist() == [-1, -1]  # no labels stored
    raw = LMDBDataset(shared_data / "lmdb" / "png_values" / "gt.lmdb", decode=False)
    assert raw.shards.name(0, 0).endswith("record 0 (key b'baboon')")  # what errors and EncodedImage.name say
    for i in range(2):
        data, _ = raw[i]
        assert bytes(data[:4]) == b"\x89PNG"
        image = ds[i][0]
        assert image.mode == "RGB" and image.size == Image.open(io.BytesIO(data)).size
    assert ds[1][0].size == (240, 360)  # meta_info.txt: comic.png (360,240,3)


def test_hymenoptera_image_folder_matches_torchvision_rules(shared_data):
    ds = ImageFolder(shared_data / "photos" / "hymenoptera" / "train", decode=False)
    assert ds.classes == ["ants", "bees"]
    paths = [p for p, _ in ds.samples]
    assert len(ds) == 244 and not any(p.endswith(".gif") for p in paths)  # imageNotFound.gif is not accepted
    assert any(p.endswith("formica.jpeg") for p in paths)
    assert paths == sorted(paths) and np.bincount(ds.targets).tolist() == [123, 121]


@pytest.mark.parametrize("source", ["pillow", "generated"])
def test_every_edge_case_photo_loads_as_rgb(request, source):
    """Pillow's own test images, and the generated edge cases of the same kinds (tests/testkit.py)."""
    edge = (request.getfixturevalue("shared_data") / "photos" / "edgecases" if source == "pillow"
            else request.getfixturevalue("edge_images"))
    ds = ImageFolder(edge)
    assert len(ds) == 25
    for i in range(len(ds)):
        image, _ = ds[i]
        assert image.mode == "RGB"
    rotated = [ds[i][0].size for i in range(len(ds)) if ds.classes[ds.targets[i]] == "exif_orientation_jpeg"]
    assert len(rotated) == 7 and len(set(rotated)) == 1  # EXIF orientation honoured: all upright
