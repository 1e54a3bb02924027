"""DALI reads what ``fastdata convert`` writes, in all three formats (CPU pipelines)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from testkit import requires_dali
from convkit import manifest_json, run_cli

pytestmark = requires_dali


def _run(pipe) -> tuple[list[bytes], list]:
    pipe.build()
    images, labels = pipe.run()
    return [np.array(images[i]).tobytes() for i in range(len(images))], [np.array(labels[i]).ravel() for i in range(len(labels))]


@pytest.fixture(scope="module")
def source(small_folder):
    src = small_folder
    classes = sorted(e.name for e in os.scandir(src) if e.is_dir())
    expected = {p.read_bytes(): classes.index(p.parent.name) for p in src.glob("*/*.jpg")}
    return src, expected


def _convert(capsys, src, out, fmt):
    code, _, err = run_cli(capsys, "convert", src, out, "--passthrough", "--format", fmt, "--shards", "3", "-q")
    assert code == 0, err
    return manifest_json(out)


def test_dali_mxnet_reader_with_the_finalize_index(source, tmp_path, capsys):
    from nvidia.dali import fn, pipeline_def

    src, expected = source
    m = _convert(capsys, src, tmp_path / "rec", "recordio")
    paths = [str(tmp_path / "rec" / s["file"]) for s in m["shards"]]
    index = str(tmp_path / "rec" / m["extra"]["dali_index"])

    @pipeline_def(batch_size=13, num_threads=1, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.mxnet(path=paths, index_path=[index], random_shuffle=False)
        return jpegs, labels

    images, labels = _run(pipe())
    assert sorted(images) == sorted(expected)
    assert [int(lab[0]) for lab in labels] == [expected[d] for d in images]


def test_dali_tfrecord_reader_with_per_shard_indexes(source, tmp_path, capsys):
    import nvidia.dali.tfrecord as tfrec
    from nvidia.dali import fn, pipeline_def

    src, expected = source
    m = _convert(capsys, src, tmp_path / "tf", "tfrecord")

    @pipeline_def(batch_size=13, num_threads=1, device_id=None)
    def pipe():
        features = fn.readers.tfrecord(
            path=[str(tmp_path / "tf" / s["file"]) for s in m["shards"]],
            index_path=[str(tmp_path / "tf" / s["index"]) for s in m["shards"]],
            features={
                "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            },
        )
        return features["image/encoded"], features["image/class/label"]

    images, labels = _run(pipe())
    assert sorted(images) == sorted(expected)
    # TensorFlow's convention on disk (1-based); the manifest says so
    assert m["label_base"] == 1
    assert [int(lab[0]) - 1 for lab in labels] == [expected[d] for d in images]


def test_dali_caffe_reader_on_every_lmdb_shard(source, tmp_path, capsys):
    from nvidia.dali import fn, pipeline_def

    src, expected = source
    m = _convert(capsys, src, tmp_path / "lmdb", "lmdb")
    seen = []
    for shard in m["shards"]:

        @pipeline_def(batch_size=shard["records"], num_threads=1, device_id=None)
        def pipe(path=str(tmp_path / "lmdb" / shard["file"])):
            jpegs, labels = fn.readers.caffe(path=path, random_shuffle=False)
            return jpegs, labels

        images, labels = _run(pipe())
        assert [int(lab[0]) for lab in labels] == [expected[d] for d in images]
        seen += images
    assert sorted(seen) == sorted(expected)


def test_dali_reads_real_photos_converted_by_two_workers(shared_data, tmp_path, capsys):
    from nvidia.dali import fn, pipeline_def

    src = shared_data / "photos" / "hymenoptera" / "val"
    code, _, err = run_cli(capsys, "convert", src, tmp_path / "h", "--passthrough", "--format", "recordio", "--workers", "2", "--shard-size", "4M", "-q")
    assert code == 0, err
    m = manifest_json(tmp_path / "h")
    assert len(m["shards"]) > 1

    @pipeline_def(batch_size=51, num_threads=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.mxnet(
            path=[str(tmp_path / "h" / s["file"]) for s in m["shards"]],
            index_path=[str(tmp_path / "h" / m["extra"]["dali_index"])],
            random_shuffle=False,
        )
        images = fn.decoders.image(jpegs, device="cpu")
        return images.shape(), labels

    p = pipe()
    p.build()
    total, labels = 0, []
    for _ in range(3):  # 153 images = 3 batches of 51
        shapes, lab = p.run()
        total += len(shapes)
        assert all(np.array(shapes[i])[2] == 3 for i in range(len(shapes)))
        labels += [int(np.array(lab[i]).ravel()[0]) for i in range(len(lab))]
    assert total == 153 == m["num_samples"]
    assert sorted(labels) == [0] * 70 + [1] * 83
