"""Look up a few named features of a ``tf.train.Example`` without parsing the rest.

The readers' hot path: a record laid out the usual way is scanned once for the
wanted keys; anything unusual falls back to the general parser in
:mod:`.example_parse`, so malformed input raises the same FormatError.
"""

from __future__ import annotations

from collections.abc import Collection

from ...errors import FormatError
from .._protowire import decode_varint
from .example_parse import _feature, _top, _value


def find_features(record: bytes, names: Collection[bytes]) -> dict[bytes, tuple[str | None, list]]:
    """Decode only the features in ``names`` (bytes keys): ``{name: (kind, chunks)}``; absent names are missing.

    Records laid out the usual way (one ``features`` field, each map entry a
    short key then its value) take a fast path; anything else, including
    malformed input, goes through the general parser and its errors.
    """
    end = len(record)
    out: dict = {}
    try:
        if end and record[0] == 0x0A:
            n, pos = decode_varint(record, 1)
            if pos + n == end:
                while pos < end:
                    if record[pos] != 0x0A:
                        break
                    n, s = decode_varint(record, pos + 1)
                    pos = s + n
                    if pos > end or record[s] != 0x0A or record[s + 1] >= 0x80:
                        break
                    ke = s + 2 + record[s + 1]
                    if ke >= pos or record[ke] != 0x12:
                        break
                    name = record[s + 2 : ke]
                    if name in names:
                        n, vs = decode_varint(record, ke + 1)
                        if vs + n != pos:
                            break
                        out[name] = _feature(record, vs, pos)
                else:
                    return out
    except (IndexError, FormatError):
        pass
    features, _ = _top(record, names, sequence=False)
    return features


def feature_value(kind: str | None, chunks: list):
    """The public value of a feature returned by :func:`find_features` (see :func:`parse_example`)."""
    return _value(kind, chunks)
