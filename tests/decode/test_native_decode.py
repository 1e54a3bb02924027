"""The compiled crop decoder (fastdata.decode._cropdecode) keeps every decoder
guarantee: exact pixels of the crop, all JPEG layouts, upright RGB, errors
that name the record, the bomb guard, and declining what it does not handle."""

from __future__ import annotations

import io
import struct
import threading

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import decode, native, read_info
from fastdata.errors import DecodeError, MissingDependencyError

cd = native.cropdecode
needs_native = pytest.mark.skipif(cd is None, reason="compiled crop decoder not built")


def photo(h: int = 120, w: int = 160) -> Image.Image:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) % 256], axis=2)
    return Image.fromarray(np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8))


def jpeg(img: Image.Image, **save) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", **save)
    return buf.getvalue()


LAYOUTS = {
    "420": {"quality": 85},
    "422": {"quality": 90, "subsampling": 1},
    "444": {"quality": 95, "subsampling": 0},
    "progressive": {"quality": 85, "progressive": True},
    "restart": {"quality": 85, "restart_marker_blocks": 3},
}


def crop(data: bytes, n: int, region, box=None, out_size=None, orientation=1, flip=False, max_pixels=0):
    """Call the extension directly; identity resize unless told otherwise."""
    t, l, h, w = region
    box = box or (0.0, 0.0, float(h), float(w))
    out = np.empty((*(out_size or (h, w)), 3), np.uint8)
    failed = cd.decode_resized(data, out, n, region, box, orientation, flip, max_pixels)
    return out if failed is None else failed


def test_status_says_which_path(monkeypatch):
    status = native.native_status()
    if cd is not None:
        assert status.startswith("compiled") and "libjpeg" in status
        assert native.crop_decoder("auto") == "compiled"
        monkeypatch.setattr(native, "_disabled", True)
        assert native.native_status().startswith("pure Python (FASTDATA_NATIVE=0")
        assert native.crop_decoder("auto") == "python"
    assert native.crop_decoder("simplejpeg") == "python"
    monkeypatch.setattr(native, "cropdecode", None)
    status = native.native_status()
    assert status.startswith("pure Python") and "apt-get install libjpeg-dev" in status
    with pytest.raises(MissingDependencyError, match="apt-get install libjpeg-dev"):
        native.crop_decoder("native")


@needs_native
@pytest.mark.parametrize("layout", [*LAYOUTS, "gray"])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_crop_equals_the_same_pixels_of_a_full_decode(layout, n):
    # Column crop (iMCU-aligned, fancy upsampling at its edges), skipped rows
    # and stopping early change no pixel of the region.
    img = photo(150, 203)
    data = jpeg(img.convert("L"), quality=90) if layout == "gray" else jpeg(img, **LAYOUTS[layout])
    dh, dw = -(-150 // n), -(-203 // n)
    full = crop(data, n, (0, 0, dh, dw))
    if n == 1:
        assert np.abs(full.astype(int) - decode(data)).max() <= 1  # the pure path's libjpeg-turbo
    rng = np.random.default_rng(n)
    for _ in range(25):
        h, w = int(rng.integers(1, dh + 1)), int(rng.integers(1, dw + 1))
        t, l = int(rng.integers(0, dh - h + 1)), int(rng.integers(0, dw - w + 1))
        assert np.array_equal(crop(data, n, (t, l, h, w)), full[t : t + h, l : l + w]), (t, l, h, w)


@needs_native
def test_grayscale_is_expanded_to_rgb():
    out = crop(jpeg(photo().convert("L")), 1, (10, 20, 50, 60), out_size=(32, 40))
    assert out.shape == (32, 40, 3) and np.array_equal(out[..., 0], out[..., 1]) and np.array_equal(out[..., 1], out[..., 2])


@needs_native
@pytest.mark.parametrize("orientation", range(1, 9))
def test_orientation_and_flip_give_the_upright_box(orientation):
    from tests.decode.test_decode_region import encode, picture

    upright = picture(90, 130)
    data = encode(upright, orientation=orientation)
    info = read_info(data)
    assert (info.height, info.width) == (90, 130)
    box = (17, 29, 51, 77)
    want = np.asarray(Image.fromarray(decode(data)).resize((40, 48), Image.Resampling.BILINEAR, box=(29, 17, 106, 68)))
    for flip in (False, True):
        got = native.decode_resized(data, info, box, (48, 40), flip=flip)
        ref = want[:, ::-1] if flip else want
        assert np.abs(got.astype(int) - ref).mean() < 0.6, (orientation, flip)


@needs_native
def test_edge_case_jpegs_are_upright_rgb(edge_images):
    # Reference: Pillow's Resize(64) + CenterCrop(56) of the upright decode
    # (torchvision's antialiased two steps), whose filter the compiled resize
    # uses. It is at least as close to it as the pure path (whose OpenCV box
    # filter differs by ~4 grey levels on the 128 px hopper at 2x; both
    # differ by up to 6.5 where a 1/4 DCT-scaled decode replaces Pillow's
    # filter on a 500 px image).
    from fastdata.transforms import EncodedImage, ResizedCenterCrop

    paths = sorted(edge_images.rglob("*.jpg"))  # generated (tests/testkit.py): the cases of Pillow's test images
    assert len(paths) >= 10
    for path in paths:
        data = path.read_bytes()
        full = Image.fromarray(decode(data))
        scale = 64 / min(full.size)
        img = full.resize((round(full.width * scale), round(full.height * scale)), Image.Resampling.BILINEAR)
        left, top = round((img.width - 56) / 2), round((img.height - 56) / 2)
        want = np.asarray(img.crop((left, top, left + 56, top + 56)))
        got = ResizedCenterCrop(64, 56, backend="native")(EncodedImage(data, path.name))
        pure = ResizedCenterCrop(64, 56, backend="simplejpeg")(EncodedImage(data, path.name))
        assert got.shape == (56, 56, 3)
        err, pure_err = np.abs(got.astype(int) - want).mean(), np.abs(pure.astype(int) - want).mean()
        assert err <= pure_err + 0.5, (path.name, err, pure_err)
        if min(full.size) * 56 / 64 < 2 * 84:  # decoded at full scale (84 = 1.5 x 56)
            assert err <= 1.0, (path.name, err)


@needs_native
def test_cmyk_12_bit_recoverable_and_non_jpeg_are_declined(edge_images):
    edge = edge_images
    cmyk = (edge / "cmyk_jpeg" / "cmyk.jpg").read_bytes()
    assert crop(cmyk, 1, (0, 0, 8, 8))[0] == cd.STATUS_UNSUPPORTED
    assert native.decode_resized(cmyk, read_info(cmyk), None, (8, 8)) is None
    # "extraneous bytes before marker": Pillow accepts it, so the pure path (its Pillow retry) takes it.
    stray = (edge / "gray_jpeg" / "gray_extraneous_bytes.jpg").read_bytes()  # stray bytes two thirds down
    assert crop(stray, 1, (0, 0, 240, 240))[0] == cd.STATUS_RECOVERABLE
    assert crop(stray, 1, (0, 0, 8, 8)).shape == (8, 8, 3)  # the warning comes after these rows
    twelve_bit = bytearray(jpeg(photo(32, 32)))
    twelve_bit[twelve_bit.index(b"\xff\xc0") + 4] = 12  # SOF precision: a valid file this libjpeg cannot take
    assert crop(bytes(twelve_bit), 1, (0, 0, 8, 8)) == (cd.STATUS_UNSUPPORTED, "Unsupported JPEG data precision 12")
    png = (edge / "png_palette" / "palette.png").read_bytes()
    assert native.decode_resized(png, read_info(png), None, (8, 8)) is None


@needs_native
def test_truncated_file_raises_naming_the_record(corrupt_images):
    data = (corrupt_images / "truncated_jpeg.jpg").read_bytes()
    info = read_info(data)
    for box in [None, (0, 0, 8, 8)]:  # the whole image, and a box the data still covers
        with pytest.raises(DecodeError, match="shard-00001.rec record 17.*Premature end of JPEG file"):
            native.decode_resized(data, info, box, (8, 8), name="shard-00001.rec record 17")


@needs_native
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cut_short_raises_wherever_the_box_is(layout):
    # Without an EOI at the end the rows below the box are decoded too, so a
    # truncation the box does not reach is still an error.
    data = jpeg(photo(256, 256), **LAYOUTS[layout])
    for cut in (len(data) // 3, len(data) // 2, len(data) - 40):
        for box in [(0, 0, 16, 16), (200, 200, 56, 56), (0, 0, 256, 256)]:
            with pytest.raises(DecodeError, match="cut.jpg"):
                native.decode_resized(data[:cut], read_info(data), box, (16, 16), name="cut.jpg")


@needs_native
def test_corrupt_scan_data_raises():
    data = bytearray(jpeg(photo(128, 128), quality=95))
    sos = data.index(b"\xff\xda")
    data[sos + 300 : sos + 310] = b"\xff\xd9" * 5  # an EOI in the middle of the scan
    with pytest.raises(DecodeError, match="bad.jpg: libjpeg-turbo cannot decode"):
        native.decode_resized(bytes(data), read_info(bytes(data)), None, (32, 32), name="bad.jpg")


@needs_native
def test_bomb_guard_before_any_allocation(monkeypatch):
    data = jpeg(photo(48, 64))
    sof = data.index(b"\xff\xc0")
    bomb = data[: sof + 5] + struct.pack(">HH", 60000, 60000) + data[sof + 9 :]

    class Unreachable:  # the compiled decoder allocates the decoded rows: it must not be entered
        def __getattr__(self, name):
            return getattr(cd, name)

        def decode_resized(self, *args):
            raise AssertionError("the bomb reached the compiled decoder")

    monkeypatch.setattr(native, "cropdecode", Unreachable())
    with pytest.raises(DecodeError, match="bomb.jpg: 60000x60000 = 3600000000 pixels exceeds max_pixels"):
        native.decode_resized(bomb, read_info(bomb), (0, 0, 10, 10), (8, 8), name="bomb.jpg")
    # libjpeg's own reading of the header is checked too, whatever Python parsed.
    status, message = crop(bomb, 1, (0, 0, 8, 8), max_pixels=1_000_000)
    assert status == cd.STATUS_TOO_LARGE and "60000x60000" in message


@needs_native
def test_out_buffer_gets_exactly_its_pixels():
    data = jpeg(photo())
    info = read_info(data)
    want = native.decode_resized(data, info, (10, 10, 80, 100), (50, 80))
    canvas = np.full((60, 100, 3), 7, np.uint8)
    slot = canvas[5:55, 10:90]  # rows 300 bytes apart, pixels packed
    assert native.decode_resized(data, info, (10, 10, 80, 100), (50, 80), out=slot) is slot
    assert np.array_equal(slot, want)
    slot[:] = 7
    assert (canvas == 7).all()  # nothing written outside the slot
    batch = np.zeros((3, 50, 80, 3), np.uint8)  # a channels-last batch
    native.decode_resized(data, info, (10, 10, 80, 100), (50, 80), out=batch[1])
    assert np.array_equal(batch[1], want) and not batch[0].any() and not batch[2].any()
    with pytest.raises(ValueError, match="out must be"):
        cd.decode_resized(data, np.empty((50, 80, 4), np.uint8), 1, (0, 0, 8, 8), (0.0, 0.0, 8.0, 8.0), 1, False, 0)
    assert crop(data, 1, (100, 0, 50, 50))[0] == cd.STATUS_BADARG  # rows past the image


@needs_native
def test_flip_mirrors_exactly():
    data = jpeg(photo())
    info = read_info(data)
    plain = native.decode_resized(data, info, (3.5, 7.25, 90.0, 120.5), (61, 77), snap=False)
    mirrored = native.decode_resized(data, info, (3.5, 7.25, 90.0, 120.5), (61, 77), snap=False, flip=True)
    assert np.array_equal(mirrored, plain[:, ::-1])


def _cpu_has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return any(line.startswith("flags") and " avx2" in line for line in f)
    except OSError:
        return False


@needs_native
@pytest.mark.skipif(not _cpu_has_avx2(), reason="this CPU has no AVX2: both runs would take the SSE2 kernels")
def test_avx2_and_sse2_kernels_agree(photo_tree):
    photos = sorted((photo_tree / "train").rglob("*.jpg"))[::17][:6]
    rng = np.random.default_rng(3)
    try:
        for path in photos:
            data = path.read_bytes()
            info = read_info(data)
            for _ in range(4):
                h, w = int(rng.integers(20, info.height)), int(rng.integers(20, info.width))
                box = (float(rng.uniform(0, info.height - h)), float(rng.uniform(0, info.width - w)), h, w)
                size, flip = (int(rng.integers(1, 300)), int(rng.integers(1, 300))), bool(rng.integers(2))
                outs = []
                for avx2 in (True, False):
                    cd._set_avx2(avx2)
                    outs.append(native.decode_resized(data, info, box, size, snap=False, flip=flip))
                assert outs[0] is not None and outs[1] is not None, f"the decoder declined {path.name}"
                assert np.array_equal(outs[0], outs[1]), (path.name, box, size)
    finally:
        cd._set_avx2(True)


@needs_native
def test_the_gil_is_released_while_decoding():
    # The call holds an export of its data's buffer from argument parsing to its end, both under the GIL,
    # and a bytearray cannot be resized while exported. So this thread can find it exported only by running
    # while the decoder runs: never if the GIL were held (as a C call that holds it, e.g. binascii, shows).
    data = bytearray(jpeg(photo(3000, 4000), quality=95))
    info = read_info(bytes(data))
    out = np.empty((224, 224, 3), np.uint8)
    args = (out, 1, (0, 0, info.height, info.width), (0.0, 0.0, float(info.height), float(info.width)), 1, False, 0)
    done = threading.Event()
    results = []
    seen = 0

    def work():
        try:
            for _ in range(3):
                results.append(cd.decode_resized(data, *args))
        finally:
            done.set()

    thread = threading.Thread(target=work)
    thread.start()
    while not done.is_set():
        try:
            data.extend(b"\0")  # a byte after the EOI: libjpeg stops reading before it
        except BufferError:
            seen += 1
            continue
        while True:
            try:
                del data[-1]
                break
            except BufferError:  # the decoder started between the two
                seen += 1
    thread.join()
    assert results == [None, None, None]  # None: decoded
    assert seen > 0, "this thread never ran while the decoder held the data: the GIL is not released"
