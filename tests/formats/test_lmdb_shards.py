"""Image-sample LMDB shards: write_shard / open_shard, determinism, foreign layouts."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from crc32c import crc32c
from PIL import Image

from fastdata.errors import ConfigError, FormatError
from fastdata.formats import Sample, registry
from fastdata.formats.dataset_writer import write_dataset
from fastdata.formats.lmdb import (
    FORMAT,
    NO_LABEL,
    Reader,
    Writer,
    datum_to_image,
    decode_datum,
    encode_datum,
    open_shard,
    write_shard,
)

JPEG_SOI = b"\xff\xd8\xff\xe0"


def make_samples(n: int, seed: int = 0, start: int = 0) -> list[Sample]:
    # FFCV's trick: each payload carries its own index, so any mix-up shows
    rng = np.random.default_rng(seed)
    return [
        Sample(
            image=JPEG_SOI + i.to_bytes(4, "little") + rng.integers(0, 256, size=int(rng.integers(0, 5000)), dtype=np.uint8).tobytes(),
            label=int(rng.integers(0, 10)),
            id=i,
            height=int(rng.integers(0, 3)) * 100,
            width=int(rng.integers(0, 3)) * 100,
        )
        for i in range(start, start + n)
    ]


def test_round_trip_and_shard_info(tmp_path):
    samples = make_samples(120, start=1000)
    info = write_shard(tmp_path / "shard-00000.lmdb", samples)
    shard = tmp_path / "shard-00000.lmdb"
    data = (shard / "data.mdb").read_bytes()
    assert info.file == "shard-00000.lmdb" and info.records == 120 and info.index is None
    assert info.bytes == len(data) and info.data_digest("data.mdb") == "crc32c:%08x" % crc32c(data) and info.checksums == "shard-00000.lmdb.crc"
    assert sorted(p.name for p in shard.iterdir()) == ["data.mdb"]  # lock.mdb removed, nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard-00000.lmdb", "shard-00000.lmdb.crc"]  # no .partial left

    reader = open_shard(shard)
    assert len(reader) == 120
    assert [reader.sample(i) for i in range(120)] == [(s.image, s.label) for s in samples]
    assert reader.key(0) == b"000001000" and reader.reader._key_index().arithmetic
    for (key, value), s in zip(Reader(shard), samples):
        d = decode_datum(value)
        assert key == b"%09d" % s.id
        assert (d.encoded, d.label, d.height, d.width, d.channels, d.data) == (True, s.label, s.height, s.width, 0, s.image)


def test_same_samples_give_identical_bytes(tmp_path):
    samples = make_samples(300, seed=5)
    a = write_shard(tmp_path / "a.lmdb", samples)
    b = write_shard(tmp_path / "b.lmdb", samples)
    assert a.data_digest("data.mdb") == b.data_digest("data.mdb") and (tmp_path / "a.lmdb/data.mdb").read_bytes() == (tmp_path / "b.lmdb/data.mdb").read_bytes()
    # Map growth aborts and replays batches; it must not make the bytes depend
    # on anything but the input (and the initial map size: the meta page records the map size).
    small_1 = write_shard(tmp_path / "c.lmdb", samples, map_size=16 << 10)
    small_2 = write_shard(tmp_path / "d.lmdb", samples, map_size=16 << 10)
    assert small_1.data_digest("data.mdb") == small_2.data_digest("data.mdb")
    # ... and not on the process either (heap contents, allocation history)
    code = textwrap.dedent(
        f"""
        import os, sys
        junk = [os.urandom(n) for n in range(1, 20000, 7)]
        sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
        from test_lmdb_shards import make_samples
        from fastdata.formats.lmdb import write_shard
        print(write_shard({str(tmp_path / 'e.lmdb')!r}, make_samples(300, seed=5)).data_digest('data.mdb'))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == a.data_digest("data.mdb")


def test_rewriting_a_shard_replaces_it(tmp_path):
    write_shard(tmp_path / "s.lmdb", make_samples(10))
    info = write_shard(tmp_path / "s.lmdb", make_samples(4, seed=1))
    assert info.records == 4 and len(open_shard(tmp_path / "s.lmdb")) == 4


@pytest.mark.parametrize(
    "samples, match",
    [
        ([Sample(b"a", 0, id=3), Sample(b"b", 0, id=3)], "ids must increase"),
        ([Sample(b"a", 0, id=-1)], "sample ids"),
        ([Sample(b"a", 0, id=10**9)], "sample ids"),
        ([Sample(b"a", 0.5, id=0)], "label"),
        ([Sample(b"a", [1.0, 2.0], id=0)], "label"),
    ],
)
def test_refused_samples_leave_nothing_behind(tmp_path, samples, match):
    with pytest.raises(ConfigError, match=match):
        write_shard(tmp_path / "s.lmdb", samples)
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_leaves_nothing_behind(tmp_path):
    def samples():
        yield from make_samples(50)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_shard(tmp_path / "s.lmdb", samples())
    assert list(tmp_path.iterdir()) == []


def test_registered_format_and_a_multi_shard_dataset(tmp_path):
    assert registry.get("lmdb") is FORMAT
    assert (FORMAT.suffix, FORMAT.label_base, FORMAT.write_shard, FORMAT.open_shard) == (".lmdb", 0, write_shard, open_shard)
    samples = make_samples(60, seed=2)
    manifest = write_dataset(tmp_path, "lmdb", samples, ["a", "b"], shard_bytes=40_000)
    assert len(manifest.shards) > 3
    got = []
    for shard in manifest.shards:
        got += [open_shard(tmp_path / shard.file).sample(i) for i in range(shard.records)]
    assert got == [(s.image, s.label) for s in samples]
    with pytest.raises(ConfigError, match="verify"):
        open_shard(tmp_path / manifest.shards[0].file, label_base=1)


def test_basicsr_png_values(shared_data):
    root = shared_data / "lmdb" / "png_values" / "gt.lmdb"
    # BasicSR's meta_info.txt says baboon is (480,500,3), but the PNG stored in
    # this LMDB is 492 pixels wide: trust the image, not the side file.
    assert "baboon.png (480,500,3)" in (root / "meta_info.txt").read_text()
    expected = {b"baboon": (480, 492), b"comic": (360, 240)}
    reader = open_shard(root)
    assert [reader.key(i) for i in range(len(reader))] == [b"baboon", b"comic"]
    for i in range(len(reader)):
        image, label = reader.sample(i)
        assert label == NO_LABEL
        with Image.open(io.BytesIO(image)) as im:
            im.load()
            assert (im.format, im.mode, (im.height, im.width)) == ("PNG", "RGB", expected[reader.key(i)])


def test_caffe_raw_datums_come_out_as_lossless_ppm(shared_data):
    root = shared_data / "lmdb" / "caffe_raw_datum"
    labels = dict(line.split() for line in (root / "test_files.txt").read_text().splitlines() if line.strip())
    reader = open_shard(root / "test_lmdb")
    raw = Reader(root / "test_lmdb")
    for i in range(len(reader)):
        image, label = reader.sample(i)
        key, value = raw[i]
        assert label == int(labels[key.decode().split("_", 1)[1]])
        assert image.startswith(b"P6\n256 256\n255\n")
        with Image.open(io.BytesIO(image)) as im:
            np.testing.assert_array_equal(np.asarray(im.convert("RGB")), datum_to_image(decode_datum(value)))


def test_datum_without_encoded_field_but_with_an_image_is_encoded(tmp_path):
    jpeg = JPEG_SOI + b"rest of a jpeg"
    with Writer(tmp_path / "db") as w:
        w.write(b"0", b"\x22" + bytes([len(jpeg)]) + jpeg + b"\x28\x04")  # data + label, no field 7 (as DALI reads it)
        w.write(b"1", encode_datum(b"\x01\x02\x03", 5, encoded=False, channels=3, height=1, width=1))
    reader = open_shard(tmp_path / "db")
    assert reader.sample(0) == (jpeg, 4)
    assert reader.sample(1) == (b"P6\n1 1\n255\n\x03\x02\x01", 5)  # BGR pixel 1,2,3 -> RGB 3,2,1


def test_pickled_values_are_refused_not_loaded(tmp_path):
    import pickle

    class Boom:  # unpickling this would run code
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled!')",))

    with Writer(tmp_path / "db") as w:
        w.write(b"000000000", pickle.dumps((b"\xff\xd8\xff", 1, Boom())))
    with pytest.raises(FormatError, match="pickle") as info:
        open_shard(tmp_path / "db").sample(0)
    assert "000000000" in str(info.value)


def test_crnn_layout_is_read_by_key(tmp_path):
    # CRNN / text-recognition LMDBs: num-samples, image-%09d (1-based), label-%09d (text).
    # They are not sample shards (labels are strings); Reader reads them by key.
    with Writer(tmp_path / "crnn") as w:
        w.write(b"num-samples", b"2")
        for i, word in enumerate([b"hello", b"world"], start=1):
            w.write(b"image-%09d" % i, JPEG_SOI + word)
            w.write(b"label-%09d" % i, word)
    r = Reader(tmp_path / "crnn")
    n = int(r.get(b"num-samples"))
    pairs = [(r.get(b"image-%09d" % i), r.get(b"label-%09d" % i).decode()) for i in range(1, n + 1)]
    assert pairs == [(JPEG_SOI + b"hello", "hello"), (JPEG_SOI + b"world", "world")]
