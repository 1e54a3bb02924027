"""Datasets over the shared photos for the decode='cuda' tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from torch.utils.data import Subset

from fastdata import transforms
from fastdata.datasets import ImageFolder

TOLERANCE_MEAN = 1.0
"""Largest mean |diff| (grey levels) per batch between decode='cuda' and the
CPU transforms path: the GPU path resamples the full-size decode with the
same filter, the CPU path a DCT-scaled one. Measured over 48 hymenoptera
photos (``/tmp``-free: ``python benchmarks/gpu_resize_candidates.py``):
RandomResizedCrop+flip mean 0.36 (96 px), 0.16 (224 px); Resize+CenterCrop
0.61 (96 px), 0.15 (224 px); at least 98 % of pixels within 4 levels."""


def train_transform(size: int = 64) -> transforms.Compose:
    return transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip()])


def eval_transform(size: int = 64) -> transforms.Compose:
    return transforms.Compose([transforms.Resize(size + size // 7), transforms.CenterCrop(size)])


@pytest.fixture(scope="session")
def hymenoptera(request: pytest.FixtureRequest) -> Path:
    """The hymenoptera photos: ``$FASTDATA_PHOTOS`` (the GPU machine's copy) or ``../shared/data``'s."""
    if os.environ.get("FASTDATA_PHOTOS"):
        return Path(os.environ["FASTDATA_PHOTOS"])
    return request.getfixturevalue("shared_data") / "photos" / "hymenoptera"


def photos(root: Path, transform, count: int = 24, **options) -> Subset:
    """``count`` photos of ``root``/train (the hymenoptera folder), both classes, real sizes."""
    folder = ImageFolder(root / "train", transform=transform, **options)
    step = len(folder) // count
    return Subset(folder, list(range(0, step * count, step)))


def folder_with(tmp_path: Path, shared_data: Path, extra: dict[str, Path], count: int = 6) -> Path:
    """A two-class folder of ``count`` photos per class plus ``extra`` files (name -> source)."""
    root = tmp_path / "folder"
    for cls in ("ants", "bees"):
        (root / cls).mkdir(parents=True)
        for src in sorted((shared_data / "photos" / "hymenoptera" / "train" / cls).glob("*.jpg"))[:count]:
            shutil.copy(src, root / cls / src.name)
    for name, src in extra.items():
        shutil.copy(src, root / name)
    return root
