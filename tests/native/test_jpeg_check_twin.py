"""converters/jpeg_check.py's structural check, compiled (fastdata.formats._speedups)
against its Python reference: the same answer for every real photo and edge case
(../shared/data), every generated one (tests/testkit.py), and thousands of damaged
files (byte flips, truncations, marker and length edits), under several
Image.MAX_IMAGE_PIXELS settings."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from fastdata.converters import jpeg_check
from fastdata.formats import speedups

pytestmark = pytest.mark.skipif(not speedups.available(), reason=f"compiled helpers not built: {speedups.status()}")


def _compiled(data: bytes):
    with speedups.using(True):
        return jpeg_check.passthrough_size(data)


def _python(data: bytes):
    with speedups.using(False):
        return jpeg_check.passthrough_size(data)


def _seeds(root: Path) -> list[bytes]:
    """Every file under ``root``/photos and ``root``/corrupt: ../shared/data, or the generated images."""
    photos = root / "photos"
    files = sorted(p for p in photos.rglob("*") if p.is_file()) + sorted((root / "corrupt").iterdir())
    return [p.read_bytes() for p in files]


# Where the seeds come from: the real photos and Pillow's test images (third-party files), or
# the generated photos and edge cases; with, for each, how many files and accepted JPEGs at least.
SOURCES = {"real": ("shared_data", 400, 300), "generated": ("generated_images", 150, 120)}


@pytest.fixture(params=sorted(SOURCES))
def source(request) -> tuple[Path, int, int]:
    fixture, files, accepted = SOURCES[request.param]
    return request.getfixturevalue(fixture), files, accepted


def _exif(data: bytes, entries: list[tuple[int, int, int, int]], order: str = "<", ifd_at: int = 8, count: int | None = None) -> bytes:
    tiff = (b"II" if order == "<" else b"MM") + struct.pack(order + "HI", 42, ifd_at)
    ifd = struct.pack(order + "H", len(entries) if count is None else count) + b"".join(
        struct.pack(order + "HHIHH", tag, kind, num, value, 0) for tag, kind, num, value in entries
    ) + b"\0\0\0\0"
    block = b"Exif\0\0" + tiff + ifd
    return data[:2] + b"\xff\xe1" + struct.pack(">H", len(block) + 2) + block + data[2:]


def _crafted(base: bytes) -> list[bytes]:
    """Segments the real files rarely have, each on both sides of a rule."""
    out = []
    for order in "<>":
        for entries in ([(0x0112, 3, 1, 1)], [(0x0112, 3, 1, 6)], [(0x0112, 4, 1, 1)], [(0x0112, 3, 2, 1)],
                        [(0x0112, 3, 1, 1), (0x0112, 3, 1, 1)], [(0x010F, 2, 4, 7)], []):
            out.append(_exif(base, entries, order))
    # the IFD and its entries at, just inside and just past the segment's end
    one = [(0x0112, 3, 1, 1)]
    size = 8 + 2 + 12 + 4  # TIFF header, count, one entry, next-IFD pointer
    for ifd_at in (7, size - 2, size - 1, size, 1 << 31):
        out.append(_exif(base, one, ifd_at=ifd_at))
    for count in (2, 3):  # entries running past the segment's end
        out.append(_exif(base, one, count=count))
    sos = base.find(b"\xff\xda")
    if sos > 0:  # a scan header right before the EOI, and one byte later
        sos_end = sos + 2 + int.from_bytes(base[sos + 2 : sos + 4], "big")
        out += [base[:sos_end] + b"\xff\xd9", base[:sos_end] + b"\0\xff\xd9"]
    twice = _exif(_exif(base, [(0x0112, 3, 1, 1)]), [])
    xmp = base[:2] + b"\xff\xe1" + struct.pack(">H", 40) + b"http://ns.adobe.com/xap/1.0/\0Orientation" + base[2:]
    xmp_near = base[:2] + b"\xff\xe1" + struct.pack(">H", 14) + b"Orientatio" + b"\xff\xfe\x00\x03n" + base[2:]
    short_jfif = base[:2] + b"\xff\xe0\x00\x06JFIF" + base[2:]
    short_adobe = base[:2] + b"\xff\xee\x00\x07Adobe" + base[2:]
    short_icc = base[:2] + b"\xff\xe2\x00\x0eICC_PROFILE\0" + base[2:]
    icc_ok = base[:2] + b"\xff\xe2\x00\x10ICC_PROFILE\0\1\1" + base[2:]
    mpf = base[:2] + b"\xff\xe2\x00\x08MPF\0\0\0" + base[2:]
    exif_cut = base[:2] + b"\xff\xe1\x00\x08Exif\0\0" + base[2:]  # "II" etc. read past the segment, as Python does
    fill = base[:2] + b"\xff\xff\xff\xfe\x00\x04ab" + base[2:]
    # segments whose length runs past the end of a small file (nothing may be read past it)
    for marker in (b"\xdb", b"\xc0", b"\xe1", b"\xe0", b"\xda"):
        for body in (b"\0" * 5, b"Exif\0\0II*\0", b"\x08\0\x10\0\x10\x03\x01\x22\0"):
            out.append(b"\xff\xd8\xff" + marker + b"\xff\xf0" + body + b"\xff\xd9")
    return out + [twice, xmp, xmp_near, short_jfif, short_adobe, short_icc, icc_ok, mpf, exif_cut, fill,
                  base + b"\0", base[:-1], base[:4], b"\xff\xd8\xff\xd9", b""]


def _header_end(data: bytes) -> int:
    sos = data.find(b"\xff\xda")
    return min(len(data), (sos if sos > 0 else 600) + 24)


def _mutants(rng: random.Random, data: bytes, count: int) -> list[bytes]:
    out = []
    head = max(4, _header_end(data))
    for _ in range(count):
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(7)
            at = rng.randrange(min(head, len(b))) if b else 0
            if kind == 0 and b:  # flip a bit
                b[at] ^= 1 << rng.randrange(8)
            elif kind == 1 and b:  # a random byte, often a marker byte
                b[at] = rng.choice([0xFF, 0x00, 0xD8, 0xD9, 0xDA, 0xDB, 0xC0, 0xC2, 0xE1, 0xE2, rng.randrange(256)])
            elif kind == 2:  # truncate, keeping or restoring the EOI
                b = b[: rng.randrange(len(b) + 1)]
                if rng.random() < 0.5:
                    b += b"\xff\xd9"
            elif kind == 3:  # insert bytes
                b[at:at] = bytes(rng.choice([[0xFF], [0xFF, 0xFF], [0], rng.randbytes(3)]))
            elif kind == 4 and b:  # delete bytes
                del b[at : at + rng.randint(1, 4)]
            elif kind == 5:  # change a segment length
                seg = data.find(b"\xff", rng.randrange(2, head))
                if 0 <= seg < len(b) - 3:
                    b[seg + 2 : seg + 4] = struct.pack(">H", rng.choice([0, 1, 2, 3, rng.randrange(65536)]))
            else:  # a big frame (the pixel limit) or an odd component count
                sof = bytes(b).find(b"\xff\xc0")
                if 0 <= sof < len(b) - 10:
                    b[sof + 5 : sof + 9] = struct.pack(">HH", rng.randrange(65536), rng.randrange(65536))
        out.append(bytes(b))
    return out


def test_the_same_answer_on_every_photo_and_edge_case_file(source):
    root, files, at_least = source
    seeds = _seeds(root)
    assert len(seeds) > files
    accepted = 0
    for data in seeds + [c for s in seeds[:40] for c in _crafted(s)]:
        want = _python(data)
        assert _compiled(data) == want
        accepted += want is not None
    assert accepted > at_least  # the photos pass: the comparison is not only of refusals


@pytest.mark.parametrize("limit", ["default", None, 89_478_485 * 2, 10_000, 0])
def test_the_same_answer_on_mutated_files(source, monkeypatch, limit):
    if limit != "default":
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", limit)
    rng = random.Random(f"jpeg-{limit}")
    seeds = _seeds(source[0])
    crafted = [c for s in rng.sample(seeds, 10) for c in _crafted(s)]
    checked = disagree = 0
    answers = set()
    for seed in rng.sample(seeds, 60) + rng.sample(crafted, 40):
        for data in _mutants(rng, seed, 60 if limit == "default" else 15):
            want = _python(data)
            answers.add(want is None)
            checked += 1
            if _compiled(data) != want:
                disagree += 1
                pytest.fail(f"compiled {_compiled(data)} != python {want} for {data[:_header_end(data)].hex()}")
    assert checked >= 1500 and disagree == 0
    assert answers == {True, False} or limit in (0, 10_000)  # both verdicts (no photo is under 10,000 pixels)


def test_a_limit_that_is_not_an_int_is_left_to_python(monkeypatch, generated_images: Path):
    data = next(d for d in _seeds(generated_images) if _python(d) is not None)
    h, w = _python(data)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", h * w - 0.5)
    assert speedups.native.jpeg_passthrough_size(data, Image.MAX_IMAGE_PIXELS) is NotImplemented
    assert _compiled(data) is None is _python(data)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", h * w)
    assert _compiled(data) == (h, w) == _python(data)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", h * w - 1)
    assert _compiled(data) is None is _python(data)


def test_buffers_other_than_bytes_take_the_python_path(generated_images: Path):
    data = next(d for d in _seeds(generated_images) if _python(d) is not None)
    with speedups.using(True):
        assert jpeg_check.passthrough_size(bytearray(data)) == _python(data)


def test_no_sanitizer_report_and_the_same_answers(generated_images: Path, tmp_path: Path):
    """A small round of tests/native/fuzz_jpeg_check.py: jpeg_check.c under
    AddressSanitizer + UndefinedBehaviorSanitizer, each input in a buffer of
    exactly its size."""
    sys.path.insert(0, str(Path(__file__).parent))
    import fuzz_jpeg_check

    if fuzz_jpeg_check.compiler() is None:
        pytest.skip("no C compiler")
    try:
        checked, problems = fuzz_jpeg_check.run(generated_images, files=30, mutants=40, seed=1, workdir=tmp_path)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the compiler cannot build with sanitizers here: {exc.stderr[-300:]}")
    assert checked > 1500 and problems == []
