"""fast_collate: one uint8 copy per sample into an NCHW (or channels_last) batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from fastdata import ConfigError, fast_collate
from fastdata.loading.collate import FastCollate


def _hwc(i: int, h: int = 5, w: int = 7, c: int = 3) -> np.ndarray:
    return (np.arange(h * w * c, dtype=np.int64).reshape(h, w, c) * 7 + i * 31).astype(np.uint8)


def _expected(arrays: list[np.ndarray]) -> torch.Tensor:
    return torch.stack([torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1) for a in arrays])


@pytest.mark.parametrize("kind", ["numpy", "tensor", "pil", "flipped"])
@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_each_input_kind_gives_exact_uint8_nchw(kind, memory_format):
    arrays = [_hwc(i) for i in range(4)]
    if kind == "numpy":
        images = arrays
    elif kind == "tensor":
        images = [torch.from_numpy(a).permute(2, 0, 1).contiguous() for a in arrays]
    elif kind == "pil":
        images = [Image.fromarray(a) for a in arrays]
    else:  # a horizontally flipped view: negative strides torch.from_numpy refuses
        images = [a[:, ::-1] for a in arrays]
        arrays = [a[:, ::-1] for a in arrays]
    out, targets = FastCollate(memory_format=memory_format)(list(zip(images, range(4))))
    assert out.dtype == torch.uint8 and out.shape == (4, 3, 5, 7)
    assert out.is_contiguous(memory_format=memory_format)
    assert torch.equal(out, _expected(arrays))
    assert targets.dtype == torch.int64 and targets.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_grayscale_forms_broadcast_to_three_channels(memory_format):
    gray = [_hwc(i, c=1)[:, :, 0] for i in range(4)]
    images = [
        gray[0],  # HW numpy
        gray[1][:, :, None],  # HW1 numpy
        torch.from_numpy(gray[2])[None],  # 1HW tensor
        Image.fromarray(gray[3]),
    ]
    out, _ = FastCollate(memory_format=memory_format)([(im, 0) for im in images])
    assert out.shape == (4, 3, 5, 7)
    for i, g in enumerate(gray):
        for c in range(3):
            assert torch.equal(out[i, c], torch.from_numpy(g))


def test_mixed_gray_and_rgb_and_palette_pil():
    rgb = _hwc(0)
    palette = Image.fromarray(rgb).convert("P")
    out, _ = fast_collate([(rgb, 0), (rgb[:, :, 0], 1), (palette, 2)])
    assert out.shape == (3, 3, 5, 7)
    assert torch.equal(out[2], torch.from_numpy(np.array(palette.convert("RGB"))).permute(2, 0, 1))


def test_mismatched_sizes_name_sizes_and_positions():
    batch = [(_hwc(0), 0), (_hwc(1), 1), (_hwc(2, h=6), 2), (_hwc(3), 3)]
    with pytest.raises(ConfigError) as info:
        fast_collate(batch)
    message = str(info.value)
    assert "3x5x7" in message and "3x6x7" in message
    assert "sample 0, 1, 3" in message and "sample 2" in message


@pytest.mark.parametrize(
    "batch, fragment",
    [
        ([], "empty"),
        ([(np.zeros((2, 2, 3), np.float32), 0)], "float32"),
        ([(np.zeros((2, 2, 3), np.uint8),)], "pair"),
        ([("not an image", 0)], "str"),
        ([(np.zeros((2, 2, 3, 1), np.uint8), 0)], "shape"),
    ],
)
def test_bad_batches_raise_config_error(batch, fragment):
    with pytest.raises(ConfigError, match=fragment):
        fast_collate(batch)


def test_target_dtypes():
    img = _hwc(0)
    ints = fast_collate([(img, np.int32(3)), (img, torch.tensor(4)), (img, 5)])[1]
    assert ints.dtype == torch.int64 and ints.tolist() == [3, 4, 5]
    floats = fast_collate([(img, 0.5), (img, 1.5)])[1]
    assert floats.dtype == torch.float32 and floats.tolist() == [0.5, 1.5]
    vectors = fast_collate([(img, np.array([1, 0, 1])), (img, torch.tensor([0.0, 1.0, 0.5]))])[1]
    assert vectors.dtype == torch.float32 and vectors.shape == (2, 3)
    assert vectors.tolist() == [[1, 0, 1], [0, 1, 0.5]]
    with pytest.raises(ConfigError, match="share a shape"):
        fast_collate([(img, [1.0, 2.0]), (img, [1.0])])


def _collate_and_report(batch):
    images, targets = fast_collate(batch)
    return images, targets, images.is_shared()


def test_in_a_worker_the_batch_is_allocated_in_shared_memory():
    data = [(_hwc(i), i) for i in range(4)]
    loader = DataLoader(data, batch_size=2, num_workers=1, collate_fn=_collate_and_report, multiprocessing_context="fork")
    batches = list(loader)
    assert [shared for _, _, shared in batches] == [True, True]
    assert torch.equal(torch.cat([b[0] for b in batches]), _expected([a for a, _ in data]))
    # in the main process nothing is shared
    assert not fast_collate(data)[0].is_shared()


def test_pinning_without_cuda_falls_back_to_pageable():
    out, _ = FastCollate(pin_memory=True)([(_hwc(0), 0)])
    assert out.is_pinned() == torch.cuda.is_available()
