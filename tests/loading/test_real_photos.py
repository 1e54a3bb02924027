"""The whole path on real photos (../shared/data) and on the generated photo tree
(tests/testkit.py): fastdata's ImageFolder and transforms through make_loader give
the same batches whatever num_workers."""

from __future__ import annotations

import torch
import pytest
from torch.utils.data import Subset

from fastdata import Workers, make_loader, transforms
from fastdata.datasets import ImageFolder


def _photos(root, count: int = 12):
    transform = transforms.Compose([transforms.RandomResizedCrop(48), transforms.RandomHorizontalFlip()])
    folder = ImageFolder(root / "train", transform=transform)
    step = len(folder) // count
    return Subset(folder, list(range(0, step * count, step)))  # both classes, real sizes


@pytest.mark.parametrize("source", ["real", "generated"])
def test_photos_same_batches_for_0_and_2_workers_and_2_threads(request, source):
    root = (request.getfixturevalue("shared_data") / "photos" / "hymenoptera" if source == "real"
            else request.getfixturevalue("photo_tree"))
    runs = []
    for workers in (Workers(0), Workers(2, context="fork"), Workers(2, kind="threads")):
        with make_loader(_photos(root), 4, seed=1, workers=workers) as loader:
            runs.append([[(x, y) for x, y in loader] for _ in range(2)])
    for epoch in range(2):
        for run in runs[1:]:
            for (x0, y0), (x2, y2) in zip(runs[0][epoch], run[epoch], strict=True):
                assert x0.shape == (4, 3, 48, 48) and x0.dtype == torch.uint8
                assert torch.equal(x0, x2) and torch.equal(y0, y2)
    assert {y for batch in runs[0][0] for y in batch[1].tolist()} == {0, 1}
    # a new epoch: new order and new crops
    assert not all(torch.equal(a[0], b[0]) for a, b in zip(runs[0][0], runs[0][1], strict=True))
