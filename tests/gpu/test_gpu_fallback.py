"""decode='cuda' on a machine without CUDA: the same batch code on the CPU,
checked against the CPU transforms path (decode='cpu') for the same seed."""

from __future__ import annotations

import warnings

import pytest
import torch

from fastdata import Prefetch, Workers, make_loader
from fastdata.transforms import RandomHorizontalFlip, RandomResizedCrop

from ._photos import hymenoptera  # noqa: F401 - the fixture
from ._photos import TOLERANCE_MEAN, eval_transform, photos, train_transform

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU fallback runs where CUDA is not")


def _gpu_loader(dataset, batch, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return make_loader(dataset, batch, decode="cuda", **options)


@pytest.fixture
def draws(monkeypatch):
    """Every box and flip the transforms draw, in order."""
    seen: list[tuple] = []
    get_params, draw = RandomResizedCrop.get_params, RandomHorizontalFlip.draw

    def recording_params(self, height, width):
        box = get_params(self, height, width)
        seen.append(("box", tuple(float(v) for v in box)))
        return box

    def recording_draw(self):
        flip = draw(self)
        seen.append(("flip", flip))
        return flip

    monkeypatch.setattr(RandomResizedCrop, "get_params", recording_params)
    monkeypatch.setattr(RandomHorizontalFlip, "draw", recording_draw)
    return seen


def test_one_line_warning_then_the_cpu_runs_the_batch_code(hymenoptera):
    with pytest.warns(RuntimeWarning, match="no CUDA device") as record:
        loader = make_loader(photos(hymenoptera, train_transform()), 8, seed=1, workers=0, decode="cuda")
    assert len(record) == 1 and "\n" not in str(record[0].message)
    with loader:  # closed: the stage's thread, a batch ahead, stops drawing crops for the next test's recorder
        images, targets = next(iter(loader))
    assert images.shape == (8, 3, 64, 64) and images.dtype == torch.uint8 and targets.dtype == torch.int64
    assert type(loader.prefetcher).__name__ == "GPUBatches" and loader.prefetcher.decoder.name == "cpu"


@pytest.mark.parametrize("workers", [Workers(0), Workers(2, kind="threads"), Workers(2, context="fork")],
                         ids=["main", "threads", "processes"])
def test_same_samples_labels_boxes_and_flips_as_the_cpu_path(hymenoptera, draws, workers):
    dataset = photos(hymenoptera, train_transform())
    cpu = [(x, y) for x, y in make_loader(dataset, 8, seed=5, workers=0)]
    cpu_draws = list(draws)
    draws.clear()
    loader = _gpu_loader(dataset, 8, seed=5, workers=workers)
    boxes, flips = [], []
    for (x, y), (cx, cy) in zip(loader, cpu, strict=True):
        assert torch.equal(y, cy)
        diff = (x.int() - cx.int()).abs().float()
        assert diff.mean() <= TOLERANCE_MEAN
        boxes += [tuple(b) for b in loader.prefetcher.last.drawn.tolist()]
        flips += loader.prefetcher.last.flips.tolist()
    assert boxes == [b for kind, b in cpu_draws if kind == "box"]
    assert flips == [f for kind, f in cpu_draws if kind == "flip"]
    if workers.num == 0:  # the planner drew in this process: the same stream, in the same order
        assert draws == cpu_draws


@pytest.mark.parametrize("transform", [train_transform, eval_transform], ids=["train", "eval"])
def test_pixels_within_the_stated_tolerance_of_the_cpu_path(hymenoptera, transform):
    dataset = photos(hymenoptera, transform(96), count=32)
    train = transform is train_transform
    pairs = zip(_gpu_loader(dataset, 16, seed=2, workers=0, train=train), make_loader(dataset, 16, seed=2, workers=0, train=train), strict=True)
    diffs = torch.cat([(x.int() - cx.int()).abs().flatten() for (x, _), (cx, _) in pairs]).float()
    assert diffs.mean() <= TOLERANCE_MEAN
    assert (diffs <= 4).float().mean() >= 0.98  # rounding and filter detail, not shifted crops


def test_normalised_output_is_the_prefetchers_arithmetic(hymenoptera):
    dataset = photos(hymenoptera, eval_transform(), count=8)
    prefetch = Prefetch(device="cpu", mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), dtype=torch.bfloat16,
                        memory_format=torch.channels_last)
    raw = next(iter(_gpu_loader(dataset, 8, seed=0, workers=0, train=False)))[0]
    x, _ = next(iter(_gpu_loader(dataset, 8, seed=0, workers=0, train=False, prefetch=prefetch)))
    assert x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=torch.channels_last)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255
    assert torch.equal(x, ((raw.float() - mean) * (1 / std)).to(torch.bfloat16))


def test_exact_mid_epoch_resume(hymenoptera):
    dataset = photos(hymenoptera, train_transform())
    workers = Workers(2, kind="threads")
    whole = [(x, y) for x, y in _gpu_loader(dataset, 4, seed=9, workers=workers)]
    first = _gpu_loader(dataset, 4, seed=9, workers=workers)
    batches = iter(first)
    head = [next(batches) for _ in range(2)]
    state = first.state_dict()
    first.close()
    resumed = _gpu_loader(dataset, 4, seed=9, workers=workers)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(head) + len(rest) == len(whole)
    for (x, y), (wx, wy) in zip(head + rest, whole, strict=True):
        assert torch.equal(x, wx) and torch.equal(y, wy)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_each_sample_once_per_epoch_across_two_ranks(hymenoptera, train):
    dataset = photos(hymenoptera, eval_transform() if not train else train_transform(), count=22)
    seen = []
    for rank in (0, 1):
        loader = _gpu_loader(dataset, 4, seed=3, workers=0, rank=rank, world_size=2, train=train, drop_last=False)
        for _ in loader:
            seen += loader.prefetcher.last.keys[:, 0].tolist()
    if train:  # padded to equal shares: every sample, plus the padding's repeats
        assert sorted(set(seen)) == list(range(22)) and len(seen) == 22
    else:
        assert sorted(seen) == list(range(22))
