"""The hybrid decode on the CPU twin (issue 37): each batch's plans split
between the GPU decoder (here :class:`CPUDecoder`) and the workers' compiled
crop decoder; the share's controller against decoders of known per-image
cost; resume at another share; a refused image costs one batched CPU call."""

from __future__ import annotations

import random
import time
import warnings

import pytest
import torch

from fastdata import Workers, make_loader
from fastdata.errors import ConfigError
from fastdata.gpu import CPUDecoder, GPUDecode
from fastdata.gpu import executor as executor_module
from fastdata.gpu import samples as samples_module
from fastdata.gpu.share import BatchCost, CPUShare, ShareController, balancing_share

from ._photos import hymenoptera  # noqa: F401 - the fixture
from ._photos import TOLERANCE_MEAN, photos, train_transform

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU twin runs where CUDA is not")

SETTLE = 12
"""Batches the controller takes to come within 10 % of the balancing share,
from its start at 0.3, with the workers running 4 batches ahead."""


def _loader(dataset, batch, share, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # decode="cuda" without CUDA: the CPU twin
        return make_loader(dataset, batch, decode=GPUDecode(cpu_share=share, **options.pop("gpu", {})), **options)


def _balance(g: float, c: float, other: float, images: int, workers: int) -> float:
    """The share where (1 - s) M g = (P + s M c) / W, by bisection (independent of the controller's algebra)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        s = (lo + hi) / 2
        if (1 - s) * images * g > (other + s * images * c) / workers:
            lo = s
        else:
            hi = s
    return (lo + hi) / 2


@pytest.mark.parametrize(("g", "c", "other", "workers"), [
    (0.004, 0.012, 0.02, 4),    # a GPU decode 3x faster per image than one CPU worker, 4 workers
    (0.003, 0.020, 0.05, 8),    # 8 slower workers
    (0.010, 0.010, 0.00, 2),    # as fast per image, 2 workers: a third on the CPU
    (0.002, 0.004, 0.01, 15),   # the whole machine's workers: most on the CPU
], ids=["4-workers", "8-slow-workers", "2-equal", "15-workers"])
@pytest.mark.parametrize("noise", [0.0, 0.05], ids=["exact", "5pct-noise"])
def test_the_controller_settles_within_10pct_of_the_balancing_share_and_does_not_oscillate(g, c, other, workers, noise):
    images, lag, rng = 256, 4, random.Random(0)
    target = _balance(g, c, other, images, workers)
    assert abs(balancing_share(g, c, other, images, workers) - target) < 1e-6
    share = CPUShare(0.3)
    controller = ShareController(share, workers)
    used = [share.get()] * lag  # the workers build batches a few ahead, at the share they read then
    seen = []
    for _ in range(80):
        s = used.pop(0)
        on_cpu = round(s * images)
        jitter = lambda: 1 + rng.uniform(-noise, noise)  # noqa: E731
        controller.observe(BatchCost(images - on_cpu, (images - on_cpu) * g * jitter(), on_cpu,
                                     on_cpu * c * jitter(), other * jitter()))
        used.append(share.get())
        seen.append(share.get())
    settled = seen[SETTLE:]
    assert all(abs(s - target) <= 0.1 * target for s in settled), (target, seen)
    # no oscillation: exact costs give a monotone approach; with noisy timers no move larger than the
    # controller's dead band ever turns back, and the settled share keeps within 4 % of the target
    floor = 1e-12 if noise == 0 else controller.dead_band
    moves = [b - a for a, b in zip(seen, seen[1:]) if abs(b - a) > floor]
    assert all(a * b > 0 for a, b in zip(moves, moves[1:])), (target, seen)
    assert max(settled) - min(settled) <= 0.04 * target, (target, seen)


def test_without_workers_the_cheaper_side_takes_all_it_may():
    share = CPUShare(0.3)
    controller = ShareController(share, 0, bounds=(0.05, 0.95))
    for _ in range(30):
        controller.observe(BatchCost(200, 200 * 0.002, 56, 56 * 0.010, 0.01))
    assert 0.05 <= share.get() < 0.05 + controller.dead_band  # the low bound, to within the dead band


class _Timed(CPUDecoder):
    """The GPU side at a known cost: each image's pixels decoded once and
    remembered, then ``seconds`` of sleep per image per call."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds, self.cache = seconds, {}

    def decode(self, encoded, device):
        out = []
        for data in encoded:
            key = bytes(data.numpy()[:64]) + len(data).to_bytes(8, "little")
            if key not in self.cache:
                self.cache[key] = super().decode([data], device)[0]
            out.append(self.cache[key])
        time.sleep(self.seconds * len(encoded))
        return out


def test_through_a_loader_the_share_settles_near_the_balance_of_decoders_of_known_cost(hymenoptera, monkeypatch):
    g, c, workers = 0.02, 0.06, 2
    real = samples_module.crop_batch

    def slow_crop(samples, size, backend="auto"):  # the CPU side at a known cost per image
        time.sleep(c * len(samples))
        return real(samples, size, backend)

    monkeypatch.setattr(samples_module, "crop_batch", slow_crop)
    dataset = photos(hymenoptera, train_transform(32), count=64)
    loader = _loader(dataset, 8, "auto", seed=0, workers=Workers(workers, kind="threads"), gpu={"backend": _Timed(g)})
    seen = []
    with loader:
        for _ in range(3):  # 24 batches
            for _ in loader:
                seen.append(loader.stats().cpu_share)
    target = _balance(g, c, 0.0, 8, workers)  # 0.4; the real planning and cropping add a few ms per batch
    assert abs(seen[-1] - target) <= 0.1 * target, (target, seen)
    assert all(abs(s - target) <= 0.15 * target for s in seen[-6:]), (target, seen)


def test_cpu_crops_and_gpu_twin_differ_by_at_most_one_grey_level_and_keep_every_plan(hymenoptera):
    dataset = photos(hymenoptera, train_transform(96), count=32)
    cpu = list(make_loader(dataset, 16, seed=2, workers=0))
    runs = {}
    for share in (0.0, 1.0):
        loader = _loader(dataset, 16, share, seed=2, workers=0)
        batches = []
        for x, y in loader:
            last = loader.prefetcher.last
            batches.append((x, y, last.drawn.clone(), last.flips.clone(), last.by_share))
        runs[share] = batches
    for (g, gy, gd, gf, none), (c, cy, cd, cf, every), (x, y) in zip(runs[0.0], runs[1.0], cpu, strict=True):
        assert none == 0 and every == len(x)
        assert torch.equal(gd, cd) and torch.equal(gf, cf) and torch.equal(gy, cy) and torch.equal(cy, y)
        assert torch.equal(c, x)  # the CPU side is decode="cpu", bit for bit
        assert (g.int() - c.int()).abs().float().mean() <= TOLERANCE_MEAN


@pytest.mark.parametrize("second", [1.0, 0.25, "auto"])
def test_a_resumed_run_draws_the_same_crops_and_flips_whatever_share_it_runs_at(hymenoptera, second):
    dataset = photos(hymenoptera, train_transform(), count=24)
    workers = Workers(2, kind="threads")

    def run(loader, batches):
        out = []
        for x, y in batches:
            last = loader.prefetcher.last
            out.append((x, y, last.drawn.clone(), last.flips.clone()))
        return out

    whole_loader = _loader(dataset, 4, 0.0, seed=9, workers=workers)
    whole = run(whole_loader, whole_loader)
    first = _loader(dataset, 4, 0.5, seed=9, workers=workers)
    batches = iter(first)
    head = run(first, (next(batches) for _ in range(2)))
    state = first.state_dict()
    first.close()
    resumed = _loader(dataset, 4, second, seed=9, workers=workers)
    resumed.load_state_dict(state)
    rest = run(resumed, resumed)
    assert len(head) + len(rest) == len(whole)
    for (x, y, drawn, flips), (wx, wy, wdrawn, wflips) in zip(head + rest, whole, strict=True):
        assert torch.equal(drawn, wdrawn) and torch.equal(flips, wflips) and torch.equal(y, wy)
        assert (x.int() - wx.int()).abs().float().mean() <= TOLERANCE_MEAN


class _Refusing(CPUDecoder):
    """Returns None for the images of chosen byte sizes, as nvImageCodec does."""

    def __init__(self, sizes: set[int]) -> None:
        super().__init__()
        self.sizes = sizes

    def decode(self, encoded, device):
        return [None if len(t) in self.sizes else image for t, image in zip(encoded, super().decode(encoded, device))]


def test_images_the_decoder_refuses_cost_one_batched_cpu_call(hymenoptera, monkeypatch):
    dataset = photos(hymenoptera, train_transform(), count=8)
    victims = [dataset.dataset.path(dataset.indices[i]) for i in (0, 3, 6)]
    sizes = set()
    for v in victims:
        with open(v, "rb") as f:
            sizes.add(len(f.read()))
    calls = []
    real = executor_module.crop_batch

    def counting(samples, size, backend="auto"):
        calls.append(len(samples))
        return real(samples, size, backend)

    monkeypatch.setattr(executor_module, "crop_batch", counting)
    cpu = next(iter(make_loader(dataset, 8, seed=3, workers=0)))
    loader = _loader(dataset, 8, 0.0, seed=3, workers=0, gpu={"backend": _Refusing(sizes)})
    with loader:
        x, y = next(iter(loader))
    assert calls == [len(victims)]  # one batched call for all three, not one per image
    last = loader.prefetcher.last
    for victim in victims:
        position = last.names.index(victim)
        assert position in last.ready_at.tolist() and torch.equal(x[position], cpu[0][position])
    assert torch.equal(y, cpu[1])


def test_the_share_splits_each_batch_and_is_reported(hymenoptera):
    dataset = photos(hymenoptera, train_transform(), count=16)
    loader = _loader(dataset, 8, 0.5, seed=1, workers=0)
    with loader:
        for _ in loader:
            last = loader.prefetcher.last
            assert last.by_share == 4 and len(last.gpu) == 4 and last.share_s > 0 and last.other_s > 0
    assert loader.stats().cpu_share == 0.5 and loader.stats().to_dict()["cpu_share"] == 0.5
    assert "CPU share 0.50 (fixed)" in repr(loader)
    plain = _loader(dataset, 8, None, seed=1, workers=0)
    assert plain.stats().cpu_share == 0.0 and "CPU share" not in repr(plain)  # decode="cuda": all to the GPU
    assert make_loader(dataset, 8, seed=1, workers=0).stats().cpu_share is None  # the CPU path: no split


def test_the_stage_decodes_only_the_windows_for_a_decoder_with_roi(hymenoptera):
    dataset = photos(hymenoptera, train_transform(64), count=16)
    whole = [x for x, _ in _loader(dataset, 8, 0.0, seed=4, workers=0)]
    windows = [x for x, _ in _loader(dataset, 8, 0.0, seed=4, workers=0, gpu={"backend": CPUDecoder(roi=True)})]
    for a, b in zip(whole, windows, strict=True):
        assert torch.equal(a, b)  # the same source pixels with the same weights


@pytest.mark.parametrize(("options", "message"), [
    ({"cpu_share": 1.5}, "cpu_share"), ({"cpu_share": "half"}, "cpu_share"), ({"cpu_share": True}, "cpu_share"),
    ({"share_bounds": (0.6, 0.4)}, "share_bounds"),
])
def test_bad_shares_are_refused_with_the_field_named(options, message):
    with pytest.raises(ConfigError, match=message):
        GPUDecode(**options)


def test_the_modes_defaults():
    assert GPUDecode().starting_share() == 0.0 and not GPUDecode().controlled
    assert GPUDecode(mode="auto").controlled and GPUDecode(mode="auto").starting_share() == 0.3
    assert GPUDecode(cpu_share=0.7).starting_share() == 0.7 and not GPUDecode(cpu_share=0.7).controlled
    assert GPUDecode(cpu_share="auto", share_bounds=(0.5, 0.9)).starting_share() == 0.5


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_worker_processes_read_the_share_the_main_process_sets(hymenoptera, context):
    dataset = photos(hymenoptera, train_transform(), count=24)
    loader = _loader(dataset, 4, 0.0, seed=1, workers=Workers(2, kind="processes", context=context, persistent=True))
    with loader:
        first = iter(loader)
        next(first)
        assert loader.prefetcher.last.by_share == 0
        loader.prefetcher.share.set(1.0)  # as the controller does, from the stage's thread
        list(first)  # the rest of the epoch: batches the workers had begun before may still be at 0
        for _ in loader:  # a new epoch, the same (persistent) workers
            assert loader.prefetcher.last.by_share == 4
