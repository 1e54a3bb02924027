"""make_loader over open_dataset(path, streaming=True): the same prefetcher,
seeded workers and exact mid-epoch resume as map-style datasets, and every
sample once per epoch across ranks and workers."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from fastdata import ConfigError, Prefetch, Workers, make_loader, open_dataset
from fastdata.loading.seeding import WorkerSeeder
from fastdata.loading.streamed import StreamFeed

from ._data import StreamPixels, augmentation, global_draws, indices, write_records

N = 27


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("stream"), N)


def _stream(root, **kwargs):
    return open_dataset(root, streaming=True, transform=StreamPixels(**kwargs.pop("pixels", {})), **kwargs)


def _epochs(loader, count: int) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    return [[(x.clone(), y.clone()) for x, y in loader] for _ in range(count)]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x1, x2) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(a, b))


def test_same_batches_for_0_1_2_workers_and_new_ones_every_epoch(records):
    runs = []
    for workers in (0, 1, 2):
        with make_loader(_stream(records), 4, seed=3, workers=Workers(workers, context="fork")) as loader:
            assert isinstance(loader.dataloader.dataset, StreamFeed)
            runs.append(_epochs(loader, 2))
    assert all(_same(run[e], runs[0][e]) for run in runs[1:] for e in range(2))
    first, second = runs[0]
    assert len(first) == N // 4  # padded to N (one rank), drop_last for training
    seen = [i for x, y in first for i in indices(x)]
    assert seen == [t for _, y in first for t in y.tolist()] and len(set(seen)) == len(seen)
    assert [indices(x) for x, _ in first] != [indices(x) for x, _ in second]
    assert seen != sorted(seen)  # shuffled: shards, rotation and windows


def test_workers_are_seeded_per_rank_and_epoch(records):
    def run(rank):
        stream = _stream(records, pixels={"global_draws": True})
        with make_loader(stream, 3, seed=5, rank=rank, world_size=2, train=False,
                         workers=Workers(2, context="fork")) as loader:
            assert isinstance(loader.dataloader.worker_init_fn, WorkerSeeder)
            assert loader.dataloader.persistent_workers
            return _epochs(loader, 2)

    first = run(0)
    assert all(_same(a, b) for a, b in zip(first, run(0)))  # global draws included: reruns repeat
    # eval order is fixed; persistent workers still get new streams each epoch
    assert [indices(x) for x, _ in first[0]] == [indices(x) for x, _ in first[1]]
    for (x0, _), (x1, _) in zip(*first):
        assert augmentation(x0) != augmentation(x1) and global_draws(x0) != global_draws(x1)
    other = run(1)[0]
    assert global_draws(first[0][0][0]) != global_draws(other[0][0])


@pytest.mark.parametrize("stop_after", [0, 1, 3])
def test_resume_mid_epoch_is_bit_identical_to_an_uninterrupted_run(records, stop_after):
    prefetch = Prefetch("cpu", mean=(0.5,), std=(0.25,))
    with make_loader(_stream(records), 4, seed=11, prefetch=prefetch, workers=Workers(2, context="fork")) as reference:
        assert reference.prefetcher is not None
        expected = _epochs(reference, 3)
    with make_loader(_stream(records), 4, seed=11, prefetch=prefetch, workers=Workers(1, context="fork")) as first:
        _epochs(first, 1)
        it = iter(first)
        for _ in range(stop_after):
            next(it)
        state = first.state_dict()
    assert state["epoch"] == 1 and state["read"] == 4 * stop_after and state["dataset_length"] == N
    with make_loader(_stream(records), 4, seed=11, prefetch=prefetch, workers=Workers(2, context="fork")) as resumed:
        resumed.load_state_dict(state)
        rest, following = _epochs(resumed, 2)
    assert rest[0][0].dtype == torch.float32
    assert _same(rest, expected[1][stop_after:])
    assert _same(following, expected[2])


@pytest.mark.parametrize("n, train", [(N, False), (N - 1, True), (N, True)])
@pytest.mark.parametrize("spelling", ["loader", "stream"])
def test_each_sample_once_per_epoch_across_two_ranks_and_two_workers(tmp_path, n, train, spelling):
    root = write_records(tmp_path, n)
    per_epoch = [[], []]
    lengths = []
    for rank in range(2):
        place = {"rank": rank, "world_size": 2}
        stream = _stream(root, **place) if spelling == "stream" else _stream(root)
        loader = make_loader(stream, 3, seed=2, train=train, drop_last=False, workers=Workers(2, context="fork"),
                             **({} if spelling == "stream" else place))
        assert loader.rank == rank and loader.world_size == 2
        with loader:
            for epoch in range(2):
                batches = [y.tolist() for _, y in loader]
                assert len(batches) == len(loader)
                per_epoch[epoch].append([t for batch in batches for t in batch])
        lengths.append(len(per_epoch[0][-1]))
    for ranks in per_epoch:
        counts = Counter(ranks[0] + ranks[1])
        assert set(counts) == set(range(n))
        assert sum(counts.values()) - n == (n % 2 if train else 0)  # training pads odd n with one repeat
    if train:
        assert lengths[0] == lengths[1]
        assert per_epoch[0] != per_epoch[1]


def test_the_stream_seed_is_the_default_and_foreign_streams_are_refused(records):
    assert make_loader(_stream(records, seed=6), 4, workers=0).seed == 6
    assert make_loader(_stream(records, seed=6), 4, seed=1, workers=0).seed == 1

    class Numbers(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(4))

    with pytest.raises(ConfigError, match="fastdata's streams"):
        make_loader(Numbers(), 2, workers=0)


def test_custom_collate_fn(records):
    def raw(batch):
        return [image[0, 0, 0] for image, _ in batch], [t for _, t in batch]

    loader = make_loader(_stream(records), 5, train=False, workers=0, collate_fn=raw)
    first = next(iter(loader))
    assert first == ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])
