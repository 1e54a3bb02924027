"""decode='cuda' on a real GPU (skipped without one): the same samples and
pixels within tolerance as the CPU path, the nvJPEG stream hazard, pinned
batches, and flat GPU memory over epochs."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from fastdata import Prefetch, Workers, make_loader
from fastdata.gpu import GPUDecode

from ._photos import hymenoptera  # noqa: F401 - the fixture
from ._photos import TOLERANCE_MEAN, eval_transform, photos, train_transform

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]



def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


BACKENDS = [name for name, module in (("torchvision", "torchvision"), ("nvimgcodec", "nvidia.nvimgcodec")) if _installed(module)]


@pytest.fixture(params=BACKENDS or [pytest.param("none", marks=pytest.mark.skip(reason="no GPU JPEG decoder installed"))])
def backend(request):
    return request.param


@pytest.mark.parametrize("transform", [train_transform, eval_transform], ids=["train", "eval"])
def test_gpu_batches_match_the_cpu_path(hymenoptera, backend, transform):
    dataset = photos(hymenoptera, transform(224), count=48)
    train = transform is train_transform
    loader = make_loader(dataset, 16, seed=2, workers=Workers(2, kind="threads"), train=train,
                         decode=GPUDecode(backend=backend))
    cpu = make_loader(dataset, 16, seed=2, workers=0, train=train)
    diffs = []
    for (x, y), (cx, cy) in zip(loader, cpu, strict=True):
        assert x.is_cuda and x.dtype == torch.uint8 and torch.equal(y.cpu(), cy)
        assert loader.prefetcher.last.data.is_pinned()
        diffs.append((x.cpu().int() - cx.int()).abs().flatten())
    d = torch.cat(diffs).float()
    print(f"{backend} {transform.__name__}: mean |diff| {d.mean():.3f}, max {d.max():.0f}")
    assert d.mean() <= TOLERANCE_MEAN and (d <= 4).float().mean() >= 0.98


def test_repeated_decodes_under_a_busy_consumer_stream_stay_identical(hymenoptera, backend):
    # torchvision's nvJPEG writes on its own stream: without the synchronise
    # before each call, memory the consumer stream still reads can be reused.
    dataset = photos(hymenoptera, train_transform(224), count=32)
    loader = make_loader(dataset, 32, seed=1, workers=0, decode=GPUDecode(backend=backend),
                         prefetch=Prefetch(dtype=torch.float32))
    reference = None
    for _ in range(30):
        loader.set_epoch(0)
        for x, _ in loader:
            busy = torch.randn(4096, 4096, device="cuda")
            for _ in range(4):
                busy = busy @ busy.T / 4096  # keeps the consumer stream working while the next batch decodes
            if reference is None:
                reference = x.clone()
            assert torch.equal(x, reference)
            del busy


def test_gpu_memory_stays_flat_over_epochs(hymenoptera, backend):
    dataset = photos(hymenoptera, train_transform(224), count=64)
    loader = make_loader(dataset, 32, seed=0, workers=Workers(2, kind="threads"), decode=GPUDecode(backend=backend),
                         prefetch=Prefetch(dtype=torch.bfloat16, memory_format=torch.channels_last))
    allocated = []
    for _ in range(5):
        for x, _ in loader:
            assert x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=torch.channels_last)
        torch.cuda.synchronize()
        allocated.append(torch.cuda.memory_allocated())
    print("allocated after each epoch:", allocated)
    assert max(allocated[1:]) - min(allocated[1:]) <= 16 << 20
