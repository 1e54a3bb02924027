"""Parse serialized ``tf.train.Example`` and ``tf.train.SequenceExample`` records.

A hand-written walker over the protobuf wire format (see ``spec.md``): it
decodes only the features asked for, accepts packed and unpacked repeated
numbers alike, skips unknown fields, and reports malformed input as a
FormatError instead of crashing or returning garbage.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from ...errors import FormatError
from .._protowire import FIXED32, FIXED64, LEN, VARINT, decode_varint, packed_varints

BYTES, FLOAT, INT64 = "bytes", "float", "int64"
_KIND_OF_FIELD = {1: BYTES, 2: FLOAT, 3: INT64}

SEQUENCE_HINT = (
    "this record is a tf.train.SequenceExample (it has feature_lists), not a tf.train.Example; "
    "use parse_sequence_example(record) -> (context, feature_lists)"
)


def _skip(buf: bytes, pos: int, wire_type: int) -> int:
    if wire_type == VARINT:
        return decode_varint(buf, pos)[1]
    if wire_type == LEN:
        n, pos = decode_varint(buf, pos)
        return pos + n
    if wire_type == FIXED32:
        return pos + 4
    if wire_type == FIXED64:
        return pos + 8
    raise FormatError(f"malformed protobuf: unsupported wire type {wire_type}")


def _len_end(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    n, pos = decode_varint(buf, pos)
    if pos + n > end:
        raise FormatError(f"malformed protobuf: a field claims {n} bytes, {end - pos} left")
    return pos, pos + n


def int64_list(chunks: list[bytes]) -> list[int]:
    """The values of an int64 feature's raw chunks as Python ints (cheap for short lists)."""
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(raw) == 1 and raw[0] < 0x80:  # the usual class label: one small value
        return [raw[0]]
    out = []
    pos = 0
    while pos < len(raw):
        value, pos = decode_varint(raw, pos)
        value &= 0xFFFFFFFFFFFFFFFF  # a 10th varint byte may carry bits past 64: protobuf drops them
        out.append(value - (1 << 64) if value >= 1 << 63 else value)
    return out


def _list_values(buf: bytes, start: int, end: int, kind: str, out: list) -> None:
    """Append the raw chunks of a BytesList/FloatList/Int64List's repeated field 1 to ``out``.

    Chunks are bytes: one value each for bytes; little-endian float32s or
    concatenated varints for numbers, whether stored packed or unpacked.
    """
    pos = start
    while pos < end:
        key, pos = decode_varint(buf, pos)
        if key >> 3 != 1:
            pos = _skip(buf, pos, key & 7)
            continue
        wire = key & 7
        if wire == LEN:
            s, pos = _len_end(buf, pos, end)
            if kind == FLOAT and (pos - s) % 4:
                raise FormatError(f"malformed float_list: packed length {pos - s} is not a multiple of 4")
            out.append(buf[s:pos])
        elif wire == FIXED32 and kind == FLOAT:  # unpacked float
            if pos + 4 > end:
                raise FormatError("malformed float_list: truncated float")
            out.append(buf[pos : pos + 4])
            pos += 4
        elif wire == VARINT and kind == INT64:  # unpacked int64: keep its varint bytes
            s = pos
            pos = decode_varint(buf, pos)[1]
            out.append(buf[s:pos])
        else:
            raise FormatError(f"malformed {kind} list: wire type {wire} for its values")
    if pos != end:
        raise FormatError(f"malformed {kind} list: runs {pos - end} bytes past its end")


_KIND_OF_TAG = {0x0A: BYTES, 0x12: FLOAT, 0x1A: INT64}


def _feature(buf: bytes, start: int, end: int) -> tuple[str | None, list]:
    """Parse a Feature message into ``(kind, chunks)``; kind is None for an empty Feature."""
    kind = _KIND_OF_TAG.get(buf[start]) if start < end else None
    if kind is not None:  # fast path: one list holding one value (or one packed run)
        n, s = decode_varint(buf, start + 1)
        if s + n == end and s < end and buf[s] == 0x0A:
            m, v = decode_varint(buf, s + 1)
            if v + m == end and (kind != FLOAT or m % 4 == 0):
                return kind, [buf[v:end]]
    kind = None
    chunks: list = []
    pos = start
    while pos < end:
        key, pos = decode_varint(buf, pos)
        field = key >> 3
        if field in _KIND_OF_FIELD and key & 7 == LEN:
            s, pos = _len_end(buf, pos, end)
            new = _KIND_OF_FIELD[field]
            if new != kind:  # a later member of the oneof replaces an earlier one
                kind, chunks = new, []
            _list_values(buf, s, pos, new, chunks)
        else:
            pos = _skip(buf, pos, key & 7)
    if pos != end:
        raise FormatError("malformed Feature: runs past its end")
    return kind, chunks


Feature = list[bytes] | np.ndarray
"""A feature's value: the bytes_list's items, or a 1-D int64 / float32 array."""


def _value(kind: str | None, chunks: list) -> Feature:
    if kind == BYTES or kind is None:
        return chunks
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if kind == FLOAT:
        return np.frombuffer(raw, "<f4").astype(np.float32)
    return packed_varints(raw)


def _map_entries(buf: bytes, start: int, end: int) -> list[tuple[bytes, bytes, int, int]]:
    """The entries of a ``map<string, Message>`` (field 1) as ``(name, vbuf, vstart, vend)``.

    The value is ``vbuf[vstart:vend]``: a range of ``buf``, or joined bytes
    when an entry repeats its value field (legal: the parts merge). A missing
    key or value defaults to empty, as protobuf specifies.
    """
    out = []
    pos = start
    while pos < end:
        if buf[pos] != 0x0A:  # not field 1 (LEN): skip it
            key, pos = decode_varint(buf, pos)
            pos = _skip(buf, pos, key & 7)
            continue
        n, s = decode_varint(buf, pos + 1)
        pos = s + n
        if pos > end:
            raise FormatError(f"malformed protobuf: a map entry claims {n} bytes, {end - s} left")
        # Fast path for the layout every writer uses: a short key, then one value.
        if pos - s > 2 and buf[s] == 0x0A and buf[s + 1] < 0x80:
            ke = s + 2 + buf[s + 1]
            if ke < pos and buf[ke] == 0x12:
                n, vs = decode_varint(buf, ke + 1)
                if vs + n == pos:
                    out.append((buf[s + 2 : ke], buf, vs, pos))
                    continue
        out.append(_entry(buf, s, pos))
    if pos != end:
        raise FormatError("malformed map: runs past its end")
    return out


def _entry(buf: bytes, start: int, end: int) -> tuple[bytes, bytes, int, int]:
    name, ranges = b"", []
    p = start
    while p < end:
        k, p = decode_varint(buf, p)
        if k == 0x0A:
            a, p = _len_end(buf, p, end)
            name = buf[a:p]
        elif k == 0x12:
            a, p = _len_end(buf, p, end)
            ranges.append((a, p))
        else:
            p = _skip(buf, p, k & 7)
    if p != end:
        raise FormatError("malformed map entry: runs past its end")
    if len(ranges) == 1:
        return name, buf, ranges[0][0], ranges[0][1]
    joined = b"".join(buf[a:b] for a, b in ranges)
    return name, joined, 0, len(joined)


def _features(buf: bytes, start: int, end: int, out: dict, wanted: Collection[bytes] | None) -> None:
    """Parse a Features message into ``out[name_bytes] = (kind, chunks)``; a repeated key: last wins."""
    for name, vbuf, vs, ve in _map_entries(buf, start, end):
        if wanted is None or name in wanted:
            out[name] = _feature(vbuf, vs, ve)


def _feature_lists(buf: bytes, start: int, end: int, out: dict) -> None:
    """FeatureLists { map<string, FeatureList> }, FeatureList { repeated Feature feature = 1 }."""
    for name, vbuf, vs, ve in _map_entries(buf, start, end):
        steps = []
        pos = vs
        while pos < ve:
            key, pos = decode_varint(vbuf, pos)
            if key == 0x0A:
                s, pos = _len_end(vbuf, pos, ve)
                steps.append(_value(*_feature(vbuf, s, pos)))
            else:
                pos = _skip(vbuf, pos, key & 7)
        out[name] = steps


def _top(record: bytes, wanted: Collection[bytes] | None, sequence: bool) -> tuple[dict, dict]:
    """Walk an Example (field 1: Features) or SequenceExample (1: context, 2: feature_lists)."""
    context: dict = {}
    lists: dict = {}
    end = len(record)
    pos = 0
    try:
        while pos < end:
            key, pos = decode_varint(record, pos)
            if key == 0x0A:
                s, pos = _len_end(record, pos, end)
                _features(record, s, pos, context, wanted)
            elif key == 0x12:
                if not sequence:
                    raise FormatError(SEQUENCE_HINT)
                s, pos = _len_end(record, pos, end)
                _feature_lists(record, s, pos, lists)
            else:
                pos = _skip(record, pos, key & 7)
        if pos != end:
            raise FormatError("malformed protobuf: the last field runs past the end of the record")
    except IndexError:
        raise FormatError("malformed protobuf: the record ends inside a field") from None
    return context, lists


def _as_bytes(record) -> bytes:
    if isinstance(record, bytes):
        return record
    if isinstance(record, (bytearray, memoryview)):
        return bytes(record)
    raise TypeError(f"expected the serialized record as bytes, got {type(record).__name__}")


def parse_example(record: bytes | bytearray | memoryview) -> dict[str, Feature]:
    """Parse a serialized ``tf.train.Example`` into ``{name: value}``.

    Values: a bytes_list becomes ``list[bytes]``; an int64_list a 1-D
    ``np.int64`` array; a float_list a 1-D ``np.float32`` array; a Feature
    with no list set becomes ``[]``.

    Raises:
        FormatError: malformed protobuf, or the record is a SequenceExample
            (the message says to use :func:`parse_sequence_example`).
    """
    features, _ = _top(_as_bytes(record), None, sequence=False)
    return {_name(k): _value(*v) for k, v in features.items()}


def parse_sequence_example(record: bytes | bytearray | memoryview) -> tuple[dict[str, Feature], dict[str, list]]:
    """Parse a serialized ``tf.train.SequenceExample`` into ``(context, feature_lists)``.

    ``context`` is like :func:`parse_example`'s result; ``feature_lists`` maps
    each name to a list with one value per step. A plain Example parses as a
    SequenceExample with empty ``feature_lists`` (the two are identical on the wire).
    """
    context, lists = _top(_as_bytes(record), None, sequence=True)
    return {_name(k): _value(*v) for k, v in context.items()}, {_name(k): v for k, v in lists.items()}


def is_sequence_example(record: bytes | bytearray | memoryview) -> bool:
    """True when the record carries SequenceExample ``feature_lists`` (top-level field 2)."""
    buf = _as_bytes(record)
    pos, end = 0, len(buf)
    try:
        while pos < end:
            key, pos = decode_varint(buf, pos)
            if key == 0x12:
                return True
            pos = _skip(buf, pos, key & 7)
    except (IndexError, FormatError):
        return False
    return False


def _name(key: bytes) -> str:
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"feature name {key!r} is not valid UTF-8") from exc
