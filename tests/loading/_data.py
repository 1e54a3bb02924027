"""Tiny datasets whose pixels encode the sample index and the random draws
made while loading it, so batches can be checked exactly (FFCV's trick):
a map-style one, and records for streams read through :class:`StreamPixels`."""

from __future__ import annotations

import random

import numpy as np
import torch
from torch.utils.data import Dataset

from fastdata import rng
from fastdata.formats import Sample
from fastdata.formats.dataset_writer import write_dataset

SIZE = 6


def pixels(i: int, *, size: int = SIZE, global_draws: bool = True) -> np.ndarray:
    """Sample i's HWC uint8 image: row 0 holds i, row 1 a draw from
    fastdata.rng.generator() (the augmentation), row 2 draws from the global
    random/NumPy/torch streams (zeros without ``global_draws``)."""
    img = np.zeros((size, size, 3), np.uint8)
    img[0, 0, :2] = (i % 256, i // 256)
    img[1, :4, 0] = rng.generator().integers(0, 256, 4)
    if global_draws:
        img[2, 0, 0] = random.randrange(256)
        img[2, 1, 0] = np.random.randint(256)
        img[2, 2, 0] = int(torch.randint(256, ()))
    return img


class IndexImages(Dataset):
    """Sample i: an HWC uint8 image; row 0 holds i, row 1 a draw from
    fastdata.rng.generator() (the augmentation), row 2 draws from the global
    random/NumPy/torch streams. Target: i."""

    def __init__(self, n: int, *, size: int = SIZE, kind: str = "numpy") -> None:
        self.n, self.size, self.kind = n, size, kind

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):
        with rng.sample_scope(key) as i:
            if not 0 <= i < self.n:
                raise IndexError(i)
            img = pixels(i, size=self.size)
        if self.kind == "tensor":
            return torch.from_numpy(img).permute(2, 0, 1).contiguous(), i
        return img, i


class StreamPixels:
    """Decode-aware transform for the records :func:`write_records` stores:
    sample i's :func:`pixels`, from the record's bytes (no image decoding)."""

    decode_aware = True

    def __init__(self, *, global_draws: bool = False) -> None:
        self.global_draws = global_draws

    def __call__(self, encoded) -> np.ndarray:
        return pixels(int(encoded.data[len(b"record"):]), global_draws=self.global_draws)


def write_records(root, n: int, fmt: str = "recordio"):
    """A converted dataset of ``n`` records in shards of about five; record i
    is ``b"record<i>"`` with target i."""
    items = [Sample(image=b"record%d" % i, label=i, id=i) for i in range(n)]
    write_dataset(root, fmt, items, [str(i) for i in range(n)], shard_bytes=30)
    return root


def indices(images: torch.Tensor) -> list[int]:
    """Decode the sample indices of a uint8 NCHW batch."""
    return (images[:, 0, 0, 0].long() + 256 * images[:, 1, 0, 0].long()).tolist()


def augmentation(images: torch.Tensor) -> list[tuple[int, ...]]:
    """The fastdata.rng draws recorded in each image of a batch."""
    return [tuple(row) for row in images[:, 0, 1, :4].tolist()]


def global_draws(images: torch.Tensor) -> list[tuple[int, ...]]:
    """The random/NumPy/torch global draws recorded in each image."""
    return [tuple(row) for row in images[:, 0, 2, :3].tolist()]
