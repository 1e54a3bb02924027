"""Datasets over photos (the real hymenoptera set, else the generated photo tree) for the decode='cuda' tests."""

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
    """The photos these tests run on, an ImageFolder tree ``{train,val}/{ants,bees}/``:
    ``$FASTDATA_PHOTOS`` (the GPU machine's copy of the hymenoptera photos), else the real
    hymenoptera photos of the third-party data (``$FASTDATA_TEST_DATA`` or ``../shared/data``),
    else the generated photo tree (tests/testkit.py: photo-like, so the tolerances hold too)."""
    if os.environ.get("FASTDATA_PHOTOS"):
        return Path(os.environ["FASTDATA_PHOTOS"])
    from testkit import shared_data_path

    shared = shared_data_path()
    if shared is not None and (shared / "photos" / "hymenoptera").is_dir():
        return shared / "photos" / "hymenoptera"
    return request.getfixturevalue("photo_tree")


def photos(root: Path, transform, count: int = 24, **options) -> Subset:
    """``count`` photos of ``root``/train (the hymenoptera folder), both classes, real sizes."""
    folder = ImageFolder(root / "train", transform=transform, **options)
    step = len(folder) // count
    return Subset(folder, list(range(0, step * count, step)))


def folder_with(tmp_path: Path, root: Path, extra: dict[str, Path], count: int = 6) -> Path:
    """A two-class folder of ``count`` photos per class of ``root``/train plus ``extra`` files (name -> source)."""
    folder = tmp_path / "folder"
    for cls in ("ants", "bees"):
        (folder / cls).mkdir(parents=True)
        for src in sorted((root / "train" / cls).glob("*.jpg"))[:count]:
            shutil.copy(src, folder / cls / src.name)
    for name, src in extra.items():
        shutil.copy(src, folder / name)
    return folder
