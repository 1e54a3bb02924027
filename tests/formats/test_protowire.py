import pytest

from fastdata.errors import FormatError
from fastdata.formats import _protowire as pw


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**31 - 1, 2**63, 2**64 - 1])
def test_varint_round_trip(value):
    enc = pw.encode_varint(value)
    assert pw.decode_varint(enc, 0) == (value, len(enc))


def test_negative_int32_is_ten_bytes_and_decodes_back():
    enc = pw.encode_varint(-5)
    assert len(enc) == 10
    assert pw.decode_varint(enc, 0)[0] - (1 << 64) == -5


def test_iter_fields_reads_every_wire_type():
    msg = pw.varint_field(1, 7) + pw.len_field(4, b"abc") + pw.tag(2, pw.FIXED32) + b"\x01\x00\x00\x00"
    msg += pw.tag(3, pw.FIXED64) + (2).to_bytes(8, "little")
    fields = [(f, w, bytes(v) if isinstance(v, memoryview) else v) for f, w, v in pw.iter_fields(msg)]
    assert fields == [(1, pw.VARINT, 7), (4, pw.LEN, b"abc"), (2, pw.FIXED32, 1), (3, pw.FIXED64, 2)]


@pytest.mark.parametrize(
    "bad",
    [b"\x08", b"\x22\x05ab", b"\x08" + b"\xff" * 11, b"\x00\x00", b"\x0b", b"\x15\x01", b"\x19\x01\x02"],
)
def test_malformed_messages_raise_format_error(bad):
    with pytest.raises(FormatError, match="malformed protobuf"):
        list(pw.iter_fields(bad))
