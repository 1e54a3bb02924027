"""Serialize Python values as a ``tf.train.Example`` (hand-written protobuf, no TensorFlow).

Kind rules (:func:`encode_example`): bytes/str -> bytes_list; int/bool ->
int64_list; float -> float_list; numpy arrays by dtype; lists by their
elements. ``kinds`` forces a kind where the value does not decide it (an
empty list, ints meant as floats).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import ConfigError
from .._protowire import encode_varint, len_field
from .example_parse import BYTES, FLOAT, INT64

_KIND_NAMES = {
    "bytes": BYTES, "byte": BYTES, "bytes_list": BYTES, "str": BYTES,
    "float": FLOAT, "float_list": FLOAT, "float32": FLOAT,
    "int64": INT64, "int": INT64, "int64_list": INT64,
}
_FIELD = {BYTES: 1, FLOAT: 2, INT64: 3}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_TEXT = (bytes, bytearray, memoryview, str)


def _kind_name(key: str, kind: str) -> str:
    try:
        return _KIND_NAMES[kind]
    except (KeyError, TypeError):
        raise ConfigError(f"feature {key!r}: unknown kind {kind!r}; use 'bytes', 'int64' or 'float'") from None


def _infer(key: str, value) -> str:
    if isinstance(value, _TEXT):
        return BYTES
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return INT64
    if isinstance(value, (float, np.floating)):
        return FLOAT
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biu":
            return INT64
        if value.dtype.kind == "f":
            return FLOAT
        if value.dtype.kind in "SU":
            return BYTES
        if value.dtype.kind == "O":
            return _infer_items(key, value.ravel().tolist())
        raise TypeError(f"feature {key!r}: cannot store an array of dtype {value.dtype} in a tf.train.Example")
    if isinstance(value, (list, tuple)):
        return _infer_items(key, value)
    raise TypeError(
        f"feature {key!r}: cannot store a {type(value).__name__}; use bytes/str, int, float, "
        "a list of one of them, or a numpy array"
    )


def _infer_items(key: str, items) -> str:
    if len(items) == 0:
        raise ConfigError(
            f"feature {key!r}: an empty list has no kind; pass kinds={{{key!r}: 'bytes'|'int64'|'float'}} "
            "or an empty numpy array of the intended dtype"
        )
    kinds = {_infer(key, v) if not isinstance(v, (list, tuple, np.ndarray)) else "nested" for v in items}
    if kinds == {BYTES}:
        return BYTES
    if kinds == {INT64}:
        return INT64
    if kinds <= {INT64, FLOAT}:
        return FLOAT
    raise TypeError(f"feature {key!r}: a list must hold only bytes/str or only numbers (flat), got kinds {sorted(kinds)}")


def _bytes_list(key: str, value) -> bytes:
    items = [value] if isinstance(value, _TEXT) else (value.ravel().tolist() if isinstance(value, np.ndarray) else value)
    parts = []
    for item in items:
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray, memoryview)):
            raise TypeError(f"feature {key!r}: bytes_list values must be bytes or str, got {type(item).__name__}")
        parts.append(len_field(1, bytes(item)))
    return b"".join(parts)


def _float_list(key: str, value) -> bytes:
    if isinstance(value, _TEXT):
        raise TypeError(f"feature {key!r}: cannot store bytes/str as a float_list")
    try:
        arr = np.asarray(value, dtype="<f4").ravel()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"feature {key!r}: cannot convert to float32 ({exc})") from None
    return len_field(1, arr.tobytes()) if len(arr) else b""


def _int64_list(key: str, value) -> bytes:
    if isinstance(value, _TEXT):
        raise TypeError(f"feature {key!r}: cannot store bytes/str as an int64_list")
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and not np.all(np.mod(value, 1) == 0):
            raise ConfigError(f"feature {key!r}: non-integral floats forced to int64; round them first or store floats")
        items = value.ravel().tolist()
    else:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
    packed = bytearray()
    for v in items:
        if isinstance(v, (float, np.floating)):
            if v != int(v):
                raise ConfigError(f"feature {key!r}: value {v} is not an integer; store it as a float")
            v = int(v)
        elif not isinstance(v, (int, np.integer, np.bool_)):
            raise TypeError(f"feature {key!r}: int64_list values must be integers, got {type(v).__name__}")
        v = int(v)
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise ConfigError(f"feature {key!r}: {v} does not fit in int64")
        packed += encode_varint(v)
    return len_field(1, bytes(packed)) if packed else b""


_ENCODERS = {BYTES: _bytes_list, FLOAT: _float_list, INT64: _int64_list}


def encode_feature(key: str, value, kind: str | None = None) -> bytes:
    """Serialize one ``tf.train.Feature`` (kind inferred from ``value`` unless given)."""
    kind = _infer(key, value) if kind is None else _kind_name(key, kind)
    return len_field(_FIELD[kind], _ENCODERS[kind](key, value))


def encode_example(features: Mapping[str, object], kinds: Mapping[str, str] | None = None) -> bytes:
    """Serialize ``{name: value}`` as a ``tf.train.Example``.

    Args:
        features: values are bytes/str or a list of them (bytes_list, str as
            UTF-8); int or a list/integer array (int64_list); float or a
            list/float array (float_list, stored as float32). A list mixing
            ints and floats is a float_list. Arrays are flattened (C order).
        kinds: ``{name: "bytes" | "int64" | "float"}`` to force a kind, e.g.
            for an empty list or ints to be stored as floats.

    Returns:
        The serialized Example; numbers use packed encoding, as TensorFlow writes.

    Raises:
        TypeError: a value of a type an Example cannot hold.
        ConfigError: an empty list without a kind, an unknown kind, an int
            outside int64, or a non-integral float forced to int64.
    """
    kinds = kinds or {}
    unknown = set(kinds) - set(features)
    if unknown:
        raise ConfigError(f"kinds names features that are not given: {sorted(unknown)}")
    entries = []
    for key, value in features.items():
        if not isinstance(key, str):
            raise TypeError(f"feature names must be str, got {key!r}")
        feature = encode_feature(key, value, kinds.get(key))
        entries.append(len_field(1, len_field(1, key.encode("utf-8")) + len_field(2, feature)))
    return len_field(1, b"".join(entries))
