"""A structural JPEG check: can these bytes be stored as they are, without decoding?

:func:`passthrough_size` walks the markers from SOI to the first scan (every
segment length inside the file), reads the frame header and the EXIF
orientation, and requires the file to end with an EOI marker. It answers only
when it is sure that Pillow would open the file as an 8-bit grayscale or
YCbCr/RGB JPEG, upright (EXIF orientation 1), within the decompression-bomb
limit: exactly the files :func:`.normalize.prepare` stores byte for byte.
Anything unusual (arithmetic or lossless coding, 12-bit samples, CMYK, junk
between markers, bytes after EOI, MPO frames, rotated or odd EXIF, XMP
orientation) gets ``None``, and the caller falls back to Pillow and a decode.

What it cannot see: damage after the first scan header when the framing is
intact (a later scan or table naming something the frame lacks, scrambled
scan data). A file cut short loses its EOI and IS caught. libjpeg itself only
warns about most damage inside scan data (grey blocks), so a decode adds less
than it seems; what it adds is caught later anyway: at training time
fastdata's decoder raises DecodeError naming the record. ``--verify-decode``
decodes every image at conversion time instead (about 5-10x slower for
pass-through).

The walk is compiled where fastdata.formats._speedups is built (about 20x
faster; ``fastdata.formats.speedups.status()`` says whether it is); this
Python version is the reference it is tested against, and the fallback.
"""

from __future__ import annotations

import struct
import sys

from fastdata.errors import DecodeError
from fastdata.formats import speedups as _speedups
from fastdata.jpeg.markers import DCT_HUFFMAN, FRAMES
from fastdata.jpeg.markers import segments as jpeg_segments

# SOI, EOI, JPG, DAC (arithmetic), DHP and EXP (hierarchical): not expected before a scan.
_UNSURE = frozenset({0xD8, 0xD9, 0xC8, 0xCC, 0xDE, 0xDF})
# APP segments whose short forms make Pillow's Image.open fail: marker -> (prefix, shortest length).
_PILLOW_MINIMUM = {0xE0: (b"JFIF", 7), 0xEE: (b"Adobe", 7), 0xE2: (b"ICC_PROFILE\x00", 14)}
_ORIENTATION = 0x0112


#: Pillow's own ``Image.MAX_IMAGE_PIXELS`` until someone changes it (a test holds the two equal).
PILLOW_PIXEL_LIMIT = 1024 * 1024 * 1024 // 4 // 3


def pixel_limit() -> int | None:
    """Pillow's decompression-bomb limit as this process has it, without
    importing Pillow (~11 ms of start-up that a pass-through conversion never
    needs): a program that changed the limit has imported ``PIL.Image``."""
    image = sys.modules.get("PIL.Image")
    return image.MAX_IMAGE_PIXELS if image is not None else PILLOW_PIXEL_LIMIT


def passthrough_size(data: bytes) -> tuple[int, int] | None:
    """``(height, width)`` when ``data`` is a well-framed JPEG safe to store as is, else None.

    Never raises on hostile bytes: anything it does not fully understand is None.
    """
    native = _speedups.native
    if native is not None and type(data) is bytes:
        answer = native.jpeg_passthrough_size(data, pixel_limit())
        if answer is not NotImplemented:  # a limit that is not a plain int: Python decides
            return answer
    return _passthrough_size_py(data)


def _passthrough_size_py(data: bytes) -> tuple[int, int] | None:
    """:func:`passthrough_size` in Python: the reference and the fallback."""
    n = len(data)
    if n < 4 or data[0] != 0xFF or data[1] != 0xD8 or data[n - 2] != 0xFF or data[n - 1] != 0xD9:
        return None
    try:
        return _walk(data, n)
    except (IndexError, struct.error, DecodeError):  # DecodeError: the marker walk's (junk, truncation, lengths)
        return None


def _walk(data: bytes, n: int) -> tuple[int, int] | None:
    frame: tuple[int, int, dict[int, int]] | None = None
    quant: set[int] = set()
    exif_seen = False
    # Junk between segments raises DecodeError, so None: libjpeg warns and resyncs; let the decoder judge.
    for marker, start, end in jpeg_segments(data):
        if marker < 0xC0 or marker in _UNSURE or 0xD0 <= marker <= 0xD7:
            return None  # standalone, misplaced or hierarchical marker before the first scan
        if end > n - 2:
            return None
        if marker in DCT_HUFFMAN:
            if frame is not None:
                return None
            frame = _frame(data, start, end)
            if frame is None:
                return None
        elif marker in FRAMES:  # every other SOFn (lossless, hierarchical, arithmetic): not sure, so decode
            return None
        elif marker == 0xDB:
            if not _quant_tables(data, start, end, quant):
                return None
        elif marker == 0xE1:
            if data[start : start + 6] == b"Exif\x00\x00":
                # Pillow joins several Exif segments into one block; not worth mirroring.
                if exif_seen or not _upright(data, start + 6, end):
                    return None
                exif_seen = True
            elif b"Orientation" in data[start:end]:  # XMP tiff:Orientation, which Pillow also honours
                return None
        elif marker == 0xE2 and data[start : start + 4] == b"MPF\x00":
            return None  # MPO: Pillow parses the frame index; let it
        elif marker in _PILLOW_MINIMUM:
            prefix, shortest = _PILLOW_MINIMUM[marker]
            if end - start < shortest and data.startswith(prefix, start):
                return None
        elif marker == 0xDA:
            if frame is None or end >= n - 2 or not _scan_header(data, start, end, frame[2]):
                return None
            if not all(tq in quant for tq in frame[2].values()):
                return None
            return frame[0], frame[1]
    return None  # not reached: the walk ends with the SOS or raises


def _frame(data: bytes, start: int, end: int) -> tuple[int, int, dict[int, int]] | None:
    precision, height, width, count = struct.unpack_from(">BHHB", data, start)
    if precision != 8 or count not in (1, 3) or end - start != 6 + 3 * count or not height or not width:
        return None
    limit = pixel_limit()
    if limit is not None and height * width > limit:
        return None  # Pillow warns or refuses: keep its verdict
    tables: dict[int, int] = {}
    for i in range(count):
        cid, sampling, tq = data[start + 6 + 3 * i : start + 9 + 3 * i]
        if cid in tables or not (1 <= sampling >> 4 <= 4 and 1 <= sampling & 15 <= 4) or tq > 3:
            return None
        tables[cid] = tq
    return height, width, tables


def _quant_tables(data: bytes, start: int, end: int, defined: set[int]) -> bool:
    pos = start
    while pos < end:
        pq, tq = data[pos] >> 4, data[pos] & 15
        if pq > 1 or tq > 3:
            return False
        defined.add(tq)
        pos += 1 + 64 * (pq + 1)
    return pos == end


def _scan_header(data: bytes, start: int, end: int, components: dict[int, int]) -> bool:
    count = data[start]
    if not 1 <= count <= len(components) or end - start != 4 + 2 * count:
        return False
    return all(data[start + 1 + 2 * i] in components for i in range(count))


def _upright(buf: bytes, start: int, end: int) -> bool:
    """True only when the TIFF-structured EXIF block ``buf[start:end]`` surely says orientation 1.

    No orientation tag, or exactly one SHORT tag of value 1. Anything Pillow might
    read differently (other types, duplicates, a cut-off directory) is False.
    """
    order = buf[start : start + 2]
    if order == b"II":
        e = "<"
    elif order == b"MM":
        e = ">"
    else:
        return False
    magic, ifd = struct.unpack_from(e + "HI", buf, start + 2)
    p = start + ifd
    if magic != 42 or ifd < 8 or p + 2 > end:
        return False
    (count,) = struct.unpack_from(e + "H", buf, p)
    p += 2
    if p + 12 * count > end:
        return False
    found = False
    for _ in range(count):
        tag, kind, num, value = struct.unpack_from(e + "HHIH", buf, p)
        if tag == _ORIENTATION:
            if found or kind != 3 or num != 1 or value != 1:
                return False
            found = True
        p += 12
    return True
