"""Just enough of the protobuf wire format for tf.train.Example and caffe.Datum.

Hand-written instead of depending on ``protobuf``: the two messages are tiny and
fixed, the generated-code route needs .proto compilation or a runtime version
match, and a decoder we own can report malformed input as a FormatError
rather than a DecodeError from deep inside another library.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..errors import FormatError

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


def encode_varint(value: int) -> bytes:
    if value < 0:  # int32/int64 negatives are sign-extended to 10 bytes
        value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Return ``(value, new_pos)``; raises FormatError on truncation or overlong input."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise FormatError("malformed protobuf: truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise FormatError("malformed protobuf: varint longer than 10 bytes")


def tag(field: int, wire_type: int) -> bytes:
    return encode_varint((field << 3) | wire_type)


def len_field(field: int, payload: bytes) -> bytes:
    return tag(field, LEN) + encode_varint(len(payload)) + payload


def varint_field(field: int, value: int) -> bytes:
    return tag(field, VARINT) + encode_varint(int(value))


def iter_fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, object]]:
    """Yield ``(field_number, wire_type, value)``.

    ``value`` is an int for VARINT, FIXED32 and FIXED64 (raw little-endian
    bits), and a memoryview slice for LEN. Groups (wire types 3/4) are refused.
    """
    mv = memoryview(buf)
    pos = 0
    end = len(mv)
    while pos < end:
        key, pos = decode_varint(mv, pos)
        field, wire_type = key >> 3, key & 7
        if field == 0:
            raise FormatError("malformed protobuf: field number 0")
        if wire_type == VARINT:
            value, pos = decode_varint(mv, pos)
        elif wire_type == LEN:
            n, pos = decode_varint(mv, pos)
            if n > end - pos:
                raise FormatError(f"malformed protobuf: field {field} claims {n} bytes, {end - pos} left")
            value = mv[pos : pos + n]
            pos += n
        elif wire_type == FIXED32:
            if pos + 4 > end:
                raise FormatError("malformed protobuf: truncated fixed32")
            value = struct.unpack_from("<I", mv, pos)[0]
            pos += 4
        elif wire_type == FIXED64:
            if pos + 8 > end:
                raise FormatError("malformed protobuf: truncated fixed64")
            value = struct.unpack_from("<Q", mv, pos)[0]
            pos += 8
        else:
            raise FormatError(f"malformed protobuf: unsupported wire type {wire_type} in field {field}")
        yield field, wire_type, value


def to_int32(value: int) -> int:
    """Interpret a decoded varint as a (sign-extended) int32/int64."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value
