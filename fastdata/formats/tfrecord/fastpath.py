"""A fast recogniser for the Examples fastdata's own ``write_shard`` produces.

:func:`encode_sample` always writes the same seven features in the same
order (image, format, label, text, filename, height, width), each map entry
as ``key field, value field`` with one list holding one value. For such a
record the image and the label sit a handful of varints away, so
:func:`image_and_label` checks that exact byte structure (each short entry
against a precomputed prefix for its length, in one ``startswith``) and reads
them directly, instead of walking the generic protobuf parser. Anything that
deviates in the slightest (another key order, extra or missing features, a
multi-value, negative or float label, nested lengths that do not end where
their entry ends, entries that do not chain up to the end of the record) returns ``None`` and
the caller uses :func:`.example_find.find_features`, which handles and
reports everything. The check is strict enough that whenever it accepts a
record the general parser returns the same image and label: every map entry
is checked to be well formed and to end where the next begins, and the
fixed key order rules out a repeated image or label key.
"""

from __future__ import annotations

from ...errors import FormatError
from .._protowire import decode_varint as _varint
from .features import WRITE_ORDER


def _key_field(name: str) -> bytes:
    """A map entry's key field (tag 1, length, name) plus its value field's tag."""
    return b"\n" + bytes([len(name)]) + name.encode() + b"\x12"


# Each entry's head, in write order: image, format, label, then the rest.
_IMAGE, _FORMAT, _LABEL, *_TAIL = (_key_field(name) for name in WRITE_ORDER)


def _entry_prefixes(head: bytes, label: bool = False) -> tuple[bytes, ...]:
    """For each one-byte entry length ``n``, the bytes an entry of that length must start with.

    ``0A n <head> v`` with ``v = n - len(head) - 1`` (the value field ends the
    entry); for the label also its Feature's ``1A m 0A m-2`` (``m = v - 2``),
    leaving at least one byte for the varint. A length that cannot hold such
    an entry (or needs a longer varint) gets a prefix that never matches: its
    length byte contradicts the one it is looked up by.
    """
    out = []
    for n in range(256):
        v = n - len(head) - 1
        if n >= 0x80 or v < (5 if label else 0):
            out.append(b"\n" + bytes([n ^ 1]))
        elif label:
            out.append(b"\n" + bytes([n]) + head + bytes([v, 0x1A, v - 2, 0x0A, v - 4]))
        else:
            out.append(b"\n" + bytes([n]) + head + bytes([v]))
    return tuple(out)


_FORMAT_AT = _entry_prefixes(_FORMAT)
_LABEL_AT = _entry_prefixes(_LABEL, label=True)
_LABEL_SKIP = 2 + len(_LABEL) + 1 + 4  # entry start -> label varint
_TAIL_AT = tuple((_entry_prefixes(head), head) for head in _TAIL)


def image_and_label(rec: bytes) -> tuple[bytes, int] | None:
    """``(image_bytes, stored_label)`` when ``rec`` has exactly fastdata's layout, else ``None``.

    The stored label is the raw int64 (class + ``LABEL_BASE``). Never raises on
    malformed input: any IndexError or FormatError means "not this layout".
    """
    # Function calls dominate at this size, so one- and two-byte varints are
    # decoded inline (records under 16 KiB); longer ones go through _varint.
    try:
        end = len(rec)
        n = rec[1]
        if n < 0x80:
            p = 2
        elif rec[2] < 0x80:
            n, p = (n & 0x7F) | (rec[2] << 7), 3
        else:
            n, p = _varint(rec, 1)
        if p + n != end or rec[0] != 0x0A or rec[p] != 0x0A:
            return None
        # image entry: key, then Feature, BytesList and the value, all ending at the entry's end e
        n = rec[p + 1]
        if n < 0x80:
            s = p + 2
        elif rec[p + 2] < 0x80:
            n, s = (n & 0x7F) | (rec[p + 2] << 7), p + 3
        else:
            n, s = _varint(rec, p + 1)
        e = s + n
        q = _nested(rec, s + 16, e) if rec.startswith(_IMAGE, s) else -1
        if q < 0:
            return None
        image = rec[q:e]
        p = e
        if not rec.startswith(_FORMAT_AT[rec[p + 1]], p):
            return None
        p += 2 + rec[p + 1]
        # label entry: Feature{int64_list{one packed varint}} = 1A m 0A m-2 <varint>
        n = rec[p + 1]
        if not rec.startswith(_LABEL_AT[n], p):
            return None
        q = p + _LABEL_SKIP
        p += 2 + n
        label = rec[q]
        if q + 1 != p or label >= 0x80:  # not a one-byte label
            label, q = _varint(rec, q)
            if q != p or label >= 1 << 63:  # one value only; a huge one is negative in int64: leave it to the parser
                return None
        # the other entries: well formed, in order, chaining exactly to the end
        for prefixes, head in _TAIL_AT:
            n = rec[p + 1]
            if rec.startswith(prefixes[n], p):
                p += 2 + n
            else:
                p = _long_entry(rec, p, head)
                if p < 0:
                    return None
        return (image, label) if p == end else None
    except (IndexError, FormatError):  # ran off the end, or a bad varint: not the fast layout
        return None


def _nested(rec: bytes, q: int, e: int) -> int:
    """Start of the image in ``varint(f) 0A varint(l) 0A varint(L) image`` ending at ``e``, or -1."""
    if rec[q] >= 0x80 and rec[q + 1] < 0x80 and rec[q + 3] >= 0x80 and rec[q + 4] < 0x80 and rec[q + 6] >= 0x80 and rec[q + 7] < 0x80:
        # the usual small image (128 B to 16 KiB): three two-byte lengths
        if (
            (rec[q] & 0x7F) | (rec[q + 1] << 7) == e - q - 2
            and (rec[q + 3] & 0x7F) | (rec[q + 4] << 7) == e - q - 5
            and (rec[q + 6] & 0x7F) | (rec[q + 7] << 7) == e - q - 8
            and rec[q + 2] == rec[q + 5] == 0x0A
        ):
            return q + 8
        return -1
    for last in (False, False, True):
        n, q = _varint(rec, q)
        if q + n != e:
            return -1
        if not last:
            if rec[q] != 0x0A:
                return -1
            q += 1
    return q


def _long_entry(rec: bytes, p: int, head: bytes) -> int:
    """End of the entry at ``p`` (key ``head``, lengths of any size), or -1 if it deviates."""
    if rec[p] != 0x0A:
        return -1
    n, s = _varint(rec, p + 1)
    if not rec.startswith(head, s):
        return -1
    m, v = _varint(rec, s + len(head))
    return s + n if v + m == s + n else -1
