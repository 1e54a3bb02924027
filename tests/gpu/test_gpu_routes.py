"""decode='cuda': images the GPU decoder does not take, decoder rejections,
corrupt records, CUDA-free workers and the settings' refusals."""

from __future__ import annotations

import os
import warnings

import pytest
import torch
from torch.utils.data import Dataset

from fastdata import DecodeError, Workers, make_loader, transforms
from fastdata.datasets import ImageFolder
from fastdata.errors import ConfigError
from fastdata.gpu import CPUDecoder, GPUDecode

from ._photos import hymenoptera  # noqa: F401 - the fixture
from ._photos import eval_transform, folder_with, photos, train_transform

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU fallback runs where CUDA is not")


def _gpu(dataset, batch, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return make_loader(dataset, batch, decode=options.pop("decode", "cuda"), **options)


@pytest.mark.parametrize("transform", [train_transform(48), eval_transform(48)], ids=["train", "eval"])
def test_cmyk_progressive_rotated_and_non_jpeg_are_finished_by_the_cpu_path_in_the_worker(edge_images, transform):
    edge = ImageFolder(edge_images, transform=transform)
    cpu = list(make_loader(edge, 4, seed=4, workers=0, train=False))
    loader = _gpu(edge, 4, seed=4, workers=Workers(2, kind="threads"), train=False)
    routed = []
    for (x, y), (cx, cy) in zip(loader, cpu, strict=True):
        last = loader.prefetcher.last
        assert torch.equal(y, cy)
        at = last.ready_at
        assert torch.equal(x[at], cx[at])  # the CPU path's own pixels, bit for bit
        routed += [last.names[i] for i in at.tolist()]
    kinds = {os.path.basename(os.path.dirname(name)) for name in routed}
    assert kinds >= {"cmyk_jpeg", "exif_orientation_jpeg", "progressive_jpeg", "png_16bit", "png_alpha",
                     "png_gray_bilevel", "png_palette"}
    assert not any("rgb_jpeg" in n or "gray_jpeg" in n for n in routed)  # those went to the decoder


class _Rejecting(CPUDecoder):
    """A decoder that fails whole batches holding one chosen image, and that image alone."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size, self.calls = size, 0

    def decode(self, encoded, device):
        self.calls += 1
        if any(len(t) == self.size for t in encoded):
            raise RuntimeError("nvjpeg: unsupported")
        return super().decode(encoded, device)


def test_a_sample_the_decoder_rejects_takes_the_cpu_path_and_rejoins_its_batch(hymenoptera, caplog):
    dataset = photos(hymenoptera, train_transform(), count=8)
    victim = dataset.dataset.path(dataset.indices[3])
    with open(victim, "rb") as f:
        size = len(f.read())
    decoder = _Rejecting(size)
    cpu = next(iter(make_loader(dataset, 8, seed=6, workers=0)))
    loader = _gpu(dataset, 8, seed=6, workers=0, decode=GPUDecode(backend=decoder))
    with caplog.at_level("WARNING", logger="fastdata.gpu"), loader:
        x, y = next(iter(loader))
    position = loader.prefetcher.last.names.index(victim)
    assert torch.equal(x[position], cpu[0][position]) and torch.equal(y, cpu[1])
    assert decoder.calls == 1 + 2 * 3  # the batch of 8, then halves (4+4, 2+2, 1+1) down to the culprit
    assert victim in caplog.text and "rejected" in caplog.text


class _Refusing(CPUDecoder):
    """A decoder that returns None for chosen images, as nvImageCodec does, and decodes the rest."""

    def __init__(self, sizes: set[int]) -> None:
        super().__init__()
        self.sizes, self.calls = sizes, []

    def decode(self, encoded, device):
        self.calls.append(len(encoded))
        return [None if len(t) in self.sizes else image for t, image in zip(encoded, super().decode(encoded, device))]


def test_images_the_decoder_returns_as_none_alone_take_the_cpu_path_in_one_call(hymenoptera, caplog):
    dataset = photos(hymenoptera, train_transform(), count=8)
    victims = [dataset.dataset.path(dataset.indices[i]) for i in (1, 6)]
    decoder = _Refusing({os.path.getsize(v) for v in victims})
    cpu = next(iter(make_loader(dataset, 8, seed=3, workers=0)))
    loader = _gpu(dataset, 8, seed=3, workers=0, decode=GPUDecode(backend=decoder))
    with caplog.at_level("WARNING", logger="fastdata.gpu"), loader:
        x, y = next(iter(loader))
    assert decoder.calls == [8]  # one batched call; no retries
    last = loader.prefetcher.last
    for victim in victims:
        position = last.names.index(victim)
        assert position in last.ready_at.tolist() and torch.equal(x[position], cpu[0][position])
        assert victim in caplog.text
    assert torch.equal(y, cpu[1]) and len(last.gpu) == 6


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_an_undecodable_record_follows_the_datasets_on_error_policy(tmp_path, hymenoptera, corrupt_images, on_error):
    root = folder_with(tmp_path, hymenoptera, {"ants/zz_truncated.jpg": corrupt_images / "truncated_jpeg.jpg"})
    dataset = ImageFolder(root, transform=train_transform(), on_error=on_error)
    if on_error == "raise":
        with pytest.raises(DecodeError, match="zz_truncated.jpg"):
            list(_gpu(dataset, 4, seed=1, workers=0, train=False))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cpu = list(make_loader(ImageFolder(root, transform=train_transform(), on_error="skip"), 4, seed=1, workers=0,
                               train=False))
        gpu = list(_gpu(dataset, 4, seed=1, workers=0, train=False))
    for (x, y), (cx, cy) in zip(gpu, cpu, strict=True):
        assert torch.equal(y, cy)  # the replacement is the CPU path's: the next readable sample
        assert (x.int() - cx.int()).abs().float().mean() <= 1.0
    assert dataset.skipped >= 1


def test_workers_never_touch_cuda(hymenoptera, monkeypatch):
    parent = os.getpid()

    def guarded(real):
        def call(*args, **kwargs):
            if os.getpid() != parent:
                raise AssertionError("a worker touched CUDA")
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(torch.cuda, "is_available", guarded(torch.cuda.is_available))
    monkeypatch.setattr(torch.cuda, "_lazy_init", guarded(torch.cuda._lazy_init))
    loader = _gpu(photos(hymenoptera, train_transform(), count=8), 4, seed=0, workers=Workers(2, context="fork"))
    assert sum(len(y) for _, y in loader) == 8


def test_auto_without_cuda_is_the_cpu_path(hymenoptera):
    dataset = photos(hymenoptera, train_transform(), count=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto" falls back silently
        auto = make_loader(dataset, 4, seed=2, workers=0, decode="auto")
    assert auto.prefetcher is None
    for (x, y), (cx, cy) in zip(auto, make_loader(dataset, 4, seed=2, workers=0), strict=True):
        assert torch.equal(x, cx) and torch.equal(y, cy)


class _Plain(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.zeros(3, 8, 8, dtype=torch.uint8), 0


def test_refusals_name_the_fix(hymenoptera):
    dataset = photos(hymenoptera, train_transform(), count=8)
    with pytest.raises(ConfigError, match="decode must be one of"):
        make_loader(dataset, 4, decode="gpu")
    with pytest.raises(ConfigError, match="drop collate_fn"):
        _gpu(dataset, 4, collate_fn=lambda b: b)
    with pytest.raises(ConfigError, match="not _Plain"):
        _gpu(_Plain(), 2)
    resize_only = photos(hymenoptera, transforms.Resize(32), count=8)
    with pytest.raises(ConfigError, match="use decode='cpu'"):
        _gpu(resize_only, 4)
    with pytest.raises(ConfigError, match="mode"):
        GPUDecode(mode="cpu")  # type: ignore[arg-type]


def test_eval_center_crop_alone_and_padded_crops(hymenoptera):
    big = photos(hymenoptera, transforms.CenterCrop(64), count=8)
    for (x, _), (cx, _) in zip(_gpu(big, 4, workers=0, train=False), make_loader(big, 4, workers=0, train=False),
                               strict=True):
        assert torch.equal(x, cx)  # a crop without resizing is the same pixels
    crop_past_the_edge = transforms.Compose([transforms.Resize(64), transforms.CenterCrop(96)])  # zero padding
    padded = photos(hymenoptera, crop_past_the_edge, count=4)
    loader = _gpu(padded, 4, workers=0, train=False)
    x, _ = next(iter(loader))
    assert len(loader.prefetcher.last.ready_at) == 4
    assert torch.equal(x, next(iter(make_loader(padded, 4, workers=0, train=False)))[0])


def test_a_small_budget_resamples_in_several_steps_with_the_same_result(hymenoptera):
    dataset = photos(hymenoptera, train_transform(), count=8)
    whole = next(iter(_gpu(dataset, 8, seed=3, workers=0)))[0]
    loader = _gpu(dataset, 8, seed=3, workers=0, decode=GPUDecode(budget=3 * 300 * 300))
    windows = next(iter(loader.dataloader)).windows
    assert (windows[:, 2] * windows[:, 3] * 3 > 3 * 300 * 300).any()  # some photos need a step of their own
    assert torch.equal(next(iter(loader))[0], whole)
