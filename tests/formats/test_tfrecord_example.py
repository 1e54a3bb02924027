"""tf.train.Example / SequenceExample encoding and parsing against the protobuf reference."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdata.errors import ConfigError, FormatError
from fastdata.formats import tfrecord as tfr
from fastdata.formats._protowire import FIXED32, VARINT, encode_varint, len_field, tag

example_pb2 = pytest.importorskip("tfrecord.example_pb2", reason="the tfrecord package provides the reference protobuf")


def reference(record: bytes) -> dict:
    """Parse with the protobuf runtime (the tfrecord package's generated classes)."""
    ex = example_pb2.Example.FromString(record)
    out = {}
    for key, feature in ex.features.feature.items():
        kind = feature.WhichOneof("kind")
        values = list(getattr(feature, kind).value) if kind else []
        out[key] = (kind, values)
    return out


def as_reference(parsed: dict) -> dict:
    kinds = {list: "bytes_list", np.float32: "float_list", np.int64: "int64_list"}
    out = {}
    for key, value in parsed.items():
        kind = "bytes_list" if isinstance(value, list) else kinds[value.dtype.type]
        out[key] = (kind, list(value) if isinstance(value, list) else value.tolist())
    return out


def test_encoding_matches_protobuf():
    features = {
        "b": b"\x00\xffbytes",
        "s": "naïve",
        "bl": [b"a", b"", b"c"],
        "i": 7,
        "neg": [-1, -(2**63), 2**63 - 1, 0],
        "f": 0.5,
        "fl": [1.0, -2.5, 3],
        "arr_u8": np.arange(5, dtype=np.uint8),
        "arr_f64": np.linspace(0, 1, 4),
        "flag": True,
    }
    record = tfr.encode_example(features)
    ref = reference(record)
    assert ref["b"] == ("bytes_list", [b"\x00\xffbytes"])
    assert ref["s"] == ("bytes_list", ["naïve".encode()])
    assert ref["bl"] == ("bytes_list", [b"a", b"", b"c"])
    assert ref["i"] == ("int64_list", [7])
    assert ref["neg"] == ("int64_list", [-1, -(2**63), 2**63 - 1, 0])
    assert ref["f"] == ("float_list", [0.5])
    assert ref["fl"] == ("float_list", [1.0, -2.5, 3.0])
    assert ref["arr_u8"] == ("int64_list", [0, 1, 2, 3, 4])
    assert ref["arr_f64"][0] == "float_list" and np.allclose(ref["arr_f64"][1], np.linspace(0, 1, 4))
    assert ref["flag"] == ("int64_list", [1])
    assert as_reference(tfr.parse_example(record)) == ref
    # what protobuf itself serializes parses the same
    assert as_reference(tfr.parse_example(example_pb2.Example.FromString(record).SerializeToString())) == ref


def test_value_types_of_parse():
    parsed = tfr.parse_example(tfr.encode_example({"b": b"x", "i": [1, 2], "f": [0.25]}))
    assert parsed["b"] == [b"x"] and isinstance(parsed["b"][0], bytes)
    assert parsed["i"].dtype == np.int64 and parsed["i"].tolist() == [1, 2]
    assert parsed["f"].dtype == np.float32 and parsed["f"].tolist() == [0.25]
    parsed["f"][0] = 1.0  # results are writable copies, not views into the record


def test_forcing_kinds_and_ambiguity():
    with pytest.raises(ConfigError, match="empty list"):
        tfr.encode_example({"e": []})
    record = tfr.encode_example({"e": [], "ints_as_floats": [1, 2], "ei": np.zeros(0, np.int64)}, kinds={"e": "bytes", "ints_as_floats": "float"})
    assert reference(record) == {"e": ("bytes_list", []), "ints_as_floats": ("float_list", [1.0, 2.0]), "ei": ("int64_list", [])}
    assert tfr.parse_example(record)["e"] == []
    with pytest.raises(ConfigError, match="not an integer"):
        tfr.encode_example({"x": [1.5]}, kinds={"x": "int64"})
    with pytest.raises(ConfigError, match="int64"):
        tfr.encode_example({"x": 2**63})
    with pytest.raises(ConfigError, match="unknown kind"):
        tfr.encode_example({"x": 1}, kinds={"x": "double"})
    with pytest.raises(ConfigError, match="not given"):
        tfr.encode_example({"x": 1}, kinds={"y": "float"})
    with pytest.raises(TypeError, match="only bytes/str or only numbers"):
        tfr.encode_example({"x": [b"a", 1]})
    with pytest.raises(TypeError, match="dict"):
        tfr.encode_example({"x": {"nested": 1}})


def _feature_entry(key: str, feature: bytes) -> bytes:
    return len_field(1, len_field(1, key.encode()) + len_field(2, feature))


def test_unpacked_and_mixed_repeated_numbers_parse():
    unpacked_ints = b"".join(tag(1, VARINT) + encode_varint(v) for v in [3, -4, 2**40])
    unpacked_floats = b"".join(tag(1, FIXED32) + struct.pack("<f", v) for v in [1.5, -2.0])
    mixed_ints = len_field(1, encode_varint(1) + encode_varint(2)) + tag(1, VARINT) + encode_varint(300)
    record = len_field(
        1,
        _feature_entry("ui", len_field(3, unpacked_ints))
        + _feature_entry("uf", len_field(2, unpacked_floats))
        + _feature_entry("mi", len_field(3, mixed_ints)),
    )
    ref = reference(record)
    parsed = tfr.parse_example(record)
    assert parsed["ui"].tolist() == ref["ui"][1] == [3, -4, 2**40]
    assert parsed["uf"].tolist() == ref["uf"][1] == [1.5, -2.0]
    assert parsed["mi"].tolist() == ref["mi"][1] == [1, 2, 300]


def test_long_packed_lists_use_the_vectorised_path_correctly():
    values = np.random.default_rng(1).integers(-(2**63), 2**63 - 1, size=1000, dtype=np.int64)
    values[:5] = [0, 1, -1, 127, 128]
    parsed = tfr.parse_example(tfr.encode_example({"v": values}))["v"]
    assert parsed.tolist() == values.tolist()


def test_unknown_fields_are_skipped_and_repeated_keys_last_wins():
    record = (
        tag(7, VARINT) + encode_varint(99)  # unknown top-level field
        + len_field(1, _feature_entry("k", len_field(3, len_field(1, encode_varint(1)))))
        + len_field(1, _feature_entry("k", len_field(1, len_field(1, b"later"))))  # Example.features merged: last k wins
    )
    assert tfr.parse_example(record) == {"k": [b"later"]}
    assert list(reference(record).items()) == [("k", ("bytes_list", [b"later"]))]


def test_malformed_records_raise_format_error():
    record = tfr.encode_example({"image": b"x" * 300, "label": [1, 2, 3]})
    for cut in range(1, len(record)):
        with pytest.raises(FormatError):
            tfr.parse_example(record[:cut])
    with pytest.raises(FormatError):
        tfr.parse_example(b"\x0b")  # wire type 3 (groups) is refused
    for bad in (b"\x80", b"\x01\x80", b"\xff" * 20):  # truncated or overlong varints inside a packed list
        for padding in (b"", b"\x00" * 20):  # short (Python) and long (numpy) decoding paths
            with pytest.raises(FormatError, match="varint"):
                tfr.parse_example(len_field(1, _feature_entry("v", len_field(3, len_field(1, padding + bad)))))
    with pytest.raises(TypeError):
        tfr.parse_example("not bytes")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_never_escapes_as_another_exception(data):
    try:
        tfr.parse_example(data)
    except FormatError:
        pass


_names = st.text(min_size=0, max_size=12)
_values = st.one_of(
    st.lists(st.binary(max_size=20), min_size=1, max_size=4),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=40),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=40),
)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_names, _values, max_size=6))
def test_random_examples_round_trip(features):
    record = tfr.encode_example(features)
    parsed = tfr.parse_example(record)
    assert parsed.keys() == features.keys()
    for key, value in features.items():
        got = parsed[key]
        assert (got if isinstance(got, list) else got.tolist()) == value
    assert as_reference(parsed) == reference(record)


def test_pytorch_data_example_file_matches_tfrecord_package(shared_data):
    from tfrecord.reader import tfrecord_loader

    path = shared_data / "tfrecord" / "pytorch_data" / "example.tfrecord"
    ours = [tfr.parse_example(r) for r in tfr.Reader(path)]
    theirs = list(tfrecord_loader(str(path), None))
    assert len(ours) == len(theirs) == 4
    for mine, ref in zip(ours, theirs):
        assert mine.keys() == ref.keys() == {"x_byte", "x_int", "x_float"}
        assert mine["x_byte"] == [ref["x_byte"]] == [b"test str"]
        assert mine["x_int"].dtype == np.int64 and (mine["x_int"] == ref["x_int"]).all()
        assert mine["x_float"].dtype == np.float32 and (mine["x_float"] == ref["x_float"]).all()
    assert ours[2]["x_int"].tolist() == list(range(200, 300, 10))


def test_sequence_example_is_detected_and_parsed(shared_data):
    from tfrecord.reader import tfrecord_loader

    path = shared_data / "tfrecord" / "pytorch_data" / "sequence_example.tfrecord"
    records = list(tfr.Reader(path))
    assert len(records) == 4
    plain = list(tfr.Reader(shared_data / "tfrecord" / "pytorch_data" / "example.tfrecord"))
    assert all(tfr.is_sequence_example(r) for r in records)
    assert not any(tfr.is_sequence_example(r) for r in plain)
    with pytest.raises(FormatError, match="SequenceExample.*parse_sequence_example"):
        tfr.parse_example(records[0])
    theirs = list(tfrecord_loader(str(path), None, description=[], sequence_description=[]))
    for record, (ref_context, ref_lists) in zip(records, theirs):
        context, lists = tfr.parse_sequence_example(record)
        assert context.keys() == ref_context.keys()
        assert context["x_byte"] == [ref_context["x_byte"]]
        assert (context["x_int"] == ref_context["x_int"]).all()
        assert lists.keys() == ref_lists.keys() == {"x_byte_seq", "x_int_seq", "x_float_seq"}
        assert [step[0] for step in lists["x_byte_seq"]] == ref_lists["x_byte_seq"]
        for key in ("x_int_seq", "x_float_seq"):
            assert len(lists[key]) == len(ref_lists[key]) > 0
            assert all((a == b).all() and a.dtype == b.dtype for a, b in zip(lists[key], ref_lists[key]))
    assert [len(tfr.parse_sequence_example(r)[1]["x_int_seq"]) for r in records] == [len(t[1]["x_int_seq"]) for t in theirs]
    # a plain Example is a SequenceExample without feature_lists
    assert tfr.parse_sequence_example(plain[0])[1] == {}
