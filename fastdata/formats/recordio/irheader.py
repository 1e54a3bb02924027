"""MXNet's image-record header (``IRHeader``) and ``pack``/``unpack``."""

from __future__ import annotations

import numbers
import struct
from typing import TYPE_CHECKING, NamedTuple, Union

from ..._lazy import lazy_numpy
from ...errors import ConfigError, FormatError

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_numpy(globals())  # imported on first use: see fastdata/_lazy.py

IR_FORMAT = struct.Struct("<IfQQ")  # flag, label, id, id2
IR_SIZE = IR_FORMAT.size  # 24

LabelValue = Union[float, "np.ndarray"]  # a string: naming it must not import numpy


class IRHeader(NamedTuple):
    """The 24-byte header MXNet puts before an image record's bytes.

    Attributes:
        flag: 0 for a scalar label; otherwise the number of float32 labels
            stored after the header.
        label: the scalar label (float) when ``flag == 0``; a float32 array of
            shape ``(flag,)`` when unpacked with ``flag > 0``.
        id: the image id (uint64); im2rec stores the ``.lst`` index here.
        id2: a second id (uint64), normally 0.
    """

    flag: int
    label: LabelValue
    id: int
    id2: int


def pack(header: IRHeader | tuple, data: bytes | bytearray | memoryview) -> bytes:
    """Header plus ``data`` as one record payload, like ``mxnet.recordio.pack``.

    As in MXNet, ``flag`` is derived from ``label``: a number gives flag 0; a
    sequence or array of ``n`` values gives flag ``n`` with the labels stored
    as float32 after the header (and 0 in the header's label field).

    Raises:
        ConfigError: an empty label vector, or an id outside uint64.
    """
    return pack_header(header) + bytes(data)


def pack_header(header: IRHeader | tuple) -> bytes:
    """The bytes :func:`pack` puts before the data: the IRHeader and any
    float32 labels (always a multiple of 4 bytes long).

    Writers pass these and the image separately
    (:meth:`.writer.Writer.write_parts`) to spare copying the image.

    Raises:
        ConfigError: as :func:`pack`.
    """
    _, label, id_, id2 = header
    try:
        if type(label) is int or type(label) is float or isinstance(label, numbers.Number) or (
            isinstance(label, np.ndarray) and label.ndim == 0
        ):
            return IR_FORMAT.pack(0, float(label), id_, id2)  # type: ignore[arg-type]  # typeshed's Number has no __float__
        labels = np.asarray(label, dtype="<f4").ravel()
        if labels.size == 0:
            raise ConfigError("an empty label vector cannot be stored (flag 0 would mean a scalar label)")
        return IR_FORMAT.pack(labels.size, 0.0, id_, id2) + labels.tobytes()
    except struct.error as exc:
        raise ConfigError(f"IRHeader field out of range (id and id2 are uint64): {header!r} ({exc})") from None


def unpack(payload: bytes | bytearray | memoryview) -> tuple[IRHeader, bytes]:
    """Split a record payload into its :class:`IRHeader` and the image bytes.

    ``flag > 0`` labels come back as a float32 array of shape ``(flag,)``.

    Raises:
        FormatError: the payload is shorter than its header and labels say.
    """
    if len(payload) < IR_SIZE:
        raise FormatError(f"record of {len(payload)} bytes is too short for the {IR_SIZE}-byte IRHeader")
    flag, label, id_, id2 = IR_FORMAT.unpack_from(payload)
    if flag == 0:
        return IRHeader(0, label, id_, id2), bytes(payload[IR_SIZE:])
    start = IR_SIZE + 4 * flag
    if len(payload) < start:
        raise FormatError(
            f"IRHeader says {flag} float32 labels follow, but the record holds only {len(payload)} bytes"
        )
    labels = np.frombuffer(payload, dtype="<f4", count=flag, offset=IR_SIZE).astype(np.float32)
    return IRHeader(flag, labels, id_, id2), bytes(payload[start:])
