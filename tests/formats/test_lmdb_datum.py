"""caffe.Datum encoding, against the datums Caffe's convert_imageset wrote."""

from __future__ import annotations

import numpy as np
import pytest

from fastdata.errors import ConfigError, FormatError
from fastdata.formats.lmdb import (
    Datum,
    Reader,
    datum_to_image,
    decode_datum,
    encode_datum,
)


@pytest.fixture(scope="module")
def caffe_lmdb(shared_data):
    return shared_data / "lmdb" / "caffe_raw_datum"


def _caffe_entries(caffe_lmdb):
    with Reader(caffe_lmdb / "test_lmdb") as r:
        return list(r)


def test_caffe_datums_decode_and_reencode_byte_identical(caffe_lmdb):
    entries = _caffe_entries(caffe_lmdb)
    assert len(entries) == 8
    for key, value in entries:
        d = decode_datum(value, key=key)
        assert (d.channels, d.height, d.width, d.encoded) == (3, 256, 256, False)
        assert len(d.data) == 3 * 256 * 256 and d.float_data.size == 0
        # our encoder writes what Caffe's protobuf library wrote, byte for byte
        assert encode_datum(d.data, d.label, encoded=False, channels=3, height=256, width=256) == value


def test_caffe_labels_match_the_image_list(caffe_lmdb):
    expected = {}
    for line in (caffe_lmdb / "test_files.txt").read_text().split("\n"):
        if line.strip():
            name, label = line.split()
            expected[name] = int(label)
    got = {key.decode().split("_", 1)[1]: decode_datum(value).label for key, value in _caffe_entries(caffe_lmdb)}
    assert got == expected


def test_caffe_raw_pixels_become_rgb(caffe_lmdb):
    images = {key.decode().split("_", 1)[1]: datum_to_image(decode_datum(value)) for key, value in _caffe_entries(caffe_lmdb)}
    for img in images.values():
        assert img.shape == (256, 256, 3) and img.dtype == np.uint8 and img.flags.c_contiguous
        assert img.std() > 10  # a photo, not a blank or constant plane
    # Reasoning check on the channel order: cr9.jpeg is a red sports car and
    # c7.jpg a kitten on a wooden floor. In RGB the car body must be strongly
    # red and the floor warm (R > B); had the BGR planes not been swapped,
    # both would come out blue.
    body = images["cr9.jpeg"][80:120, 60:140].reshape(-1, 3).mean(axis=0)
    assert body[0] > 2 * body[1] and body[0] > 2 * body[2]
    floor = images["c7.jpg"][215:, :].reshape(-1, 3).mean(axis=0)
    assert floor[0] > floor[1] > floor[2]


def test_datum_to_image_reverses_planes_and_moves_channels_last():
    c, h, w = 3, 4, 5
    chw = np.arange(c * h * w, dtype=np.uint8).reshape(c, h, w)  # planes B, G, R
    img = datum_to_image(decode_datum(encode_datum(chw.tobytes(), 0, encoded=False, channels=c, height=h, width=w)))
    assert img.shape == (h, w, 3)
    np.testing.assert_array_equal(img[..., 0], chw[2])  # R
    np.testing.assert_array_equal(img[..., 1], chw[1])
    np.testing.assert_array_equal(img[..., 2], chw[0])  # B


def test_gray_datum_is_repeated_into_rgb():
    plane = np.arange(12, dtype=np.uint8).reshape(3, 4)
    img = datum_to_image(Datum(channels=1, height=3, width=4, data=plane.tobytes()))
    assert img.shape == (3, 4, 3)
    for ch in range(3):
        np.testing.assert_array_equal(img[..., ch], plane)


@pytest.mark.parametrize(
    "datum, match",
    [
        (Datum(channels=3, height=2, width=2, data=b"\0" * 11), "11 data bytes"),
        (Datum(channels=3, height=0, width=2, data=b""), "data bytes"),
        (Datum(data=b"\xff\xd8\xff", encoded=True), "encoded"),
        (Datum(channels=4, height=1, width=1, data=b"\0" * 4), "4 channels"),
        (Datum(channels=1, height=1, width=2, float_data=np.ones(2, np.float32)), "float_data"),
    ],
)
def test_datum_to_image_refuses_what_is_not_pixels(datum, match):
    with pytest.raises(FormatError, match=match) as info:
        datum_to_image(datum, path="x/data.mdb", key=b"k1")
    assert "x/data.mdb" in str(info.value) and "k1" in str(info.value)


def test_round_trip_of_random_datums():
    rng = np.random.default_rng(0)
    for i in range(300):
        encoded = bool(i % 2)
        c, h, w = (int(v) for v in rng.integers(0, 5, size=3))
        raw_size = c * h * w
        data = rng.integers(0, 256, size=int(rng.integers(0, 50)) if encoded else raw_size, dtype=np.uint8).tobytes()
        floats = rng.normal(size=int(rng.integers(0, 4))).astype(np.float32) if i % 3 else None
        label = int(rng.integers(-(2**31), 2**31))
        value = encode_datum(data, label, encoded=encoded, channels=c, height=h, width=w, float_data=floats)
        d = decode_datum(value)
        assert d == Datum(c, h, w, data, label, floats if floats is not None else np.zeros(0, np.float32), encoded)
        assert d.float_data.dtype == np.float32


def test_exact_bytes_of_an_encoded_datum():
    # data (field 4), label (5), encoded (7): what Caffe's convert_imageset --encoded writes
    assert encode_datum(b"abc", 3) == bytes.fromhex("2203616263" "2803" "3801")
    # shape fields when known; negative labels are sign-extended 10-byte varints
    assert encode_datum(b"", -1, height=2, width=1) == bytes.fromhex("1002" "1801" "2200" "28ffffffffffffffffff01" "3801")


def test_float_data_packed_or_not_and_unknown_fields():
    floats = np.array([1.5, -2.0, 3.25], dtype="<f4")
    unpacked = encode_datum(b"", 0, encoded=False, float_data=floats)
    assert unpacked.count(b"\x35") == 3  # one fixed32 tag per float, as caffe.proto (proto2, not packed) says
    packed = bytes([0x32, 12]) + floats.tobytes() + bytes.fromhex("2807")
    unknown = bytes.fromhex("a00601") + bytes([0x4A, 2]) + b"zz"  # field 100 varint, field 9 bytes: skipped
    for value in (unpacked, packed + unknown):
        np.testing.assert_array_equal(decode_datum(value).float_data, floats)
    assert decode_datum(packed + unknown).label == 7


def test_absent_fields_take_caffe_defaults():
    assert decode_datum(b"") == Datum()
    assert decode_datum(b"").encoded is False  # caffe.proto: [default = false]


@pytest.mark.parametrize(
    "value, match",
    [
        (b"\x22\x10abc", "claims 16 bytes"),  # data longer than the value
        (b"\x08", "truncated varint"),
        (b"\x0a\x01x", "field 1 has wire type 2"),  # channels sent as bytes
        (b"\x20\x05", "field 4"),  # data sent as a varint
        (b"\x32\x03abc", "multiple of 4"),  # packed floats of 3 bytes
        (b"\x0b", "wire type 3"),  # a group
        (bytes(range(256)), "not a caffe.Datum|malformed"),
    ],
)
def test_malformed_datums_raise_format_error_naming_file_and_key(value, match):
    with pytest.raises(FormatError, match=match) as info:
        decode_datum(value, path="shard-00000.lmdb/data.mdb", key=b"000000042")
    text = str(info.value)
    assert "shard-00000.lmdb/data.mdb" in text and "000000042" in text


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"data": b"", "label": 2**31}, "int32"),
        ({"data": b"", "label": 1.5}, "label must be an int"),
        ({"data": b"\0" * 5, "label": 0, "encoded": False, "channels": 3, "height": 1, "width": 1}, "channels"),
        ({"data": b"", "label": 0, "height": -1}, ">= 0"),
    ],
)
def test_encode_refuses_what_a_datum_cannot_hold(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        encode_datum(**kwargs)


def test_int32_fields_wrap_like_protobuf():
    # a writer that sent label as a 64-bit varint: protobuf keeps the low 32 bits
    value = bytes.fromhex("28") + bytes.fromhex("ffffffff0f")  # 0xFFFFFFFF
    assert decode_datum(value).label == -1
