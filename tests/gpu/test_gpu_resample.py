"""The batched crop/resize/flip against per-image references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastdata.gpu.resample import GROUP_WASTE, chunks, crop_resize, pack, padding, window
from PIL import Image


def _images(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    sizes = [(37, 53), (64, 41), (29, 29), (80, 120)]
    return [torch.randint(0, 256, (3, h, w), generator=gen, dtype=torch.uint8) for h, w in sizes]


def _run(images, boxes, flips, out, layout="chw", groups=None):
    sizes = torch.tensor([im.shape[1:] for im in images], dtype=torch.int64)
    boxes = torch.tensor(boxes, dtype=torch.float64)
    windows = torch.from_numpy(window(boxes.numpy(), sizes.numpy(), out))
    data = [im if layout == "chw" else im.permute(1, 2, 0).contiguous() for im in images]
    cols = int(windows[:, 3].max())
    flat = pack(data, 3 * cols)
    offsets = torch.zeros(len(images), dtype=torch.int64)
    offsets[1:] = torch.cumsum(torch.tensor([im.numel() for im in images]), 0)[:-1]
    result = torch.empty(len(images), 3, *out)
    for group in groups or [np.arange(len(images))]:
        g = torch.as_tensor(group)
        rows, cols = int(windows[g, 2].max()), int(windows[g, 3].max())
        result[g] = crop_resize(flat, offsets[g], sizes[g], boxes[g], windows[g], torch.tensor(flips)[g], out, rows,
                                cols, layout)
    return result


def test_a_whole_image_at_its_own_size_is_unchanged():
    images = _images()
    out = _run(images[2:3], [(0, 0, 29, 29)], [False], (29, 29))
    assert torch.equal(out[0].to(torch.uint8), images[2])
    flipped = _run(images[2:3], [(0, 0, 29, 29)], [True], (29, 29))
    assert torch.equal(flipped[0].to(torch.uint8), images[2].flip(2))


def _pillow(image: torch.Tensor, size: tuple[int, int], box) -> np.ndarray:
    t, l, h, w = box
    pil = Image.fromarray(image.permute(1, 2, 0).numpy())
    return np.asarray(pil.resize((size[1], size[0]), Image.BILINEAR, box=(l, t, l + w, t + h)))


def test_each_sample_matches_pillows_antialiased_resize_of_its_box():
    images = _images(1)
    boxes = [(3.0, 5.0, 30.0, 40.0), (10.5, 2.25, 50.0, 30.5), (0.0, 0.0, 29.0, 29.0), (20.0, 30.0, 60.0, 80.0)]
    out = _run(images, boxes, [False, True, False, True], (16, 24))
    for i, (image, box) in enumerate(zip(images, boxes)):
        expected = _pillow(image, (16, 24), box)
        if i % 2:
            expected = expected[:, ::-1]
        diff = np.abs(out[i].permute(1, 2, 0).numpy() - expected.astype(np.float32))
        assert diff.mean() < 0.5 and diff.max() <= 1  # Pillow rounds between its two passes


def test_layouts_and_chunking_give_the_same_batch():
    images = _images(2)
    boxes = [(1.0, 2.0, 30.0, 45.0), (0.0, 0.0, 64.0, 41.0), (4.0, 4.0, 20.0, 20.0), (0.0, 10.0, 80.0, 100.0)]
    flips = [True, False, True, False]
    chw = _run(images, boxes, flips, (20, 20))
    assert torch.equal(chw, _run(images, boxes, flips, (20, 20), layout="hwc"))
    sizes = np.array([im.shape[1:] for im in images])
    groups = chunks(window(np.array(boxes), sizes, (20, 20)), budget=3 * 90 * 110)
    assert len(groups) > 1 and sorted(np.concatenate(groups).tolist()) == [0, 1, 2, 3]
    assert torch.equal(chw, _run(images, boxes, flips, (20, 20), groups=groups))


@pytest.mark.parametrize("budget", [1, 10**9])
def test_chunks_cover_every_sample_once(budget):
    windows = np.array([[0, 0, r, c] for r, c in [(10, 10), (500, 400), (20, 30), (1000, 3000), (5, 5)]])
    groups = chunks(windows, budget, waste=1.3)
    assert sorted(np.concatenate(groups).tolist()) == list(range(5))
    assert len(groups) == 5  # budget 1 splits everything; 10**9 fits all, but no two pad within 1.3x
    same = np.array([[0, 0, 300, 200]] * 7 + [[0, 0, 290, 195]] * 3)
    assert [len(g) for g in chunks(same, 10**9)] == [10]  # near-equal windows: one group, 1.04x padded


def test_groups_pad_at_most_the_stated_waste_over_random_crops():
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(40, 500, 256), rng.integers(40, 500, 256)
    windows = np.stack([np.zeros(256), np.zeros(256), rows, cols], axis=1).astype(np.int64)
    one = [np.arange(256)]
    assert padding(windows, one) > 2.0  # padding every crop to the largest: the waste this avoids
    for waste in (1.3, GROUP_WASTE):
        groups = chunks(windows, 1 << 28, waste=waste)
        assert padding(windows, groups) <= waste
        for g in groups:  # each group on its own, too
            assert len(g) * windows[g, 2].max() * windows[g, 3].max() <= waste * (windows[g, 2] * windows[g, 3]).sum()
    assert len(chunks(windows, 1 << 28)) < len(chunks(windows, 1 << 28, waste=1.3))  # the default: fewer launches
