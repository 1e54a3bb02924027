"""The structural pass-through check agrees with the decode it replaces, and says where it cannot."""

from __future__ import annotations

import io
import multiprocessing
import os
import struct
import subprocess
import sys

import pytest
from convkit import jpeg, make_folder, read_back, run_cli
from fastdata.converters import jpeg_check
from fastdata.converters.jpeg_check import passthrough_size
from fastdata.converters.conversion.normalize import EncodeOptions, prepare
from fastdata.converters.planning.scan import SkippedFile
from fastdata.converters.workers.parallel import ordered_map
from PIL import Image

DECODE = EncodeOptions(verify_decode=True)


def _with_exif(data: bytes, orientation: int, kind: int = 3) -> bytes:
    ifd = struct.pack("<HHHIHH", 1, 0x0112, kind, 1, orientation, 0) + b"\0\0\0\0"
    block = b"Exif\0\0" + b"II" + struct.pack("<HI", 42, 8) + ifd
    return data[:2] + b"\xff\xe1" + struct.pack(">H", len(block) + 2) + block + data[2:]


def _damaged(index: int) -> bytes:
    """A progressive JPEG whose second scan names a component the frame lacks.

    The check stops at the first scan, so only a decode sees it (libjpeg only
    warns about most damage inside scan data, so this is what a decode adds).
    """
    out = io.BytesIO()
    Image.open(io.BytesIO(jpeg(index, size=(64, 64)))).save(out, "JPEG", progressive=True)
    data = bytearray(out.getvalue())
    second = data.index(b"\xff\xda", data.index(b"\xff\xda") + 2)
    data[second + 5] = 0x77
    return bytes(data)


@pytest.mark.parametrize("source", ["generated", "pillow"])
def test_every_edge_case_jpeg_it_accepts_decodes_and_passes_through(request, source):
    """Pillow's own test images (../shared/data), and the generated edge cases (tests/testkit.py)."""
    if source == "pillow":
        shared = request.getfixturevalue("shared_data")
        edge, corrupt = shared / "photos" / "edgecases", shared / "corrupt"
    else:
        edge, corrupt = request.getfixturevalue("edge_images"), request.getfixturevalue("corrupt_images")
    accepted = 0
    for path in sorted(edge.rglob("*")) + sorted(corrupt.iterdir()):
        if not path.is_file():
            continue
        data = path.read_bytes()
        size = passthrough_size(data)
        if size is None:
            continue
        accepted += 1
        decoded = prepare(data, str(path), DECODE)  # the old rule: a decode decides
        assert decoded.reasons == () and decoded.data == data, path
        assert (decoded.height, decoded.width) == size, path
    assert accepted >= 5


def test_what_it_refuses(edge_images, corrupt_images):
    edge = edge_images
    assert passthrough_size((corrupt_images / "truncated_jpeg.jpg").read_bytes()) is None
    assert passthrough_size((edge / "cmyk_jpeg" / "cmyk.jpg").read_bytes()) is None
    turned = sorted((edge / "exif_orientation_jpeg").glob("orientation_[2-8].jpg"))
    assert len(turned) == 7
    for path in turned:
        assert passthrough_size(path.read_bytes()) is None, path
    good = jpeg(3, size=(40, 30))
    assert passthrough_size(good) == (30, 40)
    assert passthrough_size(_with_exif(good, 1)) == (30, 40)
    assert passthrough_size(_with_exif(good, 6)) is None
    assert passthrough_size(_with_exif(good, 1, kind=8)) is None  # a type Pillow may read differently
    assert passthrough_size(good + b"\0\0") is None  # bytes after EOI: the decoder judges
    assert passthrough_size(good[:-1]) is None
    assert passthrough_size(good[:300] + good[-2:]) is None  # cut inside the headers
    assert passthrough_size(b"\xff\xd8\xff\xd9") is None
    short_jfif = good[:2] + b"\xff\xe0\x00\x07JFIF\x00" + good[4 + int.from_bytes(good[4:6], "big") :]
    assert passthrough_size(short_jfif) is None  # Pillow cannot open it: keep its verdict
    with pytest.raises(SkippedFile, match="not an image"):
        prepare(short_jfif, "j.jpg")
    assert passthrough_size(b"GIF89a" + bytes(100)) is None
    out = io.BytesIO()
    Image.new("CMYK", (8, 8)).save(out, "JPEG")
    assert passthrough_size(out.getvalue()) is None


def test_fallbacks_keep_the_old_verdicts(corrupt_images):
    with pytest.raises(SkippedFile, match="truncated"):
        prepare((corrupt_images / "truncated_jpeg.jpg").read_bytes(), "t.jpg")
    with pytest.raises(SkippedFile, match="not an image"):
        prepare(b"this is text, named .jpg", "x.jpg")
    good = jpeg(5, size=(40, 30))
    padded = good + b"\0" * 16  # falls back to a decode, which accepts trailing padding
    assert prepare(padded, "p.jpg").data == padded
    assert prepare(_with_exif(good, 6), "r.jpg").reasons == ("exif-orientation",)


def test_damage_after_the_first_scan_needs_verify_decode():
    data = _damaged(6)
    assert passthrough_size(data) == (64, 64)
    assert prepare(data, "d.jpg").data == data  # the documented trade-off: framing intact, stored
    with pytest.raises(SkippedFile):
        prepare(data, "d.jpg", DECODE)


def test_cli_verify_decode(tmp_path, capsys):
    files = make_folder(tmp_path / "src", {"a": 3})
    damaged = _damaged(7)
    (tmp_path / "src" / "a" / "zz.jpg").write_bytes(damaged)
    code, _, _ = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "fast", "--passthrough", "--format", "recordio",
                         "--workers", "1", "--quiet")
    assert code == 0
    assert len(read_back(tmp_path / "fast")[1]) == 4
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "slow", "--passthrough", "--format", "recordio",
                           "--workers", "1", "--verify-decode", "--allow-skips")
    assert code == 0 and "zz.jpg" in err
    stored = sorted(image for image, _ in read_back(tmp_path / "slow")[1])
    assert stored == sorted(files.values())


def _nothing() -> None:
    return None


def _in_worker(task: int) -> tuple[int, int]:
    return task, os.getpid()


def _in_parent(task: int) -> tuple[int, int] | None:
    return (task, os.getpid()) if task % 3 else None


def test_ordered_map_keeps_order_when_the_parent_takes_some_tasks():
    got = list(ordered_map(_in_worker, range(20), workers=2, init=_nothing, local=_in_parent))
    assert [t for t, _ in got] == list(range(20))
    here = {t for t, pid in got if pid == os.getpid()}
    assert here == {t for t in range(20) if t % 3}  # the rest crossed to a worker


def test_no_worker_starts_when_the_parent_takes_every_task():
    parent = os.getpid()
    seen = []
    for task, pid in ordered_map(_in_worker, range(30), workers=2, init=_nothing, local=lambda t: (t, parent)):
        seen.append(task)
        assert pid == parent and multiprocessing.active_children() == []
    assert seen == list(range(30))


def test_the_pixel_limit_is_pillows_without_importing_pillow():
    """The structural check keeps Pillow's decompression-bomb verdict (MAX_IMAGE_PIXELS) without
    importing Pillow: its default equals a fresh Pillow's, and a changed limit is followed."""
    code = (
        "import sys; from fastdata.converters import jpeg_check as j; "
        "before = j.pixel_limit(), 'PIL.Image' in sys.modules; "
        "from PIL import Image; fresh = Image.MAX_IMAGE_PIXELS; Image.MAX_IMAGE_PIXELS = 1234; "
        "print(before, fresh == j.PILLOW_PIXEL_LIMIT, j.pixel_limit())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == f"({jpeg_check.PILLOW_PIXEL_LIMIT}, False) True 1234"
