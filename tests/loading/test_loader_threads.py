"""Workers(kind="threads"): the same batches as worker processes, samples
built at the same time, errors raised in the caller, a pool that stops."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from fastdata import ConfigError, Workers, make_loader, open_dataset, rng
from fastdata.order.generators import generator, use

from ._data import IndexImages, indices, pixels, write_records

N = 23


def _epochs(loader, count: int) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    return [[(x.clone(), y.clone()) for x, y in loader] for _ in range(count)]


def _without_global_draws(batches):
    # row 2 holds draws from the global random/NumPy/torch streams: per worker by design
    out = []
    for x, y in batches:
        x = x.clone()
        x[:, :, 2] = 0
        out.append((x, y))
    return out


def _equal(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x1, x2) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(a, b))


def _loader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fastdata-loader")]


class _Yielding(IndexImages):
    """IndexImages that lets other threads run inside each sample's random
    stream, as a decode that releases the GIL does."""

    def __getitem__(self, key):
        with rng.sample_scope(key) as i:
            time.sleep(0.001)
            return pixels(i, size=self.size), i


@pytest.mark.parametrize("train", [True, False])
def test_threads_give_the_batches_of_worker_processes_and_of_the_main_process(train):
    runs = {}
    for name, workers in (("main", Workers(0)), ("processes", Workers(2, context="fork")),
                          ("threads", Workers(3, kind="threads"))):
        with make_loader(_Yielding(N), 4, seed=5, train=train, workers=workers) as loader:
            runs[name] = [_without_global_draws(epoch) for epoch in _epochs(loader, 2)]
    for e in range(2):
        assert _equal(runs["threads"][e], runs["main"][e])
        assert _equal(runs["threads"][e], runs["processes"][e])
    seen = [i for x, _ in runs["threads"][0] for i in indices(x)]
    assert len(seen) == len(set(seen)) == (N // 4 * 4 if train else N)
    assert len(runs["threads"][0]) == len(make_loader(IndexImages(N), 4, train=train, workers=Workers(2, kind="threads")))


def test_threads_resume_mid_epoch_bit_identical():
    with make_loader(IndexImages(N), 4, seed=2, workers=Workers(2, kind="threads")) as full:
        reference = _epochs(full, 1)[0]
    with make_loader(IndexImages(N), 4, seed=2, workers=Workers(2, kind="threads")) as first:
        it = iter(first)
        for _ in range(2):
            next(it)
        state = first.state_dict()
    with make_loader(IndexImages(N), 4, seed=2, workers=Workers(2, kind="threads")) as second:
        second.load_state_dict(state)
        rest = [(x.clone(), y.clone()) for x, y in second]
    assert _equal(_without_global_draws(rest), _without_global_draws(reference[2:]))


class _Rendezvous(IndexImages):
    """Each sample waits until another thread is inside a sample too: it can
    only finish when two samples are built at the same time."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.barrier = threading.Barrier(2, timeout=20)
        self.threads: set[str] = set()

    def __getitem__(self, key):
        self.threads.add(threading.current_thread().name)
        self.barrier.wait()
        return super().__getitem__(key)


def test_two_threads_build_batches_at_the_same_time():
    data = _Rendezvous(8)
    with make_loader(data, 1, train=False, workers=Workers(2, kind="threads")) as loader:
        got = [int(y) for _, y in loader]
    assert got == list(range(8))
    assert len(data.threads) == 2 and all(name.startswith("fastdata-loader") for name in data.threads)


def test_each_thread_keeps_its_own_sample_generator():
    barrier, seen = threading.Barrier(2, timeout=20), {}

    def run(seed: int) -> None:
        mine = np.random.default_rng(seed)
        with use(mine):
            barrier.wait()  # both threads are inside their own `use` now
            seen[seed] = generator() is mine and rng.generator() is mine
            barrier.wait()  # neither leaves (and restores) before both looked

    threads = [threading.Thread(target=run, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {1: True, 2: True}


class _Broken(IndexImages):
    def __getitem__(self, key):
        with rng.sample_scope(key) as i:
            if i == 6:
                raise ValueError("sample 6 is broken")
        return super().__getitem__(key)


def test_a_sample_error_reaches_the_caller_and_the_loader_runs_again():
    loader = make_loader(_Broken(N), 4, train=False, workers=Workers(2, kind="threads"))
    with pytest.raises(ValueError, match="sample 6 is broken"):
        for _ in loader:
            pass
    assert not _loader_threads()  # the failed pass stopped the pool
    batches = iter(loader)  # a new pass starts a new pool: batches before sample 6 come
    assert [int(i) for i in next(batches)[1]] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="sample 6 is broken"):
        next(batches)
    loader.close()
    assert not _loader_threads()


def test_close_stops_the_threads_and_an_abandoned_pass_moves_on():
    loader = make_loader(IndexImages(N), 4, seed=1, workers=Workers(2, kind="threads"))
    first = next(iter(loader))
    assert _loader_threads()
    assert loader.epoch == 0
    second = next(iter(loader))  # abandoned epoch 0: this is epoch 1
    assert loader.epoch == 1 and not torch.equal(first[0], second[0])
    loader.close()
    assert not _loader_threads()


def test_non_persistent_threads_stop_after_each_pass():
    with make_loader(IndexImages(N), 4, workers=Workers(2, kind="threads", persistent=False)) as loader:
        assert len(list(loader)) == N // 4
        assert not _loader_threads()


def test_threads_refuse_streams_worker_seeding_and_a_start_method(tmp_path):
    stream = open_dataset(write_records(tmp_path / "d", 10), streaming=True)
    with pytest.raises(ConfigError, match="map-style"):
        make_loader(stream, 2, workers=Workers(2, kind="threads"))
    with pytest.raises(ConfigError, match="seeding='sample'"):
        make_loader(IndexImages(N), 2, seeding="worker", workers=Workers(2, kind="threads"))
    with pytest.raises(ConfigError, match="context"):
        Workers(2, kind="threads", context="spawn")
    with pytest.raises(ConfigError, match="kind"):
        Workers(2, kind="thread")  # type: ignore[arg-type]
