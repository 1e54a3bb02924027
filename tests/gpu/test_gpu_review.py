"""What a review of decode="cuda" against the real APIs found, each checked
without a GPU: nvImageCodec's own decode call (its CPU backend), autocast,
the stage's thread, the frames nvJPEG cannot decode, the device index, and
``"auto"`` proving its decoder before it is used."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
import torch

from fastdata import Prefetch, make_loader
from fastdata.decode import read_info
from fastdata.gpu import CPUDecoder, GPUDecode, backends
from fastdata.gpu.samples import Accepts
from fastdata.gpu.probe import JPEG, probe

from ._photos import hymenoptera  # noqa: F401 - the fixture
from ._photos import photos, train_transform

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU fallback runs where CUDA is not")


def _gpu(dataset, batch, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return make_loader(dataset, batch, **{"decode": "cuda", **options})


def _nvimgcodec():
    pytest.importorskip("nvidia.nvimgcodec", reason="nvidia-nvimgcodec-cu13 is not installed (the test extra has it)")
    return backends.NvImageCodecDecoder(cpu=True)


def test_nvimgcodec_decodes_with_the_installed_wheels_parameters(hymenoptera):
    decoder = _nvimgcodec()  # building DecodeParams raised AttributeError (ColorSpec.RGB) before
    assert decoder.params.color_spec.name == "SRGB" and decoder.params.apply_exif_orientation is False
    assert probe(decoder, torch.device("cpu")) is None
    files = sorted((hymenoptera / "train" / "bees").glob("*.jpg"))[:3]
    images = decoder.decode([torch.frombuffer(bytearray(f.read_bytes()), dtype=torch.uint8) for f in files],
                            torch.device("cpu"))
    for f, image in zip(files, images):
        info = read_info(f.read_bytes())
        assert image.shape == (info.height, info.width, 3) and image.dtype == torch.uint8


def test_nvimgcodec_returns_none_for_a_bad_image_and_decodes_the_rest():
    decoder = _nvimgcodec()
    good = torch.frombuffer(bytearray(JPEG), dtype=torch.uint8)
    bad = torch.frombuffer(bytearray(b"\xff\xd8\xff not a jpeg at all"), dtype=torch.uint8)
    images = decoder.decode([good, bad, good], torch.device("cpu"))
    assert images[1] is None and images[0].shape == images[2].shape == (8, 16, 3)


def test_the_stage_is_float32_under_autocast(hymenoptera):
    # bmm under autocast returned bf16 into the float32 buffer: index_copy_ raised on every batch
    loader = _gpu(photos(hymenoptera, train_transform(), count=8), 8, seed=1, workers=0,
                  prefetch=Prefetch(device="cpu", dtype=torch.bfloat16))
    reference = next(iter(loader))[0]
    loader.close()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loader.set_epoch(0)
        with loader:
            x, _ = next(iter(loader))
        batch = loader.prefetcher.last
        loader.prefetcher.finish(batch)  # called on this thread too, under autocast
    assert x.dtype == torch.bfloat16 and torch.equal(x, reference)


class _Recording(CPUDecoder):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def decode(self, encoded, device):
        self.threads.add(threading.get_ident())
        return super().decode(encoded, device)


def test_decoding_runs_on_the_stage_thread_not_the_training_loops(hymenoptera):
    decoder = _Recording()
    loader = _gpu(photos(hymenoptera, train_transform(), count=16), 4, seed=1, workers=0,
                  decode=GPUDecode(backend=decoder))
    with loader:
        assert len(list(loader)) == 4
    assert decoder.threads and threading.get_ident() not in decoder.threads


def _with_frame(data: bytes, marker: int, precision: int = 8) -> bytes:
    at = data.index(b"\xff\xc0")
    return data[: at + 1] + bytes([marker]) + data[at + 2 : at + 4] + bytes([precision]) + data[at + 5 :]


@pytest.mark.parametrize(("marker", "precision", "takes"), [
    (0xC0, 8, True), (0xC1, 8, True), (0xC2, 8, False), (0xC3, 8, False), (0xC9, 8, False), (0xCA, 8, False),
    (0xCB, 8, False), (0xC0, 12, False), (0xC1, 12, False),
], ids=["baseline", "extended", "progressive", "lossless", "arith", "arith-progressive", "arith-lossless",
        "12-bit", "12-bit-extended"])
def test_frames_nvjpeg_cannot_decode_stay_on_the_cpu(marker, precision, takes):
    info = read_info(_with_frame(JPEG, marker, precision))
    assert (info.frame, info.precision) == (marker, precision)
    assert Accepts(progressive=False).takes(info) is takes
    assert Accepts(progressive=True).takes(info) is (takes or (marker == 0xC2 and precision == 8))


def test_cuda_means_the_current_device_with_its_index(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert backends.cuda_device("cuda") == torch.device("cuda", 3)
    assert backends.cuda_device("cuda:1") == torch.device("cuda", 1)
    assert backends.cuda_device("cpu") == torch.device("cpu")


class _Wrong(CPUDecoder):
    """Imports fine, then decodes to the wrong colour (a decoder that is not what it says)."""

    def decode(self, encoded, device):
        return [torch.zeros_like(image) for image in super().decode(encoded, device)]


class _Absent:
    def __init__(self) -> None:
        raise backends.MissingDependencyError("not here")


def test_auto_takes_the_first_decoder_that_proves_itself(monkeypatch):
    monkeypatch.setattr(backends, "BACKENDS", {"absent": _Absent, "wrong": _Wrong, "good": CPUDecoder})
    decoder, why = backends.gpu_backend("auto", torch.device("cpu"))
    assert type(decoder) is CPUDecoder
    assert "absent: not installed" in why and "wrong: it gave colour [0, 0, 0]" in why
    monkeypatch.setattr(backends, "BACKENDS", {"wrong": _Wrong})
    with pytest.raises(backends.MissingDependencyError, match="wrong: it gave colour"):
        backends.gpu_backend("auto", torch.device("cpu"))


def test_the_batch_is_finished_in_the_requested_memory_format(hymenoptera):
    dataset = photos(hymenoptera, train_transform(), count=8)
    options = dict(seed=2, workers=0, prefetch=Prefetch(device="cpu", dtype=torch.float32))
    plain = next(iter(_gpu(dataset, 8, **options)))[0]
    options["prefetch"] = Prefetch(device="cpu", dtype=torch.float32, memory_format=torch.channels_last)
    loader = _gpu(dataset, 8, **options)
    with loader:
        last = next(iter(loader))[0]
    assert last.is_contiguous(memory_format=torch.channels_last) and torch.equal(last, plain)
    assert "cpu decoder on cpu" in repr(loader)
