"""Worker and main-process seeding: distinct across workers and ranks, identical across reruns."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from fastdata import ConfigError, rng, seed_everything, seed_worker
from fastdata.loading.seeding import WorkerSeeder, seed_process

from ._data import IndexImages, global_draws


def _draws() -> tuple:
    return (random.random(), float(np.random.random()), float(torch.rand(())), float(rng.generator().random()))


def test_seed_process_is_a_pure_function_of_its_inputs():
    seen = {}
    for args in [(0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 1, 0), (0, 1, 0, 0), (1, 0, 0, 0)]:
        seed_process(*args)
        seen[args] = _draws()
    seed_process(0, 0, 1, 0)
    assert _draws() == seen[(0, 0, 1, 0)]
    # every stream differs whenever any input differs
    for i in range(4):
        assert len({d[i] for d in seen.values()}) == len(seen)


def _worker_draws(worker_init_fn, *, num_workers=2, seed=0, monkeypatch=None, rank=None):
    if rank is not None:
        monkeypatch.setenv("RANK", str(rank))
    loader = DataLoader(
        IndexImages(8), batch_size=2, num_workers=num_workers, worker_init_fn=worker_init_fn,
        generator=torch.Generator().manual_seed(seed), multiprocessing_context="fork",
    )
    return [global_draws(images.permute(0, 3, 1, 2)) for images, _ in loader]  # default_collate: NHWC


def test_seed_worker_distinct_across_workers_and_ranks_identical_across_reruns(monkeypatch):
    rank0 = _worker_draws(seed_worker, monkeypatch=monkeypatch, rank=0)
    assert _worker_draws(seed_worker, monkeypatch=monkeypatch, rank=0) == rank0
    # batches alternate between the two workers: their first draws differ
    assert rank0[0] != rank0[1]
    rank1 = _worker_draws(seed_worker, monkeypatch=monkeypatch, rank=1)
    assert rank1 != rank0
    assert _worker_draws(seed_worker, monkeypatch=monkeypatch, rank=0, seed=1) != rank0


def test_worker_seeder_uses_its_seed_rank_and_epoch():
    runs = {
        (seed, rank, epoch): _worker_draws(WorkerSeeder(seed, rank=rank, epoch=epoch), seed=123)
        for seed, rank, epoch in [(0, 0, 0), (0, 1, 0), (0, 0, 1), (5, 0, 0)]
    }
    assert len({str(v) for v in runs.values()}) == len(runs)
    assert _worker_draws(WorkerSeeder(0, rank=1), seed=999) == runs[(0, 1, 0)]  # the loader's generator is ignored


def test_seed_worker_outside_a_worker_raises():
    with pytest.raises(ConfigError, match="seed_everything"):
        seed_worker(0)


def test_seed_everything_repeats_and_sets_deterministic_flags(monkeypatch):
    assert seed_everything(7) == 7
    first = _draws()
    seed_everything(7)
    assert _draws() == first
    seed_everything(8)
    assert _draws() != first
    # the real call costs seconds on first use and is process-wide: record it instead
    calls = []
    monkeypatch.setattr(torch, "use_deterministic_algorithms", lambda flag: calls.append(flag))
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    seed_everything(7)
    assert calls == [] and torch.backends.cudnn.benchmark  # deterministic=False leaves flags alone
    seed_everything(7, deterministic=True)
    assert calls == [True]
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
