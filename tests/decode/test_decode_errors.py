"""Bad input raises DecodeError naming the image; never garbage, never a hang."""

from __future__ import annotations

import io
import struct
import sys

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import available_backends, decode, read_info
from fastdata.decode import backends as backends_mod
from fastdata.errors import ConfigError, DecodeError, MissingDependencyError

BACKENDS = available_backends()


def jpeg_bytes(w: int = 64, h: int = 48, **save) -> bytes:
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(buf, "JPEG", **save)
    return buf.getvalue()


def with_frame_size(data: bytes, w: int, h: int) -> bytes:
    """The same JPEG with its SOF0 header claiming another size."""
    sof = data.index(b"\xff\xc0")
    return data[: sof + 5] + struct.pack(">HH", h, w) + data[sof + 9 :]


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncated_jpeg_raises_with_name(corrupt_images, backend):
    path = corrupt_images / "truncated_jpeg.jpg"
    with pytest.raises(DecodeError, match="shard-00001.rec record 17") as info:
        decode(path.read_bytes(), backend=backend, name="shard-00001.rec record 17")
    assert "truncated" in str(info.value).lower() or "premature end" in str(info.value).lower()


@pytest.mark.parametrize("backend", BACKENDS)
def test_cut_short_jpeg_raises(backend):
    data = jpeg_bytes(256, 256, quality=95)
    for cut in (len(data) // 2, len(data) - 40):
        with pytest.raises(DecodeError, match="cut.jpg"):
            decode(data[:cut], backend=backend, name="cut.jpg")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "pil"])
def test_corrupt_scan_data_raises(backend):
    # libjpeg-turbo's warning is an error here. Pillow ignores libjpeg warnings
    # and raises only on truncation, so backend="pil" is as lenient as Pillow.
    data = bytearray(jpeg_bytes(128, 128, quality=95))
    sos = data.index(b"\xff\xda")
    data[sos + 300 : sos + 310] = b"\xff\xd9" * 5  # an EOI in the middle of the scan
    with pytest.raises(DecodeError, match="bad.jpg"):
        decode(bytes(data), backend=backend, name="bad.jpg")


def test_broken_png_raises_with_name(corrupt_images):
    path = corrupt_images / "broken.png"
    with pytest.raises(DecodeError, match="broken.png"):
        decode(path.read_bytes(), name=str(path))


def test_truncated_png_raises():
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(1).integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(buf, "PNG")
    with pytest.raises(DecodeError, match="p.png"):
        decode(buf.getvalue()[:-300], name="p.png")


@pytest.mark.parametrize("data", [b"", b"hello, not an image", b"\xff\xd8\xff\xe0garbage", b"\x89PNG\r\n\x1a\n"])
def test_not_an_image_raises(data):
    with pytest.raises(DecodeError, match="item 3"):
        decode(data, name="item 3")
    with pytest.raises(DecodeError):
        read_info(data, name="item 3")


def test_bomb_guard_reads_only_the_header():
    # 60000 x 60000 claimed by a tiny file: refused before any pixel is decoded.
    bomb = with_frame_size(jpeg_bytes(), 60000, 60000)
    assert read_info(bomb).pixels == 3_600_000_000
    with pytest.raises(DecodeError, match="max_pixels"):
        decode(bomb, name="bomb.jpg")


def test_max_pixels_is_configurable():
    data = jpeg_bytes(64, 48)
    with pytest.raises(DecodeError, match="3072 pixels exceeds max_pixels=3000"):
        decode(data, max_pixels=3000)
    assert decode(data, max_pixels=3072).shape == (48, 64, 3)
    assert decode(data, max_pixels=None).shape == (48, 64, 3)
    png = io.BytesIO()
    Image.new("RGB", (64, 48)).save(png, "PNG")
    with pytest.raises(DecodeError, match="max_pixels"):
        decode(png.getvalue(), max_pixels=100)


def test_bad_crop_and_min_size_are_config_errors():
    data = jpeg_bytes(64, 48)
    for crop in [(0, 0, 49, 10), (-1, 0, 5, 5), (0, 60, 5, 5), (0, 0, 0, 5), (0.5, 0, 5, 5)]:
        with pytest.raises(ConfigError):
            decode(data, crop=crop)
    with pytest.raises(ConfigError):
        decode(data, min_size=0)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown decode backend"):
        decode(jpeg_bytes(), backend="nvjpeg")


@pytest.fixture
def fresh_backends(monkeypatch):
    monkeypatch.setattr(backends_mod, "_loaded", {})
    monkeypatch.setattr(backends_mod, "_auto", {})


def test_missing_backend_names_the_extra(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "simplejpeg", None)  # import now fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'fastdata\[turbo\]'"):
        decode(jpeg_bytes(), backend="simplejpeg")
    assert "simplejpeg" not in available_backends()
    assert decode(jpeg_bytes()).shape == (48, 64, 3)  # auto falls back


def test_turbo_library_that_fails_to_load_falls_back(monkeypatch, fresh_backends):
    turbojpeg = pytest.importorskip("turbojpeg")

    def broken(self, lib_path=None):
        raise RuntimeError("Unable to locate turbojpeg library automatically")

    monkeypatch.setattr(turbojpeg.TurboJPEG, "__init__", broken)
    monkeypatch.setitem(sys.modules, "simplejpeg", None)
    with pytest.raises(MissingDependencyError, match="could not load libturbojpeg"):
        decode(jpeg_bytes(), backend="turbo")
    assert available_backends() == ["pil"]
    assert decode(jpeg_bytes()).shape == (48, 64, 3)


def test_recoverable_warning_still_decodes(edge_images):
    # libjpeg warns "16 extraneous bytes before marker" on this generated file
    # (as on Pillow's hopper_bad_exif.jpg); Pillow accepts it, so must every
    # backend (through the Pillow retry).
    path = edge_images / "gray_jpeg" / "gray_extraneous_bytes.jpg"
    outs = [decode(path.read_bytes(), backend=b) for b in BACKENDS]
    assert all(np.array_equal(o, outs[0]) for o in outs)
    assert outs[0].shape == (240, 240, 3)
