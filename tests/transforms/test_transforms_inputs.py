"""Same results from EncodedImage, ndarray and PIL input; resize quality
against Pillow (torchvision's antialiased bilinear); the fused eval path.

Tolerances, as mean |difference| per 224x224 output in grey levels:
* RandomResizedCrop vs Pillow ``BILINEAR`` of the same full-size box: <= 3.5
  per photo and <= 1.2 over the set (OpenCV box/bilinear filters are slightly
  sharper than Pillow's triangle; seen on all 397 hymenoptera photos: 0.53
  mean, 2.5 worst).
* Eval ``Resize(256) + CenterCrop(224)`` vs Pillow's two steps: <= 2 per
  photo (exact sub-pixel geometry; seen: 0.02 mean, 1.6 worst).

The tests run on the generated photo-like JPEGs (tests/testkit.py), so they
need no third-party file; the tolerances were set on the real photos.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import decode
from fastdata.transforms import (
    CenterCrop,
    Compose,
    EncodedImage,
    RandomResizedCrop,
    Resize,
    ResizedCenterCrop,
    resize,
    resized_size,
    sample_resized_crop,
)
from fastdata.transforms import resampling as resize_mod

RRC_PHOTO_TOL, RRC_SET_TOL, EVAL_TOL = 3.5, 1.2, 2.0


class FixedCrop(RandomResizedCrop):
    """RandomResizedCrop with a chosen box, to compare input kinds and references."""

    def __init__(self, size, box, **kw):
        super().__init__(size, **kw)
        self.box = box

    def get_params(self, height, width):
        return self.box


def mad(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


@pytest.fixture(scope="module")
def photos(photo_tree):
    """Photo-like JPEGs of the generated tree (tests/testkit.py): sizes, subsampling, gray, ICC."""
    paths = sorted((photo_tree / "train").rglob("*.jp*g"))[::6]
    paths += sorted((photo_tree / "val").rglob("*.jp*g"), key=lambda p: -p.stat().st_size)[:2]
    return [(p, p.read_bytes()) for p in paths]


@pytest.fixture(params=["cv2", "pil"])
def resize_backend(request, monkeypatch):
    if request.param == "cv2":
        pytest.importorskip("cv2")
    else:
        monkeypatch.setattr(resize_mod, "_cv2", [None])  # as without OpenCV
    return request.param


def pillow_box(img: Image.Image, box, size=(224, 224)) -> np.ndarray:
    t, l, h, w = box
    return np.asarray(img.resize(size[::-1], Image.Resampling.BILINEAR, box=(l, t, l + w, t + h)))


def test_rrc_matches_pillow_on_photos(photos, resize_backend):
    gen = np.random.default_rng(5)
    errors = []
    for path, data in photos:
        img = Image.open(io.BytesIO(data)).convert("RGB")
        box = sample_resized_crop(img.height, img.width, (0.08, 1.0), (3 / 4, 4 / 3), gen)
        out = FixedCrop(224, box)(EncodedImage(data, str(path)))
        errors.append(mad(out, pillow_box(img, box)))
        assert errors[-1] <= RRC_PHOTO_TOL, (path.name, box, errors[-1])
    assert np.mean(errors) <= RRC_SET_TOL


def test_inputs_give_the_same_result(photos, crop_decoder, monkeypatch):
    if crop_decoder == "compiled":
        # Its resize is Pillow's filter: compare with arrays resized by Pillow
        # (OpenCV's box filter differs by up to 2.2 at a 5x reduction).
        monkeypatch.setattr(resize_mod, "_cv2", [None])
    for path, data in photos[:8]:
        arr = decode(data)
        pil = Image.fromarray(arr)
        h, w = arr.shape[:2]
        for box in [(0, 0, h, w), (h // 5, w // 7, h // 2, w // 3)]:
            t = FixedCrop((96, 128), box)
            from_encoded, from_array, from_pil = t(EncodedImage(data, str(path))), t(arr), t(pil)
            assert np.array_equal(from_array, from_pil)
            # Encoded input may decode at a DCT scale: equal up to resampling.
            assert mad(from_encoded, from_array) <= 2.0, (path.name, box)
        eval_t = ResizedCenterCrop(256, 224)
        assert mad(eval_t(EncodedImage(data)), eval_t(arr)) <= 2.0
        assert np.array_equal(eval_t(arr), eval_t(pil))


def test_outputs_are_writable_even_from_pil_input():
    img = Image.new("RGB", (40, 30), (1, 2, 3))
    out = RandomResizedCrop(16)(img)
    assert out.flags.writeable and out.flags.c_contiguous and (out == (1, 2, 3)).all()
    assert CenterCrop(30)(img).flags.writeable


def test_gray_and_single_channel_arrays():
    gray = np.tile(np.arange(64, dtype=np.uint8), (48, 1))
    out = CenterCrop(32)(gray)
    assert out.shape == (32, 32, 3) and np.array_equal(out[..., 0], out[..., 2])
    assert np.array_equal(CenterCrop(32)(gray[:, :, None]), out)


def reference_eval(img: Image.Image, resize_size=256, crop=224) -> np.ndarray:
    h2, w2 = resized_size(img.height, img.width, resize_size)
    small = img.resize((w2, h2), Image.Resampling.BILINEAR)
    top, left = round((h2 - crop) / 2.0), round((w2 - crop) / 2.0)
    return np.asarray(small.crop((left, top, left + crop, top + crop)))


def test_eval_fused_matches_two_step_pillow(photos):
    t = Compose([Resize(256), CenterCrop(224)])
    assert [type(s) for s in t.steps] == [ResizedCenterCrop] and t.decode_aware
    for path, data in photos:
        out = t(EncodedImage(data, str(path)))
        assert out.shape == (224, 224, 3)
        assert mad(out, reference_eval(Image.open(io.BytesIO(data)).convert("RGB"))) <= EVAL_TOL, path.name


def test_unfused_steps_agree_with_fused(photos):
    path, data = photos[0]
    two_steps = CenterCrop(224)(Resize(256)(EncodedImage(data, str(path))))
    assert mad(two_steps, ResizedCenterCrop(256, 224)(EncodedImage(data))) <= 2.0


def test_resize_shorter_side_sizes():
    assert resized_size(375, 500, 256) == (256, 341)
    assert resized_size(500, 375, 256) == (341, 256)
    assert resized_size(300, 300, 256) == (256, 256)
    assert resized_size(375, 500, (100, 50)) == (100, 50)
    arr = np.zeros((375, 500, 3), np.uint8)
    assert Resize(256)(arr).shape == (256, 341, 3)


def test_center_crop_pads_like_torchvision():
    arr = np.full((50, 100, 3), 7, np.uint8)
    out = CenterCrop((81, 60))(arr)
    # torchvision pads 31 rows: 15 on top, 16 below; width crops at round(20.0).
    assert out.shape == (81, 60, 3)
    assert (out[:15] == 0).all() and (out[15:65] == 7).all() and (out[65:] == 0).all()
    fused = ResizedCenterCrop(64, 100)(arr)  # 64x128 after resizing: pad 18 rows each side
    assert fused.shape == (100, 100, 3)
    assert (fused[:18] == 0).all() and (fused[18:82] == 7).all() and (fused[82:] == 0).all()


def test_resize_backends_agree(photos, resize_backend):
    _path, data = photos[1]
    arr = decode(data)
    for size in [(224, 224), (arr.shape[0] * 2, arr.shape[1] + 3), (50, arr.shape[1] * 2)]:
        out = resize(arr, size)
        ref = np.asarray(Image.fromarray(arr).resize(size[::-1], Image.Resampling.BILINEAR))
        assert out.shape == (*size, 3) and mad(out, ref) <= 2.0, size


def test_fractional_box_resize_is_exact():
    arr = np.random.default_rng(0).integers(0, 255, (60, 80, 3), dtype=np.uint8)
    out = resize(arr, (20, 30), box=(5.5, 10.25, 40.0, 60.5))
    ref = Image.fromarray(arr).resize((30, 20), Image.Resampling.BILINEAR, box=(10.25, 5.5, 70.75, 45.5))
    assert np.array_equal(out, np.asarray(ref))


def test_matches_torchvision_when_installed(photos):
    tv = pytest.importorskip("torchvision.transforms.v2.functional")
    import torch

    _path, data = photos[2]
    arr = decode(data)
    box = (arr.shape[0] // 6, arr.shape[1] // 5, arr.shape[0] // 2, arr.shape[1] // 2)
    chw = torch.from_numpy(arr).permute(2, 0, 1)
    ref = tv.resized_crop(chw, *box, size=[224, 224], antialias=True).permute(1, 2, 0).numpy()
    assert mad(FixedCrop(224, box)(EncodedImage(data)), ref) <= RRC_PHOTO_TOL


def test_compose_with_plain_callables():
    arr = np.random.default_rng(0).integers(0, 255, (40, 60, 3), dtype=np.uint8)
    t = Compose([CenterCrop(20), lambda a: a + 1], output="tensor")
    out = t(arr)
    assert tuple(out.shape) == (3, 20, 20)
    assert np.array_equal(out.permute(1, 2, 0).numpy(), arr[10:30, 20:40] + 1)
    assert not Compose([lambda a: a, CenterCrop(20)]).decode_aware
