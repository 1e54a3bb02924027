"""One list of CropPlans, three executors: the per-sample decode (Source.execute),
the loader threads' batch call (decode_batch) and the GPU executor (its CPU
twin here) produce the pixels each plan asks for; and for one seed the three
worker set-ups give the same batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from fastdata import Workers, make_loader, open_dataset, transforms
from fastdata.decode import EncodedImage, native, read_info
from fastdata.decode.batch import batch_request, decode_batch
from fastdata.decode.plan import CropPlan
from fastdata.formats import Sample
from fastdata.formats.dataset_writer import write_dataset
from fastdata.gpu import CPUDecoder, EncodedCollate, GPUBatches, GPUSample
from fastdata.gpu.samples import _snapped
from fastdata.transforms.base import Source, dct_min_size

pytestmark = pytest.mark.skipif(not native.native_available(), reason="compiled crop decoder not built")

GPU_TOLERANCE_MEAN = 1.0  # grey levels: the GPU resamples the full-size decode, the CPU a DCT-scaled one (tests/gpu/_photos.py)
SIZE = (48, 40)


def _photos(photo_tree: Path, count: int = 10) -> list[bytes]:
    return [p.read_bytes() for p in sorted((photo_tree / "train").rglob("*.jpg"))[:count]]


def _plans(images: list[bytes]) -> list[CropPlan]:
    """A fixed list of plans of every kind: random crops flipped or not, exact boxes, a whole-image resize."""
    rnd = np.random.default_rng(7)
    plans = []
    for i, data in enumerate(images):
        info = read_info(data)
        h, w = info.height, info.width
        kind = i % 3
        if kind == 0:  # RandomResizedCrop's kind: snapped, DCT-scaled
            bh, bw = int(rnd.integers(h // 4, h)), int(rnd.integers(w // 4, w))
            box = (int(rnd.integers(0, h - bh)), int(rnd.integers(0, w - bw)), bh, bw)
            plans.append(CropPlan(box, SIZE, bool(i % 2), dct_min_size(SIZE), True))
        elif kind == 1:  # Resize + CenterCrop's kind: a fractional box resampled exactly
            plans.append(CropPlan((h * 0.1 + 0.3, w * 0.2 + 0.7, h * 0.6, w * 0.5), SIZE, False, dct_min_size(SIZE), False))
        else:  # Resize((h, w)): the whole image
            plans.append(CropPlan((0, 0, h, w), SIZE, i % 2 == 0, dct_min_size(SIZE), False))
    return plans


def test_one_plan_list_gives_the_same_pixels_on_every_executor(photo_tree):
    images = _photos(photo_tree)
    plans = _plans(images)
    per_sample = np.stack([Source(EncodedImage(d, f"photo {i}")).execute(p) for i, (d, p) in enumerate(zip(images, plans))])

    batch = np.zeros((len(images), *SIZE, 3), np.uint8)
    items = []
    for slot, (data, plan) in enumerate(zip(images, plans)):
        request = batch_request(data, read_info(data), plan.box, min_size=plan.min_size, snap=plan.snap, flip=plan.flip)
        items.append((slot, data, request))
    assert decode_batch(batch, items) == []
    assert np.array_equal(batch, per_sample)  # the two CPU executors: bit for bit

    samples = []
    for i, (data, plan) in enumerate(zip(images, plans)):
        info = read_info(data)
        box = _snapped(info, plan, f"photo {i}") if plan.snap else tuple(float(v) for v in plan.box)
        samples.append(GPUSample(data, box, plan, (info.height, info.width), None, i, i, f"photo {i}"))
    encoded = EncodedCollate(SIZE)(samples)
    stage = GPUBatches([encoded], device=torch.device("cpu"), decoder=CPUDecoder(), fallback=None)  # type: ignore[arg-type]
    ((gpu, targets),) = list(stage)
    stage.close()
    assert targets.tolist() == list(range(len(images)))
    gpu_hwc = gpu.permute(0, 2, 3, 1).numpy()
    diff = np.abs(gpu_hwc.astype(np.int16) - per_sample.astype(np.int16))
    assert diff.mean() <= GPU_TOLERANCE_MEAN, diff.mean()
    for i, plan in enumerate(plans):  # each flip executed as planned: mirrored, the image is far from the other way
        mirrored = per_sample[i, :, ::-1]
        assert np.abs(gpu_hwc[i].astype(np.int16) - per_sample[i]).mean() < np.abs(gpu_hwc[i].astype(np.int16) - mirrored).mean()


def _dataset(root: Path, images: list[bytes]) -> Path:
    write_dataset(root, "recordio", [Sample(image=d, label=i % 3, id=i) for i, d in enumerate(images)], ["a", "b", "c"])
    return root


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_main_process_processes_and_threads_give_the_same_batches(tmp_path, photo_tree, train):
    root = _dataset(tmp_path / "ds", _photos(photo_tree, 13))
    if train:
        tf = transforms.Compose([transforms.RandomResizedCrop(SIZE), transforms.RandomHorizontalFlip()])
    else:
        tf = transforms.Compose([transforms.Resize(56), transforms.CenterCrop(SIZE)])
    runs = []
    for workers in (Workers(0), Workers(2, kind="processes", context="fork"), Workers(2, kind="threads")):
        with make_loader(open_dataset(root, transform=tf), 4, seed=11, train=train, workers=workers,
                         drop_last=False) as loader:
            runs.append([[(x.clone(), y.clone()) for x, y in loader] for _ in range(2)])
    for other in runs[1:]:
        for epoch in range(2):
            for (x0, y0), (x1, y1) in zip(runs[0][epoch], other[epoch], strict=True):
                assert torch.equal(x0, x1) and torch.equal(y0, y1)
    if train:
        assert not torch.equal(runs[0][0][0][0], runs[0][1][0][0])  # a new epoch draws new crops
