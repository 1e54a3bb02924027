"""Just enough of the protobuf wire format for tf.train.Example and caffe.Datum.

Hand-written instead of depending on ``protobuf``: the two messages are tiny and
fixed, the generated-code route needs .proto compilation or a runtime version
match, and a decoder we own can report malformed input as a FormatError
rather than a DecodeError from deep inside another library.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np

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
    """Return ``(value, new_pos)``; raises FormatError on truncation or overlong input.

    The one varint decoder of fastdata (``packed_varints`` decodes whole
    packed lists with numpy; the fast paths of the two image layouts inline
    the one- and two-byte case and fall back to this function).
    """
    try:
        b = buf[pos]
        if b < 0x80:  # one- and two-byte varints are by far the most common: skip the general loop
            return b, pos + 1
        c = buf[pos + 1]
        if c < 0x80:
            return (b & 0x7F) | (c << 7), pos + 2
    except IndexError:
        raise FormatError("malformed protobuf: truncated varint") from None
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


def iter_fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """Yield ``(field_number, wire_type, value)``.

    ``value`` is an int for VARINT, FIXED32 and FIXED64 (raw little-endian
    bits), and a memoryview slice for LEN. Groups (wire types 3/4) are refused.
    """
    mv = memoryview(buf)
    pos = 0
    end = len(mv)
    value: int | memoryview
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



def packed_varints(chunk: bytes) -> np.ndarray:
    """Decode concatenated varints (a packed repeated field) into int64, two's
    complement as int64_list stores negatives; FormatError when truncated."""
    if len(chunk) <= 16:  # a few values: a Python loop beats numpy's per-call overhead
        values = []
        pos = 0
        while pos < len(chunk):
            value, pos = decode_varint(chunk, pos)
            values.append(value & 0xFFFFFFFFFFFFFFFF)
        return np.array(values, np.uint64).view(np.int64)
    a = np.frombuffer(chunk, np.uint8)
    last = a < 0x80
    if not last[-1]:
        raise FormatError("malformed protobuf: truncated varint in a packed int64 list")
    ends = np.flatnonzero(last)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise FormatError("malformed protobuf: varint longer than 10 bytes")
    shift = (np.arange(len(a)) - np.repeat(starts, lengths)) * 7
    parts = (a & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    return np.bitwise_or.reduceat(parts, starts).view(np.int64)
