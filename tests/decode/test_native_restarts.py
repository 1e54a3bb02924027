"""Restart markers: add_restarts is lossless and keeps the metadata, and the
compiled crop decoder, which then decodes only the restart segments covering
a crop, gives the same pixels as on the file without markers (decoded whole)
and still reports damaged or truncated data."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import native, read_info
from fastdata.errors import DecodeError

pytestmark = pytest.mark.skipif(native.cropdecode is None, reason="compiled crop decoder not built")


def photo(h: int, w: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x * 3 + y) % 256], axis=2)
    return Image.fromarray(np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8))


def jpeg(img: Image.Image, **save) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", **save)
    return buf.getvalue()


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)))


def header(data: bytes) -> tuple[list[int], int]:
    """The marker codes before the scan, and where the entropy-coded data starts
    (walked, not searched: an EXIF thumbnail is a JPEG too)."""
    codes, i = [], 2
    while True:
        code, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        codes.append(code)
        i += 2 + length
        if code == 0xDA:
            return codes, i


def segments(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each restart segment's entropy-coded bytes."""
    pos = header(data)[1]
    out, i = [], pos
    while True:
        i = data.index(b"\xff", i)
        nxt = data[i + 1]
        if nxt in (0x00, 0xFF):
            i += 1 if nxt == 0xFF else 2
            continue
        out.append((pos, i))
        if nxt == 0xD9:
            return out
        pos = i = i + 2


# (height, width, save options): 4:2:0, 4:2:2, 4:4:4, grey, sizes off the MCU grid
LAYOUTS = {
    "420": (203, 331, {"quality": 85}),
    "422": (150, 260, {"quality": 90, "subsampling": 1}),
    "444": (121, 197, {"quality": 92, "subsampling": 0}),
    "444_small": (40, 56, {"quality": 92, "subsampling": 0}),
}


def sources() -> dict[str, bytes]:
    out = {k: jpeg(photo(h, w), **opts) for k, (h, w, opts) in LAYOUTS.items()}
    out["gray"] = jpeg(photo(170, 233).convert("L"), quality=88)
    return out


SOURCES = sources()


def photo_files(shared: Path) -> list[Path]:
    photos = shared / "photos"
    return sorted(p for p in photos.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))


@pytest.mark.parametrize("resegment", [True, False], ids=["cut", "libjpeg"])
def test_transcode_is_lossless_on_every_shared_photo(shared_data, resegment):
    """Both paths: cutting the source's data into segments, and libjpeg's
    re-encode (what the first declines: restart markers already there, ...)."""
    done, size, marked_size = 0, 0, 0
    previous = native.cropdecode._set_resegment(resegment)
    try:
        for path in photo_files(shared_data):
            data = path.read_bytes()
            for chunks in (1, 24):
                out = native.add_restarts(data, chunks=chunks)
                if out is None:
                    continue
                assert 0xDD in header(out)[0], path
                np.testing.assert_array_equal(pixels(out), pixels(data), err_msg=str(path))
                done += 1
                size, marked_size = size + len(data), marked_size + len(out)
    finally:
        native.cropdecode._set_resegment(previous)
    assert done > 400  # hymenoptera train + val, the edge cases, twice
    assert marked_size < 1.06 * size  # fast path: +3.6% (24 chunks), +0.1% (whole rows)


def test_transcode_keeps_exif_and_icc(edge_images):
    src = Image.open(edge_images / "exif_orientation_jpeg" / "orientation_6.jpg")
    icc = Image.open(edge_images / "progressive_jpeg" / "progressive_big_icc.jpg").info["icc_profile"]  # 300 kB: 5 APP2s
    data = jpeg(src, quality=90, exif=src.getexif(), icc_profile=icc, comment=b"kept")
    out = native.add_restarts(data)
    assert out is not None
    got = Image.open(io.BytesIO(out))
    assert got.getexif()[0x0112] == 6 and got.info["icc_profile"] == icc and got.info["comment"] == b"kept"
    assert read_info(out).orientation == 6


def test_transcode_declines_what_it_does_not_rewrite(edge_images):
    progressive = (edge_images / "progressive_jpeg" / "progressive.jpg").read_bytes()
    cmyk = (edge_images / "cmyk_jpeg" / "cmyk.jpg").read_bytes()
    good = SOURCES["420"]
    for data in (progressive, cmyk, good[: len(good) // 2], b"not a jpeg"):
        assert native.add_restarts(data) is None


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("chunks", [1, 3, 100])
def test_segment_decode_matches_whole_file(name, chunks):
    data = SOURCES[name]
    marked = native.add_restarts(data, chunks=chunks)
    assert marked is not None and len(segments(marked)) > 1
    info, minfo = read_info(data), read_info(marked)
    rng = np.random.default_rng(chunks)
    h, w = info.stored_size
    for i in range(60):
        bh, bw = rng.uniform(1, h), rng.uniform(1, w)
        box = (rng.uniform(0, h - bh), rng.uniform(0, w - bw), bh, bw)
        min_size = [None, (h // 2, w // 2), (h // 4, w // 4), (8, 8)][i % 4]  # DCT scales 1, 2, 4, 8
        kw = {"min_size": min_size, "snap": bool(i % 3), "flip": bool(i % 2)}
        want = native.decode_resized(data, info, box, (37, 53), **kw)
        got = native.decode_resized(marked, minfo, box, (37, 53), **kw)
        assert want is not None and got is not None, f"{name}: the decoder declined box {box} {kw}"
        np.testing.assert_array_equal(got, want, err_msg=f"{name} box {box} {kw}")


def test_segment_decode_matches_on_every_orientation(edge_images):
    folder = edge_images / "exif_orientation_jpeg"
    rng = np.random.default_rng(5)
    for path in sorted(folder.glob("*.jpg")):
        data = path.read_bytes()
        marked = native.add_restarts(data, chunks=4)
        assert marked is not None, path
        info = read_info(data)
        H, W = info.height, info.width
        for i in range(12):
            bh, bw = rng.uniform(8, H), rng.uniform(8, W)
            box = (rng.uniform(0, H - bh), rng.uniform(0, W - bw), bh, bw)
            kw = {"min_size": (40, 40) if i % 2 else None, "flip": bool(i % 3)}
            want = native.decode_resized(data, info, box, (31, 29), **kw)
            got = native.decode_resized(marked, read_info(marked), box, (31, 29), **kw)
            assert want is not None and got is not None, f"{path.name}: the decoder declined box {box}"
            np.testing.assert_array_equal(got, want, err_msg=f"{path.name} box {box}")


def test_segment_decode_matches_whole_file_on_hymenoptera(shared_data):
    """The same restart-marked file, the segment path against the whole-file
    path (real photos: 4:4:4, 4:2:0, 4:4:0, widths with awkward divisors)."""
    cd = native.cropdecode
    rng = np.random.default_rng(11)
    photos = sorted((shared_data / "photos" / "hymenoptera" / "train").rglob("*.jpg"))
    assert len(photos) > 200
    for path in photos:
        marked = native.add_restarts(path.read_bytes())
        if marked is None:
            continue
        info = read_info(marked)
        h, w = info.stored_size
        for i in range(3):
            bh, bw = rng.uniform(0.2, 1) * h, rng.uniform(0.2, 1) * w
            box = (rng.uniform(0, h - bh), rng.uniform(0, w - bw), bh, bw)
            kw = {"min_size": (112, 112) if i else None, "flip": bool(i % 2)}
            got = native.decode_resized(marked, info, box, (56, 56), **kw)
            previous = cd._set_segments(False)
            try:
                want = native.decode_resized(marked, info, box, (56, 56), **kw)
            finally:
                cd._set_segments(previous)
            np.testing.assert_array_equal(got, want, err_msg=f"{path.name} box {box} {kw}")


def cut(data: bytes, seg: tuple[int, int]) -> bytes:
    """The data with the second half of one segment's bytes removed."""
    start, end = seg
    return data[: (start + end) // 2] + data[end:]


@pytest.mark.parametrize("chunks", [1, 100])
def test_damage_in_a_decoded_segment_raises_and_elsewhere_is_not_read(chunks):
    data = SOURCES["420"]
    marked = native.add_restarts(data, chunks=chunks)
    segs = segments(marked)
    info = read_info(marked)
    h, w = info.stored_size
    top_left, bottom = (0.0, 0.0, 40.0, 40.0), (h - 40.0, 0.0, 40.0, float(w))
    damaged_last = cut(marked, segs[-1])
    with pytest.raises(DecodeError, match="corrupt|Corrupt|premature"):
        native.decode_resized(damaged_last, info, bottom, (20, 20), name="sample 3")
    # The top-left box never reads the last segment: only the segment path
    # can decode it (the whole-file path would stop after the box, so damage
    # *below* says nothing; damage in the first segment *above* does).
    want = native.decode_resized(data, read_info(data), top_left, (20, 20))
    np.testing.assert_array_equal(native.decode_resized(damaged_last, info, top_left, (20, 20)), want)
    damaged_first = cut(marked, segs[0])
    want = native.decode_resized(data, read_info(data), bottom, (20, 20))
    np.testing.assert_array_equal(native.decode_resized(damaged_first, info, bottom, (20, 20)), want)


def test_truncated_restart_marked_file_raises():
    marked = native.add_restarts(SOURCES["420"], chunks=100)
    info = read_info(marked)
    segs = segments(marked)
    for end in (segs[len(segs) // 2][1], segs[-1][1], len(marked) - 1):
        with pytest.raises(DecodeError, match="premature|Premature"):
            native.decode_resized(marked[:end], info, (0.0, 0.0, 16.0, 16.0), (16, 16), name="sample 1")


def test_restart_interval_that_fits_no_layout_uses_the_whole_file():
    # Pillow's restart_marker_blocks=5 on a 21-MCU row: neither whole rows nor a divisor.
    data = jpeg(photo(100, 165), quality=90, subsampling=0)
    odd = jpeg(photo(100, 165), quality=90, subsampling=0, restart_marker_blocks=5)
    info = read_info(data)
    box = (30.0, 40.0, 50.0, 60.0)
    np.testing.assert_array_equal(native.decode_resized(odd, info, box, (25, 30)),
                                  native.decode_resized(data, info, box, (25, 30)))
