"""CUDAPrefetcher: normalisation on the CPU everywhere, and on a GPU when there is one."""

from __future__ import annotations


import pytest
import torch

from fastdata import ConfigError, CUDAPrefetcher
from fastdata.loading.collate import FastCollate

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


class Batches:
    """A re-iterable loader of fixed uint8 batches; counts its passes."""

    def __init__(self, n: int = 3, shape=(4, 3, 5, 6), memory_format=torch.contiguous_format, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.batches = [
            (torch.randint(0, 256, shape, generator=g, dtype=torch.uint8).contiguous(memory_format=memory_format),
             torch.arange(shape[0]) + i * shape[0])
            for i in range(n)
        ]
        self.passes = 0

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        self.passes += 1
        return iter(self.batches)


def _reference(x: torch.Tensor, mean, std, scale=255.0) -> torch.Tensor:
    m = torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
    return (x.double() / scale - m) / s


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cpu_path_matches_reference_normalisation(dtype):
    loader = Batches()
    out = list(CUDAPrefetcher(loader, device="cpu", mean=MEAN, std=STD, dtype=dtype))
    assert len(out) == 3
    for (images, targets), (raw, raw_targets) in zip(out, loader.batches):
        assert images.dtype == dtype and images.shape == raw.shape and images.device.type == "cpu"
        assert torch.equal(targets, raw_targets)
        tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
        torch.testing.assert_close(images.double(), _reference(raw, MEAN, STD), rtol=tol, atol=tol)
        # and exactly the documented float32 formula, then one cast
        shift = torch.tensor([m * 255.0 for m in MEAN], dtype=torch.float32).view(1, 3, 1, 1)
        factor = torch.tensor([1 / (s * 255.0) for s in STD], dtype=torch.float32).view(1, 3, 1, 1)
        assert torch.equal(images, ((raw.float() - shift) * factor).to(dtype))


def test_units_scale_one_takes_0_255_mean_and_std():
    loader = Batches(n=1)
    a = next(iter(CUDAPrefetcher(loader, device="cpu", mean=MEAN, std=STD)))[0]
    b = next(iter(CUDAPrefetcher(loader, device="cpu", mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD], scale=1.0)))[0]
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-5)


def test_without_mean_and_std_only_scales():
    raw = Batches(n=1).batches[0][0]
    assert torch.equal(next(iter(CUDAPrefetcher(Batches(n=1), device="cpu", scale=1.0)))[0], raw.float())
    unit = next(iter(CUDAPrefetcher(Batches(n=1), device="cpu")))[0]
    torch.testing.assert_close(unit.double(), raw.double() / 255, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("source, wanted", [
    (torch.contiguous_format, torch.channels_last),
    (torch.channels_last, torch.contiguous_format),
    (torch.channels_last, torch.preserve_format),
])
def test_memory_format(source, wanted):
    out = next(iter(CUDAPrefetcher(Batches(n=1, memory_format=source), device="cpu", mean=MEAN, std=STD, memory_format=wanted)))[0]
    expected = source if wanted == torch.preserve_format else wanted
    assert out.is_contiguous(memory_format=expected)


def test_many_epochs_len_and_context_manager():
    loader = Batches(n=4)
    with CUDAPrefetcher(loader, device="cpu", mean=MEAN, std=STD) as prefetcher:
        assert len(prefetcher) == 4
        first = [t.tolist() for _, t in prefetcher]
        for _ in range(2):
            assert [t.tolist() for _, t in prefetcher] == first
        half = iter(prefetcher)
        next(half)
    assert loader.passes == 4
    with pytest.raises(StopIteration):
        next(half)  # closing ended the pass in progress
    assert prefetcher.stream is None


@pytest.mark.parametrize("kwargs, fragment", [
    ({"mean": (123.7, 116.3, 103.5), "std": (58.4, 57.1, 57.4)}, "scale=1.0"),
    ({"mean": MEAN, "std": STD, "scale": 1.0}, "scale=255.0"),
    ({"std": (0.0, 1.0, 1.0)}, "std"),
    ({"dtype": torch.int32}, "dtype"),
    ({"scale": 0}, "scale"),
])
def test_bad_settings_raise(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        CUDAPrefetcher(Batches(), device="cpu", **kwargs)


def test_bad_batches_raise():
    with pytest.raises(ConfigError, match="uint8"):
        next(iter(CUDAPrefetcher([(torch.zeros(2, 3, 4, 4), torch.zeros(2))], device="cpu")))
    with pytest.raises(ConfigError, match="channels"):
        next(iter(CUDAPrefetcher([(torch.zeros(2, 4, 4, 4, dtype=torch.uint8), torch.zeros(2))], device="cpu", mean=MEAN, std=STD)))
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA"):
            CUDAPrefetcher(Batches(), device="cuda")


# ---------------------------------------------------------------- GPU only


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("mean, std, scale", [(MEAN, STD, 255.0), ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375), 1.0), (None, None, 255.0)])
@pytest.mark.cuda
@requires_cuda
def test_gpu_output_equals_cpu_path_bit_for_bit(dtype, memory_format, mean, std, scale):
    loader = Batches(n=3, shape=(8, 3, 32, 48))
    kwargs = {"mean": mean, "std": std, "scale": scale, "dtype": dtype, "memory_format": memory_format}
    on_cpu = list(CUDAPrefetcher(loader, device="cpu", **kwargs))
    with CUDAPrefetcher(loader, device="cuda", **kwargs) as prefetcher:
        for epoch in range(2):
            on_gpu = [(x.cpu(), y.cpu()) for x, y in prefetcher]
            assert len(on_gpu) == 3
            for (gx, gy), (cx, cy) in zip(on_gpu, on_cpu):
                assert gx.dtype == dtype and gx.is_contiguous(memory_format=memory_format)
                assert torch.equal(gx, cx) and torch.equal(gy, cy)


@pytest.mark.cuda
@requires_cuda
def test_one_stream_for_the_prefetchers_life():
    prefetcher = CUDAPrefetcher(Batches(), mean=MEAN, std=STD)
    for _ in range(3):
        for images, _ in prefetcher:
            assert images.is_cuda
    stream = prefetcher.stream
    assert stream is not None and stream != torch.cuda.current_stream()
    list(prefetcher)
    assert prefetcher.stream is stream
    prefetcher.close()
    assert prefetcher.stream is None


@pytest.mark.cuda
@requires_cuda
def test_fast_collate_pins_in_the_main_process():
    import numpy as np

    out, _ = FastCollate(pin_memory=True)([(np.zeros((4, 4, 3), np.uint8), 0)])
    assert out.is_pinned()


@pytest.mark.cuda
@requires_cuda
def test_copies_overlap_compute():
    # Timestamps on the GPU itself: batch k+1's copy (on the side stream) must
    # start before the compute on batch k ends. A copy on the consumer's stream
    # would queue behind that compute and never start before it ends. (A wall-clock
    # comparison failed on an H100: the conversion to float takes the SMs the
    # matmuls use, so totals hide the overlap that is there.)
    n = 8
    host = [(torch.randint(0, 256, (64, 4, 512, 512), dtype=torch.uint8).pin_memory(), torch.arange(64)) for _ in range(n)]
    weight = torch.randn(2048, 2048, device="cuda")
    prefetcher = CUDAPrefetcher(host, mean=MEAN + (0.5,), std=STD + (0.25,))
    copies, computes = [], []
    convert = prefetcher._convert

    def timed_convert(images):
        marks = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        marks[0].record()  # on the current stream: the side stream inside the prefetcher's preload
        out = convert(images)
        marks[1].record()
        copies.append(marks)
        return out

    prefetcher._convert = timed_convert
    origin = torch.cuda.Event(enable_timing=True)
    origin.record()
    for images, _ in prefetcher:
        marks = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        marks[0].record()
        for _ in range(30):  # a few ms of compute per batch
            weight.matmul(weight)
        images.sum()
        marks[1].record()
        computes.append(marks)
    torch.cuda.synchronize()
    at = origin.elapsed_time
    early = [at(copies[k + 1][0]) < at(computes[k][1]) for k in range(n - 1)]
    assert sum(early) >= n - 2, [(round(at(copies[k + 1][0]), 2), round(at(computes[k][1]), 2)) for k in range(n - 1)]


def test_the_cpu_and_gpu_stages_share_one_normalisation():
    """GPUBatches and CUDAPrefetcher take their constants from one function:
    mean/std in 0-1 units at scale 255 give (x/255 - mean)/std, and a
    mean or std of the wrong length is refused the same way."""
    import fastdata.gpu.stage as stage
    import fastdata.loading.prefetch as prefetch
    from fastdata.errors import ConfigError
    from fastdata.loading.normalise import affine

    assert stage.affine is affine and prefetch.affine is affine
    shift, factor = affine((0.5,), (0.25, 0.5, 1.0), scale=255.0, channels=3)
    x = torch.full((1, 3, 1, 1), 204.0)
    assert torch.allclose((x - shift) * factor, torch.tensor([1.2, 0.6, 0.3]).view(1, 3, 1, 1))
    with pytest.raises(ConfigError, match="mean has 2 values but the images have 3 channels"):
        affine((0.1, 0.2), None, scale=255.0, channels=3)
