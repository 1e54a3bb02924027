"""decode='cuda' on a real GPU (skipped without one): the same samples and
pixels within tolerance as the CPU path, the nvJPEG stream hazard, pinned
batches, and flat GPU memory over epochs."""

from __future__ import annotations

import importlib.util
import os
import subprocess

import pytest
import torch

from fastdata import Prefetch, Workers, make_loader
from fastdata.gpu import BACKENDS as DECODERS
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
    decoder = loader.prefetcher.decoder
    given, decode = [], decoder.decode
    def spy(encoded, *args, **kwargs):  # what the decoder is handed (a batch rebuilt after a rejection is not)
        given.append(all(t.is_pinned() for t in encoded))
        return decode(encoded, *args, **kwargs)
    decoder.decode = spy
    diffs = []
    with loader:
        for (x, y), (cx, cy) in zip(loader, cpu, strict=True):
            assert x.is_cuda and x.dtype == torch.uint8 and torch.equal(y.cpu(), cy)
            assert loader.prefetcher.last.flips.is_pinned()
            diffs.append((x.cpu().int() - cx.int()).abs().flatten())
    # both decoders copy the encoded bytes to the device themselves: pinned for them (issue 37)
    assert given and all(given) == decoder.copies_encoded
    d = torch.cat(diffs).float()
    print(f"{backend} {transform.__name__}: mean |diff| {d.mean():.3f}, max {d.max():.0f}")
    assert d.mean() <= TOLERANCE_MEAN and (d <= 4).float().mean() >= 0.98


GUARDED = os.environ.get("FASTDATA_TEST_UNGUARDED") != "1"
"""gpu_check.sh runs the stream test once more with FASTDATA_TEST_UNGUARDED=1: it must fail then."""


def test_a_decode_never_overwrites_memory_a_queued_kernel_still_reads(hymenoptera, backend):
    # The decoders write from their own engine/stream into memory the caching
    # allocator handed out on ours. Images freed on our stream while a long
    # kernel that reads them is still queued there are reusable at once (stream
    # order); only the guard (our stream synchronised before each decode) stops
    # the next decode from overwriting them before that kernel has read them.
    decoder = DECODERS[backend](guard=GUARDED)
    files = sorted((hymenoptera / "train" / "ants").glob("*.jpg"))[:16]
    encoded = [torch.frombuffer(bytearray(f.read_bytes()), dtype=torch.uint8) for f in files]
    device = torch.device("cuda", torch.cuda.current_device())
    side = torch.cuda.Stream(device)
    with torch.cuda.stream(side):
        expected = torch.stack([im.sum(dtype=torch.int64) for im in decoder.decode(encoded, device)]).cpu()
        busy = torch.randn(8192, 8192, device=device)
        for trial in range(5):
            images = decoder.decode(encoded, device)
            for _ in range(6):  # ~0.1 s of work queued ahead of the reads below
                busy = torch.mm(busy, busy).mul_(1.0 / 8192)
            sums = torch.stack([im.sum(dtype=torch.int64) for im in images])
            del images  # their memory goes back to the allocator, reusable in our stream's order
            decoder.decode(encoded[::-1], device)  # the same sizes: the freed blocks fit
            side.synchronize()
            assert torch.equal(sums.cpu(), expected), f"trial {trial}: a decode overwrote images still being read"


def _gpu_memory_mib() -> tuple[float, float]:
    """(this process's reserved memory, its memory as the driver counts it: nvidia-smi's
    figure for this pid, else the whole device's used memory)."""
    reserved = torch.cuda.memory_reserved() / 2**20
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
        mine = [float(used) for pid, used in (line.split(",") for line in out.splitlines() if "," in line)
                if int(pid) == os.getpid()]
        if mine:
            return reserved, mine[0]
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    free, total = torch.cuda.mem_get_info()
    return reserved, (total - free) / 2**20


def test_gpu_memory_stays_flat_over_epochs(hymenoptera, backend):
    dataset = photos(hymenoptera, train_transform(224), count=64)
    loader = make_loader(dataset, 32, seed=0, workers=Workers(2, kind="threads"), decode=GPUDecode(backend=backend),
                         prefetch=Prefetch(dtype=torch.bfloat16, memory_format=torch.channels_last))
    seen = []
    for _ in range(5):
        for x, _ in loader:
            assert x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=torch.channels_last)
        torch.cuda.synchronize()
        seen.append(_gpu_memory_mib())
    print("reserved, process MiB after each epoch:", seen)
    for series in zip(*seen):
        later = series[1:]
        assert max(later) <= 1.01 * min(later), f"memory grew after epoch 2: {series}"


def test_the_stage_runs_under_autocast_and_keeps_the_training_thread_free(hymenoptera, backend):
    dataset = photos(hymenoptera, train_transform(224), count=64)
    loader = make_loader(dataset, 32, seed=0, workers=Workers(2, kind="threads"), decode=GPUDecode(backend=backend),
                         prefetch=Prefetch(dtype=torch.bfloat16, memory_format=torch.channels_last))
    with torch.autocast("cuda", dtype=torch.bfloat16), loader:
        for x, _ in loader:
            assert x.dtype == torch.bfloat16 and x.shape == (32, 3, 224, 224)
    assert "decoder on cuda:" in repr(loader)


@pytest.mark.parametrize("share", [0.5, "auto"])
def test_the_hybrid_keeps_the_cpu_paths_samples_and_pixels(hymenoptera, backend, share):
    dataset = photos(hymenoptera, train_transform(224), count=64)
    loader = make_loader(dataset, 16, seed=4, workers=Workers(2, kind="threads"),
                         decode=GPUDecode(backend=backend, cpu_share=share))
    cpu = make_loader(dataset, 16, seed=4, workers=0)
    diffs, split = [], 0
    for (x, y), (cx, cy) in zip(loader, cpu, strict=True):
        assert x.is_cuda and torch.equal(y.cpu(), cy)
        split += loader.prefetcher.last.by_share
        diffs.append((x.cpu().int() - cx.int()).abs().flatten())
    d = torch.cat(diffs).float()
    stats = loader.stats()
    print(f"hybrid {backend} share {share}: settled {stats.cpu_share:.3f}, {split} samples cropped on the CPU, "
          f"mean |diff| {d.mean():.3f}")
    assert split > 0 and 0.05 <= stats.cpu_share <= 0.95 and d.mean() <= TOLERANCE_MEAN
    assert "CPU share" in repr(loader)
