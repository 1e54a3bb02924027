"""A fast recogniser for the ``caffe.Datum`` values fastdata's own ``write_shard`` produces.

:func:`.datum.encode_datum` with ``encoded=True`` writes, in field order,
``[height] [width] data label encoded=1``::

    [10 <varint>] [18 <varint>] 22 <len> <image bytes> 28 <label varint> 38 01

For such a value :func:`image_and_label` reads the image and label with a
few byte tests instead of building a :class:`.datum.Datum`. Anything else
(channels, float_data, unknown or repeated fields, ``encoded`` not 1, a
bad varint, lengths that do not end exactly at the end of the value)
returns ``None`` and the caller takes the general path, which handles and
reports everything. Whenever this accepts a value, the general path returns
the same ``(image, label)``: each field appears once, so "last one wins"
cannot change anything, and the label goes through the same int32 rule.
"""

from __future__ import annotations

from ...errors import FormatError
from .._protowire import decode_varint
from .datum import _as_int32


def image_and_label(value: bytes | memoryview) -> tuple[bytes, int] | None:
    """``(image_bytes, label)`` of an encoded Datum in fastdata's layout, else ``None`` (never raises)."""
    # Function calls cost as much as the rest here, so one- and two-byte
    # varints are decoded inline; longer ones go through decode_varint.
    try:
        end = len(value) - 2
        if value[end] != 0x38 or value[end + 1] != 0x01:  # encoded = true, last
            return None
        p = 0
        if value[0] == 0x10:  # height
            p = decode_varint(value, 1)[1]
        if value[p] == 0x18:  # width
            p = decode_varint(value, p + 1)[1]
        if value[p] != 0x22:
            return None
        n = value[p + 1]
        if n < 0x80:
            s = p + 2
        elif value[p + 2] < 0x80:
            n, s = (n & 0x7F) | (value[p + 2] << 7), p + 3
        else:
            n, s = decode_varint(value, p + 1)
        e = s + n
        if value[e] != 0x28:  # label
            return None
        label = value[e + 1]
        if label >= 0x80 or e + 2 != end:
            label, q = decode_varint(value, e + 1)
            if q != end:
                return None
            label = _as_int32(label)
        return bytes(value[s:e]), label
    except (IndexError, FormatError):  # ran off the end, or a bad varint: not this layout
        return None
