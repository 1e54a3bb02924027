"""RandomResizedCrop: torchvision's sampling rules, fastdata's randomness."""

from __future__ import annotations

import io
import math
import pickle
import random

import numpy as np
import pytest
import torch
from PIL import Image

from fastdata import rng
from fastdata.transforms import (
    Compose,
    EncodedImage,
    RandomHorizontalFlip,
    RandomResizedCrop,
    sample_resized_crop,
)

SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)


class Scripted:
    """A generator stand-in replaying fixed draws and recording the calls."""

    def __init__(self, uniforms, integers=()):
        self.uniforms, self.integers_ = list(uniforms), list(integers)
        self.calls: list[str] = []

    def uniform(self, lo, hi):
        self.calls.append("uniform")
        u = self.uniforms.pop(0)
        return lo + u * (hi - lo)

    def integers(self, lo, hi):
        self.calls.append("integers")
        return lo + self.integers_.pop(0) % (hi - lo)


def test_first_fitting_try_is_taken_like_torchvision():
    # area fraction 0.08 + 0.5 * 0.92 = 0.54, log-ratio midpoint -> ratio 1.
    gen = Scripted([0.5, 0.5], [7, 11])
    box = sample_resized_crop(300, 400, SCALE, RATIO, gen)
    side = round(math.sqrt(300 * 400 * 0.54))
    assert box == (7, 11, side, side)
    assert gen.calls == ["uniform", "uniform", "integers", "integers"]


def test_fallback_after_ten_misses():
    # Every try asks for the whole area at the tallest ratio: too tall for 300x400.
    gen = Scripted([1.0, 0.0] * 10)
    box = sample_resized_crop(300, 400, SCALE, RATIO, gen)
    assert gen.calls == ["uniform"] * 20  # ten tries, no position drawn
    assert box == (0, 0, 300, 400)  # in-range aspect: the whole image


@pytest.mark.parametrize(
    ("h", "w", "box"),
    [
        (10, 1000, (0, (1000 - 13) // 2, 10, 13)),  # too wide: clamp to 4/3
        (1000, 10, ((1000 - 13) // 2, 0, 13, 10)),  # too tall: clamp to 3/4
        (1, 1, (0, 0, 1, 1)),
    ],
)
def test_fallback_for_extreme_shapes(h, w, box):
    gen = np.random.default_rng(0)
    assert sample_resized_crop(h, w, (0.9, 1.0), RATIO, gen) == box


def test_sampled_boxes_obey_the_bounds():
    # Scripted draws that never fit (twice the image area) give the fallback
    # box; every other box must obey the sampling bounds.
    gen = np.random.default_rng(123)
    ratios, areas = [], []
    for _ in range(3000):
        h_img, w_img = (int(v) for v in gen.integers(20, 1200, size=2))
        t, l, h, w = sample_resized_crop(h_img, w_img, SCALE, RATIO, gen)
        assert 0 <= t and 0 <= l and 1 <= h and 1 <= w and t + h <= h_img and l + w <= w_img
        if (t, l, h, w) != sample_resized_crop(h_img, w_img, SCALE, RATIO, Scripted([2.0, 0.5] * 10)):
            # Rounding each side moves the ratio and area a little at small sizes.
            tol = 1.0 / min(h, w)
            assert RATIO[0] * (1 - 2 * tol) <= w / h <= RATIO[1] * (1 + 2 * tol)
            assert SCALE[0] * (1 - 3 * tol) <= h * w / (h_img * w_img) <= 1.0
            ratios.append(math.log(w / h))
            areas.append(h * w / (h_img * w_img))
    # Both the distribution's ends are reached, and log-ratio is spread evenly.
    assert min(areas) < 0.1 and max(areas) > 0.95
    hist, _ = np.histogram(ratios, bins=4, range=(math.log(RATIO[0]), math.log(RATIO[1])))
    assert hist.min() > 0.15 * len(ratios)


def jpeg(h=240, w=320, seed=0) -> bytes:
    y, x = np.mgrid[0:h, 0:w]
    arr = np.stack([x * 255 // w, y * 255 // h, (x * y) % 251], axis=2).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "JPEG", quality=92)
    return buf.getvalue()


def test_same_seed_same_output_and_different_samples_differ():
    data = EncodedImage(jpeg(), "x.jpg")
    t = Compose([RandomResizedCrop(64), RandomHorizontalFlip()])
    with rng.use(rng.sample_generator(1, 0, 5)):
        first = t(data)
    with rng.use(rng.sample_generator(1, 0, 5)):
        again = t(data)
    assert np.array_equal(first, again)
    crops = []
    for index in range(8):
        with rng.use(rng.sample_generator(1, 0, index)):
            crops.append(RandomResizedCrop(64).get_params(240, 320))
    assert len(set(crops)) == 8


def test_explicit_generator_and_process_generator():
    t = RandomResizedCrop(32, generator=np.random.default_rng(9))
    u = RandomResizedCrop(32, generator=np.random.default_rng(9))
    assert [t.get_params(100, 100) for _ in range(5)] == [u.get_params(100, 100) for _ in range(5)]
    rng.set_generator(np.random.default_rng(4))
    first = RandomResizedCrop(32).get_params(100, 100)
    rng.set_generator(np.random.default_rng(4))
    assert RandomResizedCrop(32).get_params(100, 100) == first


def test_global_random_states_are_untouched():
    states = (np.random.get_state()[1].copy(), random.getstate(), torch.get_rng_state().clone())
    t = Compose([RandomResizedCrop(48), RandomHorizontalFlip()])
    for _ in range(20):
        t(EncodedImage(jpeg(), "x"))
    np_state, py_state, torch_state = states
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert random.getstate() == py_state
    assert torch.equal(torch.get_rng_state(), torch_state)


@pytest.mark.parametrize("size", [224, (100, 150)])
def test_output_shapes_and_types(size):
    data = EncodedImage(jpeg(), "x.jpg")
    hw = (size, size) if isinstance(size, int) else size
    out = RandomResizedCrop(size)(data)
    assert out.shape == (*hw, 3) and out.dtype == np.uint8 and out.flags.c_contiguous
    ten = RandomResizedCrop(size, output="tensor")(data)
    assert isinstance(ten, torch.Tensor) and ten.dtype == torch.uint8 and ten.shape == (3, *hw)
    assert ten.is_contiguous()


def test_flip_probability_and_pickle():
    data = EncodedImage(jpeg(), "x.jpg")
    flipped = RandomHorizontalFlip(p=1.0)(data)
    kept = RandomHorizontalFlip(p=0.0)(data)
    assert np.array_equal(flipped, kept[:, ::-1])
    t = Compose([RandomResizedCrop(40, generator=np.random.default_rng(3)), RandomHorizontalFlip(generator=np.random.default_rng(4))])
    clone = pickle.loads(pickle.dumps(t))
    assert np.array_equal(t(data), clone(data))
    assert t.decode_aware and clone.decode_aware


def test_invalid_arguments():
    with pytest.raises(ValueError):
        RandomResizedCrop(224, scale=(1.0, 0.5))
    with pytest.raises(ValueError):
        RandomResizedCrop(0)
    with pytest.raises(ValueError):
        RandomResizedCrop(224, output="pil")
    with pytest.raises(ValueError):
        RandomHorizontalFlip(p=2)
    with pytest.raises(TypeError, match="EncodedImage"):
        RandomResizedCrop(8)(b"raw bytes")
    with pytest.raises(TypeError, match="uint8"):
        RandomResizedCrop(8)(np.zeros((10, 10, 3), np.float32))
