"""The walk over a JPEG's marker segments, from SOI to the first scan (SOS),
and the marker sets its readers share.

One walk for every Python reader of JPEG headers: :mod:`fastdata.decode.info`
(size, orientation, frame type) and the converter's structural check
(``converters/jpeg_check.py``). It reads framing only (where each segment
starts and ends); what a marker means to a reader, and which markers it
accepts, stay with the reader, except the frame (SOFn) sets below, which
both readers name. The C twin is ``fastdata/jpeg/_native/markers.h``.

It imports only :mod:`fastdata.errors`, so the converter, which stores most
JPEGs without decoding them, uses it without importing the decoders (and
NumPy), and ``formats`` and ``decode`` both stand on it.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import DecodeError

__all__ = ["DCT_HUFFMAN", "EOI", "FRAMES", "PROGRESSIVE", "SOS", "STANDALONE", "segments"]

#: Markers without a length field (ITU T.81 B.1.1.3): TEM, RST0-7, SOI. EOI, the
#: other one, ends the walk.
STANDALONE = frozenset({0x01, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8})
EOI = 0xD9
SOS = 0xDA
#: Start-of-frame markers, the segments that carry the image size: SOF0-SOF15
#: less DHT 0xC4, JPG 0xC8 and DAC 0xCC (T.81 table B.1). The C twin is
#: ``fd_is_frame`` in ``markers.h``.
FRAMES = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
#: The progressive frames (Huffman and arithmetic coded, plain and differential).
PROGRESSIVE = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
#: Huffman-coded DCT frames libjpeg-turbo decodes: baseline, extended sequential, progressive.
DCT_HUFFMAN = frozenset({0xC0, 0xC1, 0xC2})
_NO_LENGTH = STANDALONE | {EOI}
_EVERY = frozenset(range(256))


def segments(data: bytes | bytearray, *, only: frozenset[int] | None = None, resync: bool = False,
             name: str | None = None) -> Iterator[tuple[int, int, int]]:
    """Yield ``(marker, start, end)`` for each marker segment after SOI, up to and including the first SOS.

    ``data[start:end]`` is the segment's payload, after its two length bytes (offsets, not slices: an
    EXIF or ICC segment can be tens of kilobytes). A standalone marker (TEM, RSTn, SOI) has
    ``start == end``. After the SOS, ``end`` is the first byte of entropy-coded data and the walk
    stops. Fill bytes (``0xFF`` repeated before a marker) are skipped.

    Args:
        data: the whole file.
        only: yield only these markers (every segment is still walked and checked); ``None``,
            every one. On the hot path of ``read_info`` this saves most of the cost of a generator.
        resync: skip junk between segments to the next ``0xFF``, as libjpeg does (with a
            warning); otherwise junk is an error.
        name: what the caller calls the image, for error messages.

    Raises:
        DecodeError: naming the offset, when the data does not start with SOI, has junk between
            segments (``resync=False``), reaches EOI before any scan, ends inside a marker or its
            length field, or has a segment length under 2 or past the end of the data.
    """
    n = len(data)
    if n < 2 or data[0] != 0xFF or data[1] != 0xD8:
        raise _error(name, "not a JPEG: no start-of-image marker (FF D8) at offset 0")
    wanted = _EVERY if only is None else only
    no_length = _NO_LENGTH  # a local: read_info walks a dozen segments per call
    pos = 2
    while True:
        if pos + 1 < n and data[pos] == 0xFF:
            marker = data[pos + 1]
            pos += 2
        elif pos < n and data[pos] != 0xFF:
            pos = _past_junk(data, pos, resync, name)
            continue
        else:
            raise _error(name, f"the data ends at offset {n}, inside the JPEG header before the first scan "
                               "(truncated)")
        if marker == 0xFF:  # a fill byte: the marker is further on
            pos -= 1
            continue
        if marker in no_length:
            if marker == EOI:
                raise _error(name, f"end-of-image marker at offset {pos - 2} before any scan: "
                                   "the file holds no image data")
            if marker in wanted:
                yield marker, pos, pos
            continue
        if pos + 2 > n:
            raise _error(name, f"the data ends at offset {n}, inside the length of JPEG marker 0x{marker:02X} "
                               "(truncated)")
        start = pos + 2
        end = pos + ((data[pos] << 8) | data[pos + 1])
        if end < start or end > n:
            raise _bad_length(name, marker, pos - 2, end - pos, n)
        if marker in wanted:
            yield marker, start, end
        if marker == SOS:
            return
        pos = end


def _error(name: str | None, problem: str) -> DecodeError:
    """The error :func:`segments` raises: the image's name (or "JPEG bytes"), then the problem."""
    return DecodeError(f"{name or 'JPEG bytes'}: {problem}")


def _past_junk(data: bytes | bytearray, pos: int, resync: bool, name: str | None) -> int:
    """Where the walk goes on after junk at ``pos`` (a byte that is not 0xFF where a
    marker should start): the next 0xFF, or the end; an error unless ``resync``."""
    if not resync:
        raise _error(name, f"byte 0x{data[pos]:02X} at offset {pos} where a JPEG marker should start "
                           "(junk between segments)")
    pos = data.find(b"\xff", pos)
    return len(data) if pos < 0 else pos


def _bad_length(name: str | None, marker: int, at: int, length: int, n: int) -> DecodeError:
    """The error for a segment at offset ``at`` whose ``length`` is under 2 or runs past the ``n`` bytes."""
    if length < 2:
        return _error(name, f"JPEG marker 0x{marker:02X} at offset {at} gives segment length {length}, "
                            "less than its own 2 length bytes")
    return _error(name, f"JPEG marker 0x{marker:02X} at offset {at} gives a segment that runs "
                        f"{at + 2 + length - n} bytes past the end of the {n}-byte data (truncated)")
