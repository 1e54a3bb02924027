"""Helpers test modules import by name (``from testkit import ...``).

Not in conftest.py: several conftest modules exist (tests/, tests/remote/), and
a spawned DataLoader worker that re-imports a test module resolves a bare
``import conftest`` to whichever comes first on sys.path.
"""

from __future__ import annotations

import importlib.util
import io
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Where the third-party test files (written by MXNet, TensorFlow, Caffe, Pillow; real photos) are
#: looked for first: a path to the folder that ``../shared/data`` is beside the checkout.
DATA_ENV = "FASTDATA_TEST_DATA"
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()
#: The one reason every test that needs those files is skipped with (tests/conftest.py counts them).
SHARED_DATA_REASON = f"third-party test files not found: set {DATA_ENV} or put shared/data beside the checkout"


def shared_data_path() -> Path | None:
    """``$FASTDATA_TEST_DATA``, else ``../shared/data`` beside the checkout; None when neither is a folder."""
    env = os.environ.get(DATA_ENV)
    for candidate in ([Path(env).expanduser()] if env else []) + [SHARED_DATA]:
        if candidate.is_dir():
            return candidate.resolve()
    return None


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


requires_dali = pytest.mark.skipif(not has_module("nvidia.dali"), reason="NVIDIA DALI not installed (pip install 'fastdata[dali]')")


# --------------------------------------------------------------------------
# Generated test images: what the tests that need "some real-looking images"
# use, so that they run on a fresh clone without ../shared/data. Only tests
# whose point is a file another tool wrote (MXNet, TensorFlow, Caffe, Pillow's
# own test images, the real-photo conformance checks) need the shared data.
# Everything here is deterministic (fixed seeds) and written once per session
# (see the fixtures in tests/conftest.py).
# --------------------------------------------------------------------------

#: Classes and files of the generated ImageFolder tree (``train`` and ``val``).
PHOTO_CLASSES = ("ants", "bees")
PHOTO_COUNTS = {"train": 50, "val": 16}  # per class, not counting the two traps in train/ants
#: The traps a real folder has (the hymenoptera set has both): a GIF, and a JPEG named ``.jpeg``.
PHOTO_GIF = "train/ants/not_a_photo.gif"
PHOTO_JPEG_EXT = "train/ants/camera_upload.jpeg"

#: The edge-case folder: one sub-folder per case, the same cases and counts as
#: shared/data/photos/edgecases (Pillow's test images), so that "25 images, 17
#: normalised, 9 PNGs, 7 EXIF orientations" hold for both.
EDGE_CASES = {
    "cmyk_jpeg": ["cmyk.jpg"],
    "exif_orientation_jpeg": [f"orientation_{o}.jpg" for o in range(2, 9)],
    "gray_jpeg": ["gray.jpg", "gray_extraneous_bytes.jpg"],
    "png_16bit": ["gray16_trns.png"],
    "png_alpha": ["la.png", "rgba.png"],
    "png_gray_bilevel": ["bilevel.png", "bilevel_dither.png", "gray.png"],
    "png_palette": ["palette.png", "palette_4bit.png", "palette_trns.png"],
    "progressive_jpeg": ["progressive.jpg", "progressive_big_icc.jpg"],
    "rgb_jpeg": ["exif_icc_444.jpg", "plain_422.jpg", "same_as_cmyk.jpg", "upright.jpg"],
}
#: The file every exif_orientation_jpeg/orientation_N.jpg shows once turned upright (square, 128 px).
EDGE_UPRIGHT = "rgb_jpeg/upright.jpg"
#: The same picture as cmyk_jpeg/cmyk.jpg, saved as RGB.
EDGE_CMYK_AS_RGB = "rgb_jpeg/same_as_cmyk.jpg"

#: A small three-class folder like shared/data/vectors/images: same names, sizes, one grayscale.
SMALL_FOLDER = {
    "cat/cat_00.jpg": (55, 56), "cat/cat_01.jpg": (115, 62), "cat/cat_02.jpg": (79, 118),
    "cat/cat_03.jpg": (116, 63), "dog/dog_00.jpg": (130, 65), "dog/dog_01.jpg": (72, 83),
    "dog/dog_02.jpg": (110, 106), "dog/dog_03.jpg": (150, 66), "dog/gray_00.jpg": (70, 50),
    "zebra_7/zebra_7_00.jpg": (72, 158), "zebra_7/zebra_7_01.jpg": (143, 152),
    "zebra_7/zebra_7_02.jpg": (120, 80), "zebra_7/zebra_7_03.jpg": (40, 61),
}  # relative path -> (width, height)


def natural_image(seed: int, width: int, height: int, mode: str = "RGB"):
    """A photo-like picture (PIL image): smooth gradients and shading, a few soft-edged
    shapes, fine texture and sensor-like noise. Not random noise: resampling it with
    two different filters gives differences of the size real photos give."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter

    rng = np.random.default_rng(seed)
    h, w = height, width
    # The smooth part (gradient, shading, objects) is drawn at most 320 px wide, then enlarged.
    f = min(1.0, 320 / max(h, w))
    sh, sw = max(2, round(h * f)), max(2, round(w * f))
    yy, xx = np.mgrid[0:sh, 0:sw].astype(np.float32) / max(sh, sw)
    angle = rng.uniform(0, 2 * np.pi)
    t = xx * np.cos(angle) + yy * np.sin(angle)
    t = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    c0, c1 = rng.uniform(20, 235, 3).astype(np.float32), rng.uniform(20, 235, 3).astype(np.float32)
    img = c0 + (c1 - c0) * t[..., None]
    for _ in range(4):  # low-frequency shading
        freq, phase, a = rng.uniform(0.5, 4.0), rng.uniform(0, 2 * np.pi), rng.uniform(0, 2 * np.pi)
        wave = np.sin(2 * np.pi * freq * (xx * np.cos(a) + yy * np.sin(a)) + phase)
        img += wave[..., None] * (rng.uniform(4, 22) * rng.uniform(0.4, 1.0, 3)).astype(np.float32)
    base = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")
    layer = Image.new("RGBA", (sw, sh), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    for _ in range(int(rng.integers(10, 30))):  # thin things: stalks, legs, antennae
        x0, y0 = rng.uniform(0, sw), rng.uniform(0, sh)
        a, length = rng.uniform(0, 2 * np.pi), rng.uniform(0.05, 0.4) * max(sw, sh)
        colour = tuple(int(v) for v in rng.integers(0, 256, 3)) + (int(rng.integers(120, 256)),)
        draw.line([(x0, y0), (x0 + length * np.cos(a), y0 + length * np.sin(a))], fill=colour, width=int(rng.integers(1, 3)))
    for _ in range(int(rng.integers(4, 10))):  # objects with edges
        cx, cy = rng.uniform(0, sw), rng.uniform(0, sh)
        rx, ry = rng.uniform(0.04, 0.3) * sw, rng.uniform(0.04, 0.3) * sh
        colour = tuple(int(v) for v in rng.integers(0, 256, 3)) + (int(rng.integers(150, 256)),)
        if rng.random() < 0.5:
            draw.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=colour)
        else:
            k = int(rng.integers(3, 7))
            angles = np.sort(rng.uniform(0, 2 * np.pi, k))
            draw.polygon([(float(cx + rx * np.cos(a)), float(cy + ry * np.sin(a))) for a in angles], fill=colour)
    layer = layer.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.5, 1.2))))
    base.paste(layer, (0, 0), layer)
    if (sh, sw) != (h, w):
        base = base.resize((w, h), Image.Resampling.BICUBIC)
    arr = np.asarray(base).astype(np.float32)
    coarse = rng.standard_normal((max(2, h // 2), max(2, w // 2), 3), dtype=np.float32)  # texture, 2 px wide
    texture = Image.fromarray(np.clip(coarse * 40 + 128, 0, 255).astype(np.uint8)).resize((w, h), Image.Resampling.BILINEAR)
    arr += (np.asarray(texture).astype(np.float32) - 128) * np.float32(rng.uniform(0.2, 0.45))
    arr += rng.standard_normal((h, w, 1), dtype=np.float32) * np.float32(rng.uniform(2.5, 5.0))  # sensor noise
    out = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
    return out if mode == "RGB" else out.convert(mode)


def encode(img, fmt: str = "JPEG", **save) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **save)
    return buf.getvalue()


def _exif(orientation: int | None = None, camera: bool = True) -> bytes:
    from PIL import Image

    exif = Image.Exif()
    if camera:
        exif[0x010F] = "fastdata"  # Make
        exif[0x0110] = "generated test photo"  # Model
        exif[0x0132] = "2024:01:02 03:04:05"  # DateTime
    if orientation is not None:
        exif[0x0112] = orientation
    return exif.tobytes()


def icc_profile(size: int = 0) -> bytes:
    """An sRGB ICC profile (Pillow's), padded to ``size`` bytes (its header says so): a big one
    spans several APP2 segments."""
    from PIL import ImageCms

    data = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    if size > len(data):
        data += bytes(size - len(data))
        data = len(data).to_bytes(4, "big") + data[4:]
    return data


def write_photo_tree(root: Path) -> Path:
    """An ImageFolder tree ``{train,val}/{ants,bees}/*.jpg`` of photo-like JPEGs, mixed like the
    hymenoptera photos: varied sizes (mostly 200-640 px wide, a few up to 1280) and aspect
    ratios, mostly 4:4:4 with some 4:2:0 and 4:2:2, qualities 70-95, ICC profiles on half, camera
    EXIF (orientation 1) on some, one progressive photo per split; and what that set lacks: a few
    grayscale photos and, in val only, two photos stored turned with the EXIF tag that says so
    (orientations 6 and 3). Plus the traps :data:`PHOTO_GIF` and :data:`PHOTO_JPEG_EXT`.
    Returns ``root``."""
    import numpy as np

    aspects = [4 / 3, 3 / 4, 3 / 2, 2 / 3, 16 / 9, 1.0, 5 / 4, 9 / 16, 1.85]
    index = 0
    for split, per_class in PHOTO_COUNTS.items():
        for c, cls in enumerate(PHOTO_CLASSES):
            (root / split / cls).mkdir(parents=True, exist_ok=True)
            for k in range(per_class):
                index += 1
                rng = np.random.default_rng(1000 + index)
                width = int(rng.integers(200, 641))
                if k % 16 == 5:  # a few large ones: decoded at a DCT scale by the crop paths
                    width = int(rng.integers(800, 1281))
                height = max(120, int(round(width / aspects[(index * 7 + c) % len(aspects)])))
                gray = (split == "train" and k in (10, 30)) or (split, cls, k) == ("val", "ants", 6)
                save = {"quality": int(rng.integers(70, 96))}
                if not gray:
                    save["subsampling"] = [0, 0, 0, 2, 1][k % 5]  # 4:4:4, 4:2:0, 4:2:2
                    if k % 2 == 0:
                        save["icc_profile"] = icc_profile()
                if (split, cls, k) in (("train", "ants", 7), ("val", "bees", 2)):
                    save["progressive"] = True
                if k % 6 == 1:
                    save["exif"] = _exif(orientation=1)
                if (split, cls) == ("val", "bees") and k in (4, 9):  # stored turned, with the tag that says so
                    save["exif"] = _exif(orientation=6 if k == 4 else 3)
                img = natural_image(index, width, height, "L" if gray else "RGB")
                (root / split / cls / f"{cls}_{split}_{k:03d}.jpg").write_bytes(encode(img, **save))
    (root / PHOTO_JPEG_EXT).write_bytes(encode(natural_image(9001, 500, 375), quality=85, subsampling=0))
    (root / PHOTO_GIF).write_bytes(encode(natural_image(9002, 240, 180).convert("P", palette=1, colors=64), "GIF"))
    return root


def _extraneous_bytes(data: bytes) -> bytes:
    """``data`` (a JPEG with restart markers) with 16 stray bytes before a restart marker two
    thirds down: libjpeg warns "16 extraneous bytes before marker 0xd?" (recoverable, after the
    rows above it) and Pillow accepts the file."""
    sos = data.index(b"\xff\xda")
    rst = [i for i in range(sos, len(data) - 1) if data[i] == 0xFF and 0xD0 <= data[i + 1] <= 0xD7]
    at = rst[len(rst) * 2 // 3]
    return data[:at] + bytes(16) + data[at:]


def _asymmetric(img):
    """``img`` blended with colour ramps that no flip or turn maps onto themselves (red left to
    right, green top to bottom, blue along both): a wrongly turned picture differs by ~50 grey levels."""
    import numpy as np
    from PIL import Image

    h, w = img.height, img.width
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    x, y = x * 255 / (w - 1), y * 255 / (h - 1)
    ramps = np.stack([x, y, (x + 2 * y) / 3], axis=2)
    return Image.fromarray(np.clip(0.8 * ramps + 0.2 * np.asarray(img, np.float32), 0, 255).astype(np.uint8))


def write_edge_cases(root: Path) -> Path:
    """The files of :data:`EDGE_CASES` under ``root``; returns ``root``."""
    import numpy as np
    from PIL import Image

    def put(rel: str, data: bytes) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)

    picture = natural_image(2001, 160, 120)
    put("cmyk_jpeg/cmyk.jpg", encode(picture.convert("CMYK"), quality=90))
    put(EDGE_CMYK_AS_RGB, encode(picture, quality=90))
    upright = _asymmetric(natural_image(2002, 128, 128))
    put(EDGE_UPRIGHT, encode(upright, quality=90))
    stored = {  # the stored pixels for each tag: the inverse of the turn that makes them upright
        2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
        5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_90, 7: Image.Transpose.TRANSVERSE,
        8: Image.Transpose.ROTATE_270,
    }
    for o, turn in stored.items():
        put(f"exif_orientation_jpeg/orientation_{o}.jpg", encode(upright.transpose(turn), quality=90, exif=_exif(o)))
    put("rgb_jpeg/exif_icc_444.jpg", encode(natural_image(2003, 300, 200), quality=92, subsampling=0,
                                           exif=_exif(1), icc_profile=icc_profile()))
    put("rgb_jpeg/plain_422.jpg", encode(natural_image(2004, 250, 190), quality=80, subsampling=1))
    gray = natural_image(2005, 200, 150, "L")
    put("gray_jpeg/gray.jpg", encode(gray, quality=90))
    put("gray_jpeg/gray_extraneous_bytes.jpg",
        _extraneous_bytes(encode(natural_image(2006, 240, 240, "L"), quality=88, restart_marker_rows=2)))
    put("progressive_jpeg/progressive.jpg", encode(natural_image(2007, 320, 240), quality=85, progressive=True))
    put("progressive_jpeg/progressive_big_icc.jpg",
        encode(natural_image(2008, 256, 192), quality=85, progressive=True, icc_profile=icc_profile(300_000)))
    photo = natural_image(2009, 150, 110)
    put("png_palette/palette.png", encode(photo.convert("P", palette=Image.Palette.ADAPTIVE, colors=256), "PNG"))
    put("png_palette/palette_4bit.png", encode(photo.convert("P", palette=Image.Palette.ADAPTIVE, colors=16), "PNG", bits=4))
    put("png_palette/palette_trns.png",
        encode(photo.convert("P", palette=Image.Palette.ADAPTIVE, colors=64), "PNG", transparency=0))
    put("png_gray_bilevel/gray.png", encode(natural_image(2010, 180, 130, "L"), "PNG"))
    put("png_gray_bilevel/bilevel.png", encode(natural_image(2011, 120, 90, "L").point(lambda v: 255 if v > 128 else 0).convert("1"), "PNG"))
    put("png_gray_bilevel/bilevel_dither.png", encode(natural_image(2012, 300, 300, "L").convert("1"), "PNG"))
    rgba = natural_image(2013, 140, 100).convert("RGBA")
    alpha = np.tile(np.linspace(0, 255, 140, dtype=np.float32), (100, 1))
    alpha[:, :20] = 0  # fully transparent: composited on white
    rgba.putalpha(Image.fromarray(alpha.astype(np.uint8)))
    put("png_alpha/rgba.png", encode(rgba, "PNG"))
    la = natural_image(2014, 90, 70, "L").convert("LA")
    la.putalpha(Image.fromarray(np.tile(np.linspace(255, 0, 70, dtype=np.float32)[:, None], (1, 90)).astype(np.uint8)))
    put("png_alpha/la.png", encode(la, "PNG"))
    ramp = np.asarray(natural_image(2015, 96, 64, "L"), np.uint16) * 257
    ramp[:4, :4] = 1234  # the transparent value
    put("png_16bit/gray16_trns.png", encode(Image.fromarray(ramp), "PNG", transparency=1234))
    written = {case: sorted(p.name for p in (root / case).iterdir()) for case in sorted(p.name for p in root.iterdir())}
    assert written == EDGE_CASES, written
    return root


def write_corrupt(root: Path) -> Path:
    """``truncated_jpeg.jpg`` (a progressive JPEG cut short) and ``broken.png`` (a PNG signature,
    then garbage) under ``root``: what every reader must refuse, naming the file."""
    import random

    root.mkdir(parents=True, exist_ok=True)
    whole = encode(natural_image(3001, 100, 100), quality=90, progressive=True)
    scans = [i for i in range(len(whole) - 1) if whole[i : i + 2] == b"\xff\xda"]
    k = len(scans) // 2  # cut inside the entropy-coded data of a middle scan: "premature end" for every decoder
    cut = scans[k] + 14 + int((scans[k + 1] - scans[k] - 14) * 0.6)
    (root / "truncated_jpeg.jpg").write_bytes(whole[:cut])
    garbage = random.Random(3002).randbytes(72)
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + garbage)
    return root


def write_small_folder(root: Path) -> Path:
    """:data:`SMALL_FOLDER` under ``root`` (3 classes, 13 JPEGs, ``dog/gray_00.jpg`` grayscale)."""
    for i, (rel, (w, h)) in enumerate(SMALL_FOLDER.items()):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        mode = "L" if "gray" in rel else "RGB"
        (root / rel).write_bytes(encode(natural_image(4000 + i, w, h, mode), quality=90))
    return root


def write_test_images(root: Path) -> Path:
    """Everything above, laid out like shared/data's image folders::

        photos/ants_bees/{train,val}/{ants,bees}/   write_photo_tree
        photos/edgecases/<case>/                    write_edge_cases
        corrupt/{truncated_jpeg.jpg,broken.png}     write_corrupt
        folder/{cat,dog,zebra_7}/                   write_small_folder
    """
    write_photo_tree(root / "photos" / "ants_bees")
    write_edge_cases(root / "photos" / "edgecases")
    write_corrupt(root / "corrupt")
    write_small_folder(root / "folder")
    return root
