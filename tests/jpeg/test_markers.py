"""The JPEG marker walk (fastdata.jpeg.markers) and the readers built on it.

Generated JPEGs walk to their first scan; malformed headers (no SOI, junk,
a file cut inside a marker or a segment, a length under 2 or past the end,
EOI before any scan) each raise a DecodeError that names the problem and the
offset. The readers over the walk, Python and compiled, answer them without
crashing: read_info raises its own DecodeError, the converter's check says
"not sure" (None), the restart-marker transcode keeps the file as it is.
"""

from __future__ import annotations

import io

import pytest
from PIL import Image

from fastdata.errors import DecodeError
from fastdata.formats import speedups
from fastdata.jpeg.markers import segments


def jpeg(w: int = 40, h: int = 30, **options) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (10, 200, 30)).save(buf, "JPEG", **options)
    return buf.getvalue()


def segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload


@pytest.mark.parametrize("options", [{}, {"progressive": True}, {"restart_marker_rows": 1}, {"subsampling": 0}])
def test_a_generated_jpeg_walks_to_its_first_scan(options):
    data = jpeg(**options)
    walked = list(segments(data))
    markers = [m for m, _, _ in walked]
    assert markers[-1] == 0xDA and markers.count(0xDA) == 1
    assert {0xDB, 0xC4} <= set(markers) and (0xC2 if options.get("progressive") else 0xC0) in markers
    assert (0xDD in markers) == ("restart_marker_rows" in options)
    for marker, start, end in walked:  # each payload sits right after its marker and length
        assert data[start - 4] == 0xFF and data[start - 3] == marker
        assert int.from_bytes(data[start - 2 : start], "big") == end - start + 2
    frame = next(start for marker, start, _ in walked if marker in (0xC0, 0xC2))
    assert data[frame + 1 : frame + 5] == (30).to_bytes(2, "big") + (40).to_bytes(2, "big")  # height, width
    assert walked[-1][1] == data.index(b"\xff\xda") + 4  # the walk ends with the scan header


def test_fill_bytes_and_standalone_markers_are_walked_past():
    data = jpeg()
    sof = data.index(b"\xff\xc0")
    padded = data[:sof] + b"\xff\xff\xff\xd0" + data[sof:]  # fill bytes, then a stray RST0
    walked = list(segments(padded))
    rst = [(m, s, e) for m, s, e in walked if m == 0xD0]
    assert rst == [(0xD0, sof + 4, sof + 4)]  # no length field: start == end
    assert [m for m, _, _ in walked if m != 0xD0] == [m for m, _, _ in segments(data)]


def test_only_yields_the_markers_asked_for_but_checks_every_segment():
    data = jpeg()
    assert [m for m, _, _ in segments(data, only=frozenset({0xC0}))] == [0xC0]
    cut = data[: data.index(b"\xff\xc4") + 10]  # the walk still meets the cut-off DHT
    with pytest.raises(DecodeError, match="past the end"):
        list(segments(cut, only=frozenset({0xC0})))


def test_junk_between_segments_is_an_error_unless_resyncing():
    data = jpeg()
    sof = data.index(b"\xff\xc0")
    junk = data[:sof] + b"\x00\x12" + data[sof:]
    with pytest.raises(DecodeError, match=rf"photo\.jpg: byte 0x00 at offset {sof} .*junk between segments"):
        list(segments(junk, name="photo.jpg"))
    assert [m for m, _, _ in segments(junk, resync=True)] == [m for m, _, _ in segments(data)]


def _malformed() -> dict[str, tuple[bytes, str]]:
    data = jpeg()
    sof = data.index(b"\xff\xc0")
    return {
        "empty": (b"", r"no start-of-image marker \(FF D8\) at offset 0"),
        "missing SOI": (data[2:], r"no start-of-image marker"),
        "PNG": (b"\x89PNG\r\n\x1a\n" + bytes(20), r"not a JPEG"),
        "only SOI": (data[:2], r"ends at offset 2, inside the JPEG header before the first scan \(truncated\)"),
        "ends in fill bytes": (data[:2] + b"\xff\xff", r"ends at offset 4.*truncated"),
        "cut inside a length": (data[: sof + 3], rf"ends at offset {sof + 3}, inside the length of JPEG marker 0xC0"),
        "truncated segment": (data[: sof + 10],
                              rf"marker 0xC0 at offset {sof} gives a segment that runs \d+ bytes past the end"),
        "length under 2": (data[:2] + b"\xff\xe0\x00\x01" + data[2:],
                           r"marker 0xE0 at offset 2 gives segment length 1, less than"),
        "length past the end": (data[:2] + b"\xff\xe1\xff\xff" + b"Exif",
                                r"marker 0xE1 at offset 2 gives a segment that runs \d+ bytes past the end of the 10-byte"),
        "EOI before any scan": (data[:2] + segment(0xE0, b"JFIF\x00") + b"\xff\xd9",
                                r"end-of-image marker at offset 11 before any scan"),
    }


@pytest.mark.parametrize("case", sorted(_malformed()))
def test_a_malformed_header_raises_a_clear_error(case):
    data, message = _malformed()[case]
    with pytest.raises(DecodeError, match=message) as raised:
        list(segments(data, name="bad.jpg"))
    assert str(raised.value).startswith("bad.jpg: ")


@pytest.mark.parametrize("case", sorted(_malformed()))
def test_the_readers_answer_malformed_headers_without_crashing(case):
    from fastdata.converters.jpeg_check import _passthrough_size_py, passthrough_size
    from fastdata.decode import read_info
    from fastdata.decode.native import add_restarts, native_available

    data, _ = _malformed()[case]
    assert _passthrough_size_py(data) is None and passthrough_size(data) is None
    if speedups.native is not None:  # the compiled walk (markers.c)
        assert speedups.native.jpeg_passthrough_size(data, None) is None
    if data[:3] == b"\xff\xd8\xff":  # read_info's JPEG path; the rest go to Pillow
        with pytest.raises(DecodeError, match="bad.jpg: no JPEG frame header"):
            read_info(data, name="bad.jpg")
    if native_available() and data[:2] == b"\xff\xd8":  # resegment.c's walk, then libjpeg's
        rewritten = add_restarts(data)  # libjpeg reads past a length of 1, as it always did
        assert rewritten is None or rewritten[:2] == b"\xff\xd8"
