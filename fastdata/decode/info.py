"""What an image's header says, read without decoding pixels.

JPEG headers are parsed here directly (markers up to the first scan: the frame
header, Adobe APP14 and the EXIF orientation), which costs microseconds; other
formats go through Pillow's lazy ``Image.open``, which also stops at the header.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..errors import DecodeError
from ..jpeg.markers import FRAMES, PROGRESSIVE
from ..jpeg.markers import segments as jpeg_segments

_WANTED = FRAMES | {0xE1}  # the frame header and EXIF
_ORIENTATION_TAG = 0x0112


@dataclass(frozen=True)
class ImageInfo:
    """An image's size and layout as its header states it.

    Attributes:
        height, width: size AFTER the EXIF orientation is applied (the upright
            frame that ``decode``'s ``crop`` and ``min_size`` refer to).
        format: ``"JPEG"``, or Pillow's format name (``"PNG"``, ``"GIF"``, ...).
        orientation: EXIF orientation 1-8 (1 when absent or unreadable).
        mode: stored pixel layout: for JPEG ``"L"``, ``"RGB"`` (YCbCr or RGB)
            or ``"CMYK"`` (CMYK or YCCK); otherwise Pillow's mode.
        progressive: JPEG with progressive scans.
        frame: the JPEG start-of-frame marker (0xC0 baseline, 0xC1 extended,
            0xC2 progressive, 0xC3 lossless, 0xC9-0xCB arithmetic coding...); 0 otherwise.
        precision: bits per sample of a JPEG (8, or 12 and 16 for rarer files).
    """

    height: int
    width: int
    format: str
    orientation: int = 1
    mode: str = "RGB"
    progressive: bool = False
    frame: int = 0
    precision: int = 8

    @property
    def stored_size(self) -> tuple[int, int]:
        """``(height, width)`` of the pixels as stored, before orientation."""
        return (self.width, self.height) if self.orientation >= 5 else (self.height, self.width)

    @property
    def pixels(self) -> int:
        return self.height * self.width


def is_jpeg(data: Any) -> bool:
    """True when the bytes start with a JPEG start-of-image marker."""
    return len(data) >= 3 and data[0] == 0xFF and data[1] == 0xD8 and data[2] == 0xFF


def read_info(data: bytes, *, name: str | None = None) -> ImageInfo:
    """Read an image's size, format and orientation from its header.

    Args:
        data: the encoded file (JPEG, PNG, GIF, BMP, WebP, ... bytes).
        name: what the caller calls the image, for error messages.

    Returns:
        ImageInfo with the size in the upright (orientation-applied) frame.

    Raises:
        DecodeError: the header is truncated or not an image format Pillow knows.
    """
    if not isinstance(data, (bytes, bytearray)):
        data = bytes(data)
    if is_jpeg(data):
        return parse_jpeg_header(data, name=name)
    from .pillow_image import open_image

    with open_image(data, name) as img:
        return info_from_pillow(img)


def info_from_pillow(img: Any) -> ImageInfo:
    """ImageInfo of an opened (not necessarily loaded) Pillow image."""
    orientation = 1
    if img.format == "TIFF":
        orientation = _valid(img.getexif().get(_ORIENTATION_TAG, 1))
    else:
        raw = img.info.get("exif")
        if isinstance(raw, (bytes, bytearray)):
            start = 6 if raw[:6] == b"Exif\x00\x00" else 0
            orientation = exif_orientation(raw, start, len(raw))
    w, h = img.size
    if orientation >= 5:
        h, w = w, h
    return ImageInfo(height=h, width=w, format=str(img.format), orientation=orientation, mode=img.mode)


def parse_jpeg_header(data: bytes, *, name: str | None = None) -> ImageInfo:
    """Walk the JPEG markers up to the first scan (SOS); see :func:`read_info`."""
    frame: tuple[int, int, int, int, int] | None = None
    orientation = 0
    try:
        # Junk between markers is skipped, as libjpeg does (with a warning).
        for marker, start, end in jpeg_segments(data, only=_WANTED, resync=True, name=name):
            if marker in FRAMES:
                if end - start < 6:
                    break
                height, width = struct.unpack_from(">HH", data, start + 1)
                frame = (height, width, data[start + 5], marker, data[start])
            elif marker == 0xE1 and not orientation and data[start : start + 6] == b"Exif\x00\x00":
                orientation = exif_orientation(data, start + 6, end)
    except DecodeError:
        pass  # damage after the frame header is the decoder's to report; before it, the error below
    if frame is None:
        raise DecodeError(f"{name or 'JPEG bytes'}: no JPEG frame header before the image data (truncated or not a JPEG)")
    height, width, components, marker, precision = frame
    if height == 0 or width == 0:
        raise DecodeError(f"{name or 'JPEG bytes'}: JPEG frame header gives size {width}x{height} (height set by DNL is not supported)")
    mode = {1: "L", 3: "RGB", 4: "CMYK"}.get(components)
    if mode is None:
        raise DecodeError(f"{name or 'JPEG bytes'}: JPEG with {components} colour components is not supported")
    orientation = orientation or 1
    if orientation >= 5:
        height, width = width, height
    return ImageInfo(height, width, "JPEG", orientation, mode, marker in PROGRESSIVE, marker, precision)


def exif_orientation(buf: Any, start: int, end: int) -> int:
    """The orientation tag (1-8) of a TIFF-structured EXIF block ``buf[start:end]``.

    Malformed EXIF gives 1, as in Pillow: a bad tag must not lose the image.
    """
    try:
        order = bytes(buf[start : start + 2])
        if order == b"II":
            e = "<"
        elif order == b"MM":
            e = ">"
        else:
            return 1
        magic, ifd = struct.unpack_from(e + "HI", buf, start + 2)
        p = start + ifd
        if magic != 42 or p + 2 > end:
            return 1
        (count,) = struct.unpack_from(e + "H", buf, p)
        p += 2
        for _ in range(min(count, (end - p) // 12)):
            tag, kind = struct.unpack_from(e + "HH", buf, p)
            if tag == _ORIENTATION_TAG:
                if kind == 3:  # SHORT
                    return _valid(struct.unpack_from(e + "H", buf, p + 8)[0])
                if kind == 4:  # LONG, seen in some writers
                    return _valid(struct.unpack_from(e + "I", buf, p + 8)[0])
                return 1
            p += 12
    except (struct.error, IndexError):
        return 1
    return 1


def _valid(value: Any) -> int:
    return value if isinstance(value, int) and 1 <= value <= 8 else 1
