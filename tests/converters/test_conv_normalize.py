"""Pass-through versus normalisation, one image at a time (no shards involved)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from convkit import jpeg, rgb
from fastdata.converters.conversion.normalize import BACKGROUND, EncodeOptions, prepare
from fastdata.converters.planning.scan import SkippedFile
from PIL import Image


@pytest.fixture(scope="module")
def edge(edge_images):
    """The generated edge cases (tests/testkit.py): the cases of Pillow's test images."""
    return edge_images


def _prep(path, options=None):
    return prepare(path.read_bytes(), str(path), options or EncodeOptions())


def test_rgb_and_gray_jpegs_pass_through_byte_for_byte(edge):
    for sub in ("rgb_jpeg", "gray_jpeg", "progressive_jpeg"):
        for path in sorted((edge / sub).iterdir()):
            out = _prep(path)
            assert out.reasons == () and out.data == path.read_bytes(), path
            w, h = Image.open(path).size
            assert (out.width, out.height) == (w, h)


def test_everything_else_becomes_an_rgb_jpeg(edge):
    expected = {
        "cmyk_jpeg": {"cmyk-jpeg"},
        "png_palette": {"png-to-jpeg"},
        "png_gray_bilevel": {"png-to-jpeg"},
        "png_alpha": {"png-to-jpeg", "alpha-on-white"},
        "png_16bit": {"png-to-jpeg", "16bit-to-8bit"},
        "exif_orientation_jpeg": {"exif-orientation"},
    }
    for sub, reasons in expected.items():
        for path in sorted((edge / sub).iterdir()):
            out = _prep(path)
            assert set(out.reasons) >= reasons, (path, out.reasons)
            img = Image.open(io.BytesIO(out.data))
            assert (img.format, img.mode) == ("JPEG", "RGB")
            assert img.getexif().get(0x0112) is None  # the orientation tag is gone
            assert (img.width, img.height) == (out.width, out.height)


def test_exif_orientations_come_back_upright(edge):
    upright = rgb((edge / "rgb_jpeg" / "upright.jpg").read_bytes())
    results = []
    for path in sorted((edge / "exif_orientation_jpeg").iterdir()):
        stored = np.asarray(Image.open(path).convert("RGB"), np.int16)
        assert np.abs(stored - upright).mean() > 40  # the raw pixels really are turned
        out = rgb(_prep(path).data)
        assert np.abs(out - upright).mean() < 10, path
        results.append(out)
    assert len(results) == 7
    for other in results[1:]:
        assert np.abs(other - results[0]).mean() < 8


def test_cmyk_colours_match_pillows_conversion(edge):
    path = edge / "cmyk_jpeg" / "cmyk.jpg"
    ours = rgb(_prep(path).data)
    pillow = np.asarray(Image.open(path).convert("RGB"), np.int16)
    assert np.abs(ours - pillow).mean() < 10
    assert np.allclose(ours.mean((0, 1)), pillow.mean((0, 1)), atol=3)
    same_picture_rgb = rgb((edge / "rgb_jpeg" / "same_as_cmyk.jpg").read_bytes())
    assert np.abs(ours - same_picture_rgb).mean() < 12  # not inverted, not channel-swapped


def test_alpha_is_composited_on_white():
    img = Image.new("RGBA", (32, 32), (200, 10, 10, 255))
    img.paste((0, 0, 0, 0), (0, 0, 16, 32))  # left half fully transparent (black underneath)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    out = prepare(buf.getvalue(), "a.png")
    arr = rgb(out.data)
    assert np.abs(arr[:, :12] - np.array(BACKGROUND)).max() < 8
    assert np.abs(arr[:, 20:] - np.array([200, 10, 10])).mean() < 8


def test_sixteen_bit_is_scaled_not_clipped():
    arr = np.full((16, 16), 32768, np.uint16)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    out = rgb(prepare(buf.getvalue(), "x.png").data)
    assert abs(out.mean() - 128) < 3  # Pillow's own convert would clip it to 255


def test_resize_only_shrinks_and_respects_orientation(edge):
    big = jpeg(1, size=(300, 200))
    out = prepare(big, "b.jpg", EncodeOptions(resize=100))
    assert out.reasons == ("resized",) and (out.width, out.height) == (150, 100)
    assert Image.open(io.BytesIO(out.data)).size == (150, 100)
    small = jpeg(2, size=(60, 40))
    assert prepare(small, "s.jpg", EncodeOptions(resize=100)).data == small
    turned = _prep(edge / "exif_orientation_jpeg" / "orientation_6.jpg", EncodeOptions(resize=64))
    assert set(turned.reasons) == {"exif-orientation", "resized"} and (turned.width, turned.height) == (64, 64)


def test_explicit_quality_reencodes_everything():
    data = jpeg(3, size=(40, 40), quality=95)
    out = prepare(data, "q.jpg", EncodeOptions(quality=50, reencode=True))
    assert out.reasons == ("quality",) and out.data != data
    assert np.abs(rgb(out.data) - rgb(data)).mean() < 6


@pytest.mark.parametrize(
    "name, reason",
    [
        ("truncated_jpeg.jpg", "truncated"),
        ("broken.png", "not an image"),
    ],
)
def test_corrupt_files_are_refused_with_a_reason(corrupt_images, name, reason):
    path = corrupt_images / name
    with pytest.raises(SkippedFile, match=reason) as info:
        _prep(path)
    assert info.value.path == str(path)
    assert "BytesIO" not in str(info.value)


def test_not_an_image_and_empty():
    with pytest.raises(SkippedFile, match="not an image"):
        prepare(b"this is a text file, not a JPEG\n", "fake.jpg")
    with pytest.raises(SkippedFile, match="empty"):
        prepare(b"", "zero.jpg")
    truncated = jpeg(4, size=(64, 64))[:-200]
    with pytest.raises(SkippedFile, match="truncated"):
        prepare(truncated, "cut.jpg")
