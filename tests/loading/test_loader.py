"""make_loader: reproducible batches whatever num_workers, epochs that advance
by themselves, refusal of repeated data across ranks, exact mid-epoch resume."""

from __future__ import annotations

import pytest
import torch

from fastdata import ConfigError, Prefetch, Workers, make_loader
from fastdata.order import ranks as ranks_module

from ._data import IndexImages, augmentation, global_draws, indices

N = 23


def _epochs(loader, count: int) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    return [[(x.clone(), y.clone()) for x, y in loader] for _ in range(count)]


def _without_global_draws(images: torch.Tensor) -> torch.Tensor:
    # row 2 holds draws from the global random/NumPy/torch streams, which
    # are per worker by design; everything else must not depend on workers
    kept = images.clone()
    kept[:, :, 2] = 0
    return kept


def _same(a, b, *, global_rows: bool = True) -> bool:
    if len(a) != len(b):
        return False
    view = (lambda t: t) if global_rows else _without_global_draws
    return all(torch.equal(view(x1), view(x2)) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(a, b))


def test_two_runs_with_one_seed_give_bit_identical_batches():
    def make(seed):
        return make_loader(IndexImages(N), 4, seed=seed, workers=Workers(2, context="fork"))

    with make(0) as a, make(0) as b, make(1) as c:
        first, second, other = _epochs(a, 2), _epochs(b, 2), _epochs(c, 2)
    for e in range(2):
        assert _same(first[e], second[e])  # global draws included: same workers, same seeds
        assert not _same(first[e], other[e], global_rows=False)
    assert indices(first[0][0][0]) != indices(first[1][0][0])  # new order each epoch


def test_same_samples_order_and_augmentation_for_0_1_2_workers():
    runs = []
    for workers in (0, 1, 2):
        with make_loader(IndexImages(N), 4, seed=3, workers=Workers(workers, context="fork")) as loader:
            runs.append(_epochs(loader, 2))
    for run in runs[1:]:
        for e in range(2):
            assert _same(run[e], runs[0][e], global_rows=False)
    batches = runs[0][0]
    assert len(batches) == N // 4  # drop_last for training
    seen = [i for x, y in batches for i in indices(x)]
    assert seen == [i for _, y in batches for i in y.tolist()] and len(set(seen)) == len(seen)


@pytest.mark.parametrize("seeding", ["sample", "worker"])
def test_workers_get_new_augmentation_every_epoch(seeding):
    def run(persistent):
        with make_loader(IndexImages(N), 4, seed=5, workers=Workers(2, persistent=persistent, context="fork"),
                         train=False, seeding=seeding) as loader:
            assert loader.dataloader.persistent_workers == persistent
            return _epochs(loader, 3)

    epochs = run(True)
    # persistent workers are reseeded per epoch exactly as fresh workers are
    assert all(_same(a, b) for a, b in zip(epochs, run(False)))
    # eval order is fixed, so the same sample sits at the same place every epoch
    assert [indices(x) for x, _ in epochs[0]] == [indices(x) for x, _ in epochs[2]]
    for later in epochs[1:]:
        for (x0, _), (x1, _) in zip(epochs[0], later):
            assert augmentation(x0) != augmentation(x1)
            assert global_draws(x0) != global_draws(x1)


def test_worker_seeding_differs_per_worker_but_repeats():
    def run(workers):
        with make_loader(IndexImages(16), 4, workers=Workers(workers, context="fork"), seeding="worker",
                         train=False) as loader:
            return _epochs(loader, 1)[0]

    two = run(2)
    assert _same(two, run(2))
    # each worker draws its own stream: first samples of workers 0 and 1 differ
    assert augmentation(two[0][0])[0] != augmentation(two[1][0])[0]


def test_epochs_advance_by_themselves_and_set_epoch_rewinds():
    loader = make_loader(IndexImages(N), 5, workers=0)
    assert len(loader) == N // 5 and loader.epoch == 0
    e0 = [indices(x) for x, _ in loader]
    assert loader.epoch == 1
    e1 = [indices(x) for x, _ in loader]
    assert e0 != e1
    half = iter(loader)
    next(half)
    assert loader.state_dict()["epoch"] == 2 and loader.state_dict()["read"] == 5
    assert indices(next(iter(loader))[0]) != e0[0]  # an abandoned pass still counts as an epoch
    assert loader.epoch == 3
    loader.set_epoch(0)
    assert [indices(x) for x, _ in loader] == e0


@pytest.mark.parametrize("stop_after", [0, 1, 3])
def test_resume_mid_epoch_is_bit_identical_to_an_uninterrupted_run(stop_after):
    settings = {"seed": 11, "prefetch": Prefetch("cpu", mean=(0.5,), std=(0.25,))}
    with make_loader(IndexImages(N), 4, workers=Workers(2, context="fork"), **settings) as reference:
        expected = _epochs(reference, 3)
    with make_loader(IndexImages(N), 4, workers=Workers(1, context="fork"), **settings) as first:
        _epochs(first, 1)
        it = iter(first)
        for _ in range(stop_after):
            next(it)
        state = first.state_dict()
    assert state["epoch"] == 1 and state["read"] == 4 * stop_after and state["seed"] == 11
    with make_loader(IndexImages(N), 4, workers=0, **settings) as resumed:
        resumed.load_state_dict(state)
        rest, following = _epochs(resumed, 2)
    # normalised floats: compare through the index row, then whole tensors minus the global-draw row
    assert _same(rest, expected[1][stop_after:], global_rows=False)
    assert _same(following, expected[2], global_rows=False)


def test_state_after_a_full_epoch_points_at_the_next_and_mismatches_are_refused():
    loader = make_loader(IndexImages(N), 4, workers=0)
    list(loader)
    state = loader.state_dict()
    assert (state["epoch"], state["read"], state["unread"]) == (1, 0, f"0-{N}")
    # another batch size or world size is an elastic resume (tests/loading/test_resume_elastic*.py)
    make_loader(IndexImages(N), 8, workers=0, rank=0, world_size=2).load_state_dict(state)
    with pytest.raises(ConfigError, match="seed"):
        make_loader(IndexImages(N), 4, workers=0, seed=1).load_state_dict(state)
    with pytest.raises(ConfigError, match="dataset_length"):
        make_loader(IndexImages(N + 1), 4, workers=0).load_state_dict(state)
    with pytest.raises(ConfigError, match="version"):
        loader.load_state_dict({**state, "version": 99})
    with pytest.raises(ConfigError, match="read"):
        loader.load_state_dict({**state, "read": 99})


def test_explicit_shards_are_disjoint_complete_and_equal():
    shards = [make_loader(IndexImages(N), 3, workers=0, rank=r, world_size=3, drop_last=False) for r in range(3)]
    seen = [[i for x, _ in loader for i in indices(x)] for loader in shards]
    assert len({len(loader) for loader in shards}) == 1
    assert set().union(*map(set, seen)) == set(range(N))
    evals = [make_loader(IndexImages(N), 3, workers=0, rank=r, world_size=3, train=False) for r in range(3)]
    seen = sorted(i for loader in evals for x, _ in loader for i in indices(x))
    assert seen == list(range(N))


def test_refuses_when_ranks_would_read_the_same_data(monkeypatch):
    monkeypatch.setattr(ranks_module, "_group", lambda: (0, 2))
    for place in ({"distributed": False}, {"rank": 0, "world_size": 1}):
        with pytest.raises(ConfigError, match="unset to shard by rank"):
            make_loader(IndexImages(N), 4, workers=0, **place)
        make_loader(IndexImages(N), 4, train=False, workers=0, **place)  # evaluating everything is fine
    assert make_loader(IndexImages(N), 4, workers=0).world_size == 2
    monkeypatch.setattr(ranks_module, "_group", lambda: None)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="init_process_group"):
        make_loader(IndexImages(N), 4, workers=0)
    with pytest.raises(ConfigError, match="init_process_group"):
        make_loader(IndexImages(N), 4, distributed=True, workers=0)
    assert make_loader(IndexImages(N), 4, distributed=(1, 2), workers=0).rank == 1  # the older spelling
    with pytest.raises(ConfigError, match="not both"):
        make_loader(IndexImages(N), 4, distributed=(1, 2), rank=1, world_size=2, workers=0)
    with pytest.raises(ConfigError, match="both rank and world_size"):
        make_loader(IndexImages(N), 4, rank=1, workers=0)


def test_bad_arguments_raise():
    with pytest.raises(ConfigError, match="0-1 units"):
        Prefetch("cpu", mean=(123.7, 116.3, 103.5), std=(58.4, 57.1, 57.4))
    with pytest.raises(ConfigError, match="batch_size"):
        make_loader(IndexImages(N), 0)
    with pytest.raises(ConfigError, match="seeding"):
        make_loader(IndexImages(N), 4, seeding="global")
    with pytest.raises(ConfigError, match="context"):
        Workers(2, context="threads")
    with pytest.raises(ConfigError, match="workers must be"):
        make_loader(IndexImages(N), 4, workers="2")


def test_spawn_workers_give_the_same_batches():
    with make_loader(IndexImages(N, kind="tensor"), 4, seed=2, workers=0) as plain:
        expected = _epochs(plain, 1)
    with make_loader(IndexImages(N, kind="tensor"), 4, seed=2, workers=Workers(2, context="spawn")) as spawned:
        assert _same(_epochs(spawned, 1)[0], expected[0], global_rows=False)


def test_no_full_batch_is_refused_and_close_ends_the_pass():
    with pytest.raises(ConfigError, match="drop_last=False"):
        make_loader(IndexImages(5), 4, workers=0, rank=0, world_size=2)
    loader = make_loader(IndexImages(N), 4, workers=Workers(1, context="fork"))
    it = iter(loader)
    next(it)
    loader.close()
    with pytest.raises(StopIteration):
        next(it)
    assert loader.dataloader._iterator is None  # persistent workers stopped
    assert (loader.state_dict()["epoch"], loader.state_dict()["read"]) == (0, 4)
    assert len(list(loader)) == N // 4  # the loader still works afterwards, with the next epoch
    assert loader.epoch == 2


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("workers", [0, 2])
def test_prefetch_to_cuda_equals_the_cpu_path(workers):
    norm = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225), "memory_format": torch.channels_last}
    settings = {"seed": 4, "workers": Workers(workers, context="fork")}
    with make_loader(IndexImages(N), 4, prefetch=Prefetch("cpu", **norm), **settings) as on_cpu:
        expected = _epochs(on_cpu, 2)
    with make_loader(IndexImages(N), 4, prefetch=Prefetch("cuda", **norm), **settings) as on_gpu:
        assert on_gpu.dataloader.pin_memory
        got = [[(x.cpu(), y.cpu()) for x, y in on_gpu] for _ in range(2)]
        assert all(x.is_contiguous(memory_format=torch.channels_last) for x, _ in got[0])
    for e in range(2):  # row 2 (global-stream draws) is the main process's with workers=0: it moved on between runs
        assert _same(got[e], expected[e], global_rows=False)
