"""DCT-scale planning, crops, and their composition with EXIF orientation."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import (
    available_backends,
    decode,
    decode_region,
    orient,
    scale_denominator,
)
from fastdata.decode.orientation import _INVERSE

BACKENDS = available_backends()


def picture(h: int, w: int) -> np.ndarray:
    """Smooth, asymmetric content: every flip or rotation of it differs."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 127 + 100 * np.sin(x / 23.0) * np.cos(y / 31.0)
    g = 255 * x / w
    b = 255 * (y / h) ** 2
    return np.stack([r, g, b], axis=2).clip(0, 255).astype(np.uint8)


def encode(upright: np.ndarray, fmt: str = "JPEG", orientation: int = 1) -> bytes:
    """Store ``upright`` so that honouring ``orientation`` gives it back."""
    stored = orient(upright, _INVERSE[orientation])
    buf = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = orientation
    extra = {"quality": 95} if fmt == "JPEG" else {}
    Image.fromarray(np.ascontiguousarray(stored)).save(buf, fmt, exif=exif.tobytes(), **extra)
    return buf.getvalue()


def mad(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


@pytest.mark.parametrize(
    ("size", "need", "n"),
    [
        ((1500, 2000), (224, 224), 4),  # 375x500 at 1/4; 1/8 would be 187 high
        ((1792, 1792), (224, 224), 8),  # exactly 224 at 1/8
        ((1791, 4000), (224, 224), 4),
        ((448, 448), (224, 224), 2),
        ((447, 9000), (224, 224), 1),
        ((100, 100), (224, 224), 1),  # smaller than needed: full size, caller upsamples
        ((4000, 500), (224, 224), 2),  # the narrow side decides
        ((4000, 500), (300, 50), 8),
        ((375, 500), (336, 336), 1),
    ],
)
def test_scale_denominator(size, need, n):
    assert scale_denominator(*size, *need) == n


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_size_decodes_smaller(backend):
    data = encode(picture(700, 1000))
    full = decode(data, backend=backend)
    for need, n in [(100, 4), (87, 8), (88, 4), (350, 2), (351, 1)]:
        out = decode(data, backend=backend, min_size=need)
        assert out.shape == (math.ceil(700 / n), math.ceil(1000 / n), 3), need
        # A DCT-scaled decode is a good downscale of the full picture.
        ref = np.asarray(Image.fromarray(full).resize(out.shape[1::-1], Image.Resampling.BOX))
        assert mad(out, ref) < 2.0, need


@pytest.mark.parametrize("backend", BACKENDS)
def test_crop_equals_decode_then_slice(backend):
    data = encode(picture(240, 320))
    full = decode(data, backend=backend)
    for t, l, h, w in [(0, 0, 240, 320), (10, 20, 100, 150), (239, 319, 1, 1), (17, 0, 5, 320)]:
        out = decode(data, backend=backend, crop=(t, l, h, w))
        assert out.flags.c_contiguous
        assert np.array_equal(out, full[t : t + h, l : l + w])


@pytest.mark.parametrize("backend", BACKENDS)
def test_crop_at_scale_is_the_scaled_slice(backend):
    data = encode(picture(600, 800))
    box = (101, 203, 400, 500)  # 400 >= 2 * 150 -> 1/2
    out = decode(data, backend=backend, crop=box, min_size=150)
    scaled = decode(data, backend=backend, min_size=300)  # whole image at 1/2 too
    assert scaled.shape == (300, 400, 3)
    y0, x0 = math.floor(101 / 2 + 0.5), math.floor(203 / 2 + 0.5)
    y1, x1 = math.floor(501 / 2 + 0.5), math.floor(703 / 2 + 0.5)
    assert np.array_equal(out, scaled[y0:y1, x0:x1])
    assert out.shape[0] >= 200 and out.shape[1] >= 250


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_orientation_crop_and_scale_compose(fmt):
    upright = picture(320, 240)  # portrait upright, landscape stored for 5-8
    box = (40, 30, 240, 180)
    reference = upright[40:280, 30:210]
    results = {}
    for o in range(1, 9):
        data = encode(upright, fmt, o)
        full = decode(data)
        assert full.shape == (320, 240, 3)
        # Lossless PNG: exact; JPEG: encoding noise only (a wrong turn is > 40).
        assert mad(full, upright) <= (0 if fmt == "PNG" else 2.5), o
        assert np.array_equal(decode(data, crop=box), full[40:280, 30:210]), o
        if fmt == "JPEG":
            scaled = decode(data, crop=box, min_size=(100, 80))  # 240x180 crop -> 1/2
            assert scaled.shape == (120, 90, 3), o
            small_ref = np.asarray(Image.fromarray(reference).resize((90, 120), Image.Resampling.BOX))
            assert mad(scaled, small_ref) < 3.0, o
            results[o] = scaled
    if results:
        first = results[1]
        assert all(mad(r, first) < 3.0 for r in results.values())
        assert mad(first[:, ::-1], first) > 20  # the comparison can fail


def test_decode_region_locates_fractional_box():
    upright = picture(200, 300)
    for o in (1, 3, 6, 7):
        data = encode(upright, "PNG", o)
        pixels, sub = decode_region(data, (10.25, 20.5, 50.5, 60.75))
        # Lossless PNG at full scale: the pixels are rows 10..60, columns 20..81.
        assert np.array_equal(pixels, upright[10:61, 20:82]), o
        assert sub == pytest.approx((0.25, 0.5, 50.5, 60.75)), o


def test_decode_region_sub_box_at_scale():
    data = encode(picture(800, 800))
    pixels, (t, l, h, w) = decode_region(data, (100.0, 200.0, 600.0, 400.0), min_size=140)
    # 400 wide >= 2 * 140 but not 4 * 140 -> 1/2: 300 x 200 decoded pixels.
    assert (h, w) == pytest.approx((300.0, 200.0))
    assert pixels.shape[:2] == (300, 200) and (t, l) == (0.0, 0.0)
