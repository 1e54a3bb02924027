"""Every backend returns what Pillow shows, on real third-party files (real photos and
Pillow's own test images, ../shared/data) and on the generated photos and edge cases of
the same kinds (tests/testkit.py), which run without the third-party files.

Tolerance (JPEG, vs Pillow's own decode of the same bytes): mean |diff| <= 0.5
grey level and max <= 4 per image. All three decoders wrap libjpeg-turbo
(simplejpeg 3.1, system 2.1.5, Pillow's bundled 3.x) with the same islow IDCT
and fancy upsampling, and agree exactly here; the slack is for other builds.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from fastdata.decode import (
    AUTO_ORDER,
    BACKGROUND,
    available_backends,
    decode,
    read_info,
)
from fastdata.decode import backends as backends_mod

pytestmark = pytest.mark.filterwarnings("ignore:Corrupt EXIF data")  # Pillow's exif_transpose on hopper_bad_exif

BACKENDS = available_backends()
MEAN_TOL, MAX_TOL = 0.5, 4


def pillow_reference(path: Path) -> np.ndarray:
    """Upright RGB as Pillow gives it, with fastdata's documented mode rules."""
    img = ImageOps.exif_transpose(Image.open(path))
    if img.mode.startswith("I;16"):
        raw = np.asarray(img).astype(np.int64)
        gray = ((raw * 255 + 32767) // 65535).astype(np.uint8)
        rgb = np.repeat(gray[:, :, None], 3, axis=2)
        if isinstance(img.info.get("transparency"), int):
            rgb[raw == img.info["transparency"]] = BACKGROUND
        return rgb
    if img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info:
        white = Image.new("RGBA", img.size, BACKGROUND + (255,))
        return np.asarray(Image.alpha_composite(white, img.convert("RGBA")).convert("RGB"))
    return np.asarray(img.convert("RGB"))


def edgecase_files(root: Path) -> list[Path]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    assert len(files) == 25, files
    return files


# Each source: (fixture, the folder of edge cases in it, of photos, the CMYK file, the same picture as RGB).
SOURCES = {
    "pillow": ("shared_data", "photos/edgecases", "photos/hymenoptera", "cmyk_jpeg/pil_sample_cmyk.jpg",
               "rgb_jpeg/pil_sample_rgb.jpg"),
    "generated": ("generated_images", "photos/edgecases", "photos/ants_bees", "cmyk_jpeg/cmyk.jpg",
                  "rgb_jpeg/same_as_cmyk.jpg"),
}


@pytest.fixture(params=sorted(SOURCES))
def source(request):
    """``(edge-case folder, photo tree, CMYK file, same picture as RGB)``: the third-party files or the generated ones."""
    fixture, edge, photos, cmyk, rgb = SOURCES[request.param]
    root = request.getfixturevalue(fixture)
    return root / edge, root / photos, root / edge / cmyk, root / edge / rgb


def check_rgb(arr: np.ndarray) -> None:
    assert arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3
    assert arr.flags.c_contiguous and arr.flags.writeable


def close(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    assert a.shape == b.shape, (a.shape, b.shape)
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
    return float(diff.mean()), int(diff.max())


def test_backends_listed_in_auto_order():
    # The test extra installs simplejpeg (and PyTurboJPEG, which also needs the
    # system libturbojpeg); Pillow is core and always last.
    assert "simplejpeg" in BACKENDS and BACKENDS[-1] == "pil"
    assert BACKENDS == [b for b in AUTO_ORDER if b in BACKENDS]


@pytest.mark.parametrize("backend", ["auto", *BACKENDS])
def test_edgecases_match_pillow(source, backend):
    for path in edgecase_files(source[0]):
        out = decode(path.read_bytes(), backend=backend, name=str(path))
        check_rgb(out)
        mean, worst = close(out, pillow_reference(path))
        assert mean <= MEAN_TOL and worst <= MAX_TOL, (path.name, mean, worst)


@pytest.mark.parametrize("backend", BACKENDS)
def test_photos_match_pillow(source, backend):
    photos = sorted((source[1] / "train").rglob("*.jp*g"))
    photos = photos[:: len(photos) // 6]  # every 40th of the 244 real ones
    assert len(photos) >= 6
    for path in photos:
        out = decode(path.read_bytes(), backend=backend, name=str(path))
        check_rgb(out)
        mean, worst = close(out, np.asarray(Image.open(path).convert("RGB")))
        assert mean <= MEAN_TOL and worst <= MAX_TOL, (path.name, mean, worst)


def test_gif_in_a_photo_folder_decodes(photo_tree):
    from testkit import PHOTO_GIF

    path = photo_tree / PHOTO_GIF  # as the real folder has imageNotFound.gif
    out = decode(path.read_bytes(), backend="simplejpeg", name=str(path))  # non-JPEG: Pillow regardless
    check_rgb(out)
    assert close(out, pillow_reference(path)) == (0.0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exif_orientations_come_out_upright_and_equal(source, backend):
    files = sorted((source[0] / "exif_orientation_jpeg").glob("*.jpg"))
    assert [read_info(p.read_bytes()).orientation for p in files] == [2, 3, 4, 5, 6, 7, 8]
    outs = [decode(p.read_bytes(), backend=backend) for p in files]
    first = outs[0]
    for path, out in zip(files, outs):
        # Each file was encoded separately after its own flip/rotation, so JPEG
        # noise differs by up to ~4 levels; a wrong orientation differs by > 60.
        assert close(out, first)[0] < 6, path.name
        assert close(out, pillow_reference(path)) == (0.0, 0), path.name
    assert close(first[:, ::-1], outs[1])[0] > 30  # the check can fail


@pytest.mark.parametrize("backend", BACKENDS)
def test_cmyk_jpeg_converts_like_pillow(source, backend):
    path = source[2]
    info = read_info(path.read_bytes())
    assert info.mode == "CMYK"
    out = decode(path.read_bytes(), backend=backend)
    ref = np.asarray(Image.open(path).convert("RGB"))
    assert close(out, ref) == (0.0, 0)  # the same integer formula as Pillow's
    # The same picture saved as RGB: ~5 levels apart; inverted CMYK would be ~245.
    rgb = decode(source[3].read_bytes())
    assert close(out, rgb)[0] < 10


def test_alpha_composited_on_white():
    rgba = np.zeros((4, 6, 4), np.uint8)
    rgba[:, :3] = (10, 20, 30, 255)  # opaque left half
    rgba[:, 3:] = (10, 20, 30, 0)  # transparent right half
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, "PNG")
    out = decode(buf.getvalue())
    assert (out[:, :3] == (10, 20, 30)).all()
    assert (out[:, 3:] == BACKGROUND).all()


def test_sixteen_bit_gray_is_scaled_not_clipped():
    ramp = (np.arange(16, dtype=np.uint16) * 4369).reshape(4, 4)  # 0 .. 65535
    buf = io.BytesIO()
    Image.fromarray(ramp).save(buf, "PNG")
    out = decode(buf.getvalue())
    assert out[..., 0].ravel().tolist() == [17 * i for i in range(16)]
    assert (out[..., 0] == out[..., 2]).all()


def test_auto_logs_its_choice_once(caplog, monkeypatch):
    monkeypatch.setattr(backends_mod, "_auto", {})
    data = _tiny_jpeg()
    with caplog.at_level(logging.DEBUG, logger="fastdata.decode"):
        decode(data)
        decode(data)
    messages = [r.getMessage() for r in caplog.records if "backend='auto'" in r.getMessage()]
    assert messages == ["backend='auto' decodes JPEG with 'simplejpeg'"]


def _tiny_jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 8), (200, 100, 50)).save(buf, "JPEG")
    return buf.getvalue()
