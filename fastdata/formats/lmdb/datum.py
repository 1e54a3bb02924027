"""``caffe.Datum``: the value of every entry in a Caffe (and DALI ``readers.caffe``) LMDB.

``message Datum { int32 channels = 1; int32 height = 2; int32 width = 3;
bytes data = 4; int32 label = 5; repeated float float_data = 6;
bool encoded = 7; }`` (proto2). Encoded with the hand-written wire helpers in
:mod:`fastdata.formats._protowire`; see ``spec.md`` beside this file.
"""

from __future__ import annotations

import dataclasses
import operator
import os

import numpy as np

from ...errors import ConfigError, FormatError
from .._protowire import FIXED32, LEN, VARINT, iter_fields, len_field, tag, varint_field

CHANNELS, HEIGHT, WIDTH, DATA, LABEL, FLOAT_DATA, ENCODED = 1, 2, 3, 4, 5, 6, 7
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_EMPTY_FLOATS = np.zeros(0, dtype=np.float32)
_EMPTY_FLOATS.flags.writeable = False


@dataclasses.dataclass(frozen=True, eq=False)
class Datum:
    """One decoded ``caffe.Datum``.

    Attributes:
        channels, height, width: image shape; 0 when absent (usual for encoded datums).
        data: with ``encoded`` the image file's bytes; otherwise ``channels *
            height * width`` raw uint8 pixels, channel-major (C, H, W), BGR.
        label: the int32 class label (0 when absent, as in caffe.proto).
        float_data: float32 array, empty unless the datum stores floats instead of bytes.
        encoded: True when ``data`` is an image file (JPEG, PNG...). Absent
            means False (caffe.proto's default).
    """

    channels: int = 0
    height: int = 0
    width: int = 0
    data: bytes = b""
    label: int = 0
    float_data: np.ndarray = dataclasses.field(default_factory=lambda: _EMPTY_FLOATS)
    encoded: bool = False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Datum):
            return NotImplemented
        return (
            (self.channels, self.height, self.width, self.data, self.label, self.encoded)
            == (other.channels, other.height, other.width, other.data, other.label, other.encoded)
            and np.array_equal(self.float_data, other.float_data)
        )

    __hash__ = None  # type: ignore[assignment]  # holds an ndarray


def encode_datum(
    data: bytes,
    label: int,
    *,
    encoded: bool = True,
    channels: int = 0,
    height: int = 0,
    width: int = 0,
    float_data: np.ndarray | list[float] | None = None,
) -> bytes:
    """Serialize a ``caffe.Datum`` as Caffe's protobuf library would.

    Fields go out in field-number order; the shape fields are written when
    non-zero (always for raw datums), ``data`` unless it is empty and
    ``float_data`` is given, ``label`` and ``encoded`` always (DALI reads a
    missing ``encoded`` as True and a missing label as no label).
    ``float_data`` is written unpacked, as caffe.proto declares it.

    Raises:
        ConfigError: a field outside int32, or raw pixels whose size is not
            ``channels * height * width``.
    """
    label = _int32("label", label)
    dims = [_int32(name, v) for name, v in (("channels", channels), ("height", height), ("width", width))]
    if min(dims) < 0:
        raise ConfigError(f"channels, height and width must be >= 0, got {dims}")
    floats = _EMPTY_FLOATS if float_data is None else np.ascontiguousarray(float_data, dtype="<f4").ravel()
    data = bytes(data)
    if not encoded and data and dims[0] * dims[1] * dims[2] != len(data):
        raise ConfigError(
            f"raw datum: {len(data)} data bytes but channels*height*width = "
            f"{dims[0]}*{dims[1]}*{dims[2]} = {dims[0] * dims[1] * dims[2]}"
        )
    out = bytearray()
    for number, value in zip((CHANNELS, HEIGHT, WIDTH), dims):
        if value or not encoded:
            out += varint_field(number, value)
    if data or float_data is None:
        out += len_field(DATA, data)
    out += varint_field(LABEL, label)
    if floats.size:
        field_tag = tag(FLOAT_DATA, FIXED32)
        for word in floats.view("<u4").tolist():
            out += field_tag + word.to_bytes(4, "little")
    out += varint_field(ENCODED, 1 if encoded else 0)
    return bytes(out)


def decode_datum(
    value: bytes | memoryview,
    *,
    path: str | os.PathLike[str] | None = None,
    key: object = None,
) -> Datum:
    """Parse one ``caffe.Datum``.

    Unknown fields are skipped (protobuf rules); a repeated scalar keeps its
    last value. ``float_data`` may be packed or not.

    Raises:
        FormatError: malformed protobuf or a field of the wrong wire type,
            naming ``path`` and ``key`` when given.
    """
    fields = {CHANNELS: 0, HEIGHT: 0, WIDTH: 0, LABEL: 0, ENCODED: 0}
    data: memoryview | bytes = b""
    floats: list[np.ndarray] = []
    try:
        for number, wire, val in iter_fields(value):
            if number in fields:
                if wire != VARINT or not isinstance(val, int):  # a varint is an int (iter_fields)
                    raise FormatError(f"not a caffe.Datum: field {number} has wire type {wire}, expected varint")
                fields[number] = val
            elif number == DATA:
                if wire != LEN or isinstance(val, int):  # a LEN field is a memoryview (iter_fields)
                    raise FormatError(f"not a caffe.Datum: field 4 (data) has wire type {wire}, expected bytes")
                data = val
            elif number == FLOAT_DATA:
                floats.append(_floats(wire, val))
    except FormatError as exc:
        raise FormatError(exc.reason, path=path, key=key, hint="the value is not a caffe.Datum or is damaged") from None
    return Datum(
        channels=_as_int32(fields[CHANNELS]),
        height=_as_int32(fields[HEIGHT]),
        width=_as_int32(fields[WIDTH]),
        data=bytes(data),
        label=_as_int32(fields[LABEL]),
        float_data=np.concatenate(floats) if len(floats) > 1 else (floats[0] if floats else _EMPTY_FLOATS),
        encoded=bool(fields[ENCODED]),
    )


def datum_to_image(datum: Datum, *, path: str | os.PathLike[str] | None = None, key: object = None) -> np.ndarray:
    """Pixels of a raw (``encoded=False``) datum as an (H, W, 3) uint8 RGB array.

    Caffe stores raw pixels channel-major in OpenCV's BGR order; this reverses
    the channels and moves them last. One channel (grayscale) is repeated into
    three. The result is a new contiguous array.

    Raises:
        FormatError: the datum is encoded (decode ``datum.data`` instead), holds
            float_data only, has a channel count other than 1 or 3, or its data
            size disagrees with ``channels * height * width``.
    """
    if datum.encoded:
        raise FormatError("the datum holds an encoded image file; decode datum.data instead", path=path, key=key)
    c, h, w = datum.channels, datum.height, datum.width
    if not datum.data and datum.float_data.size:
        raise FormatError(
            "the datum holds float_data, not pixels; use datum.float_data.reshape(channels, height, width)",
            path=path,
            key=key,
        )
    if c not in (1, 3):
        raise FormatError(f"raw datum with {c} channels; only 1 (gray) or 3 (BGR) can become RGB", path=path, key=key)
    if h <= 0 or w <= 0 or c * h * w != len(datum.data):
        raise FormatError(
            f"raw datum has {len(datum.data)} data bytes but channels*height*width = {c}*{h}*{w} = {c * h * w}",
            path=path,
            key=key,
            hint="the datum is damaged or its shape fields are wrong",
        )
    chw = np.frombuffer(datum.data, dtype=np.uint8).reshape(c, h, w)
    if c == 1:
        return np.ascontiguousarray(np.broadcast_to(chw[0][:, :, None], (h, w, 3)))
    return np.ascontiguousarray(chw[::-1].transpose(1, 2, 0))


def _floats(wire: int, val: int | memoryview) -> np.ndarray:
    if wire == FIXED32:  # one unpacked element, as raw little-endian bits
        return np.array([val], dtype="<u4").view("<f4").astype(np.float32)
    if wire == LEN and not isinstance(val, int):  # packed (a LEN field is a memoryview)
        if len(val) % 4:
            raise FormatError(f"not a caffe.Datum: packed float_data of {len(val)} bytes is not a multiple of 4")
        return np.frombuffer(val, dtype="<f4").astype(np.float32)
    raise FormatError(f"not a caffe.Datum: field 6 (float_data) has wire type {wire}")


def _int32(name: str, value: object) -> int:
    try:
        v = operator.index(value)  # type: ignore[arg-type]  # any object: a non-integer raises TypeError, below
    except TypeError:
        raise ConfigError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    if not _INT32_MIN <= v <= _INT32_MAX:
        raise ConfigError(f"{name} {v} does not fit caffe.Datum's int32")
    return v


def _as_int32(value: int) -> int:
    # protobuf truncates an int32 varint to its low 32 bits (negatives arrive sign-extended to 64)
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


__all__ = ["Datum", "datum_to_image", "decode_datum", "encode_datum"]
