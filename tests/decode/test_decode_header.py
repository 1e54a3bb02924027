"""read_info: size, format and orientation from the header alone."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import read_info
from fastdata.decode.info import exif_orientation
from fastdata.errors import DecodeError


def encoded(w: int, h: int, fmt: str = "JPEG", orientation: int | None = None, mode: str = "RGB") -> bytes:
    img = Image.new(mode, (w, h), 128 if mode in ("L", "CMYK") else (10, 200, 30))
    buf = io.BytesIO()
    kwargs = {}
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        kwargs["exif"] = exif.tobytes()
    img.save(buf, fmt, **kwargs)
    return buf.getvalue()


@pytest.mark.parametrize("orientation", range(1, 9))
def test_jpeg_size_is_upright(orientation):
    info = read_info(encoded(40, 30, orientation=orientation))
    assert (info.format, info.orientation, info.mode) == ("JPEG", orientation, "RGB")
    assert (info.height, info.width) == ((40, 30) if orientation >= 5 else (30, 40))
    assert info.stored_size == (30, 40)


def test_header_alone_is_enough():
    data = encoded(640, 480)
    header_only = data[: data.index(b"\xff\xda") + 2]  # everything before the scan data
    info = read_info(header_only)
    assert (info.height, info.width, info.progressive) == (480, 640, False)


def test_jpeg_modes_and_progressive():
    assert read_info(encoded(8, 8, mode="L")).mode == "L"
    assert read_info(encoded(8, 8, mode="CMYK")).mode == "CMYK"
    buf = io.BytesIO()
    Image.new("RGB", (32, 16)).save(buf, "JPEG", progressive=True)
    assert read_info(buf.getvalue()).progressive


@pytest.mark.parametrize("fmt", ["PNG", "GIF", "BMP", "WEBP", "TIFF"])
def test_other_formats_via_pillow(fmt):
    info = read_info(encoded(33, 21, fmt))
    assert (info.height, info.width, info.format, info.orientation) == (21, 33, fmt, 1)


def test_png_orientation_from_exif_chunk():
    info = read_info(encoded(33, 21, "PNG", orientation=6))
    assert (info.orientation, info.height, info.width) == (6, 33, 21)


@pytest.mark.filterwarnings("ignore:Corrupt EXIF data")
def test_real_files_agree_with_pillow(shared_data):
    files = [p for p in (shared_data / "photos").rglob("*") if p.is_file()][::7]
    for path in files:
        info = read_info(path.read_bytes())
        img = Image.open(path)
        w, h = img.size
        exif = img.getexif().get(0x0112, 1)
        assert info.orientation == (exif if 1 <= exif <= 8 else 1), path
        assert (info.height, info.width) == ((w, h) if info.orientation >= 5 else (h, w)), path


def test_exif_big_endian_and_malformed():
    # Motorola byte order, one IFD entry: Orientation SHORT 8.
    tiff = b"MM\x00\x2a\x00\x00\x00\x08" + b"\x00\x01" + b"\x01\x12\x00\x03\x00\x00\x00\x01\x00\x08\x00\x00"
    assert exif_orientation(tiff, 0, len(tiff)) == 8
    assert exif_orientation(tiff[:14], 0, 14) == 1  # cut inside the entry
    assert exif_orientation(b"XX" + tiff[2:], 0, len(tiff)) == 1  # unknown byte order
    bad_value = tiff[:-4] + b"\x00\x09\x00\x00"
    assert exif_orientation(bad_value, 0, len(bad_value)) == 1  # 9 is not an orientation


def test_bad_exif_file_reads_as_upright(shared_data):
    path = shared_data / "photos" / "edgecases" / "gray_jpeg" / "hopper_bad_exif.jpg"
    info = read_info(path.read_bytes())
    assert (info.orientation, info.mode, info.height, info.width) == (1, "L", 500, 500)


def test_truncated_header_raises():
    data = encoded(64, 64)
    for cut in (3, 30, data.index(b"\xff\xc0") + 6):  # the last one ends inside the frame header
        with pytest.raises(DecodeError, match="x.jpg"):
            read_info(data[:cut], name="x.jpg")


def test_memoryview_input():
    data = encoded(12, 10)
    arr = np.frombuffer(data, np.uint8)
    from fastdata.decode import decode

    assert decode(memoryview(data)).shape == decode(arr).shape == (10, 12, 3)
    assert read_info(memoryview(data)).width == read_info(arr).width == 12
