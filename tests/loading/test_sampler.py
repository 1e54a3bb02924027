"""The order is a pure function of (seed, epoch, rank, world_size), checked by invariants."""

from __future__ import annotations

import numpy as np
import pytest

from fastdata import ConfigError
from fastdata.loading.sampler import ShardedSampler
from fastdata.order.partition import epoch_order
from fastdata.rng import SampleKey


def _shards(n, world, *, seed=0, epoch=0, train=True):
    return [ShardedSampler(n, seed=seed, epoch=epoch, rank=r, world_size=world, train=train).indices()
            for r in range(world)]


@pytest.mark.parametrize("n", [1, 7, 64, 101])
def test_epoch_order_is_a_permutation_that_changes_per_epoch_and_repeats_per_seed(n):
    orders = {(s, e): epoch_order(n, s, e) for s in (0, 1) for e in (0, 1)}
    for order in orders.values():
        assert sorted(order.tolist()) == list(range(n))
    assert np.array_equal(epoch_order(n, 0, 1), orders[(0, 1)])
    if n > 5:
        assert not np.array_equal(orders[(0, 0)], orders[(0, 1)])
        assert not np.array_equal(orders[(0, 0)], orders[(1, 0)])


def test_epoch_order_is_pinned():
    # A change here silently changes every user's data order: update on purpose only.
    assert epoch_order(10, 1234, 5).tolist() == [9, 1, 2, 3, 0, 7, 6, 8, 5, 4]
    assert epoch_order(5, 0, 0, shuffle=False).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("n, world", [(10, 1), (10, 2), (10, 3), (11, 4), (3, 4), (100, 8)])
def test_train_shards_are_equal_disjoint_up_to_padding_and_complete(n, world):
    for epoch in range(3):
        shards = _shards(n, world, epoch=epoch)
        size = -(-n // world)
        assert [len(s) for s in shards] == [size] * world
        flat = np.concatenate(shards)
        assert set(flat.tolist()) == set(range(n))  # nothing dropped
        padded = size * world - n
        assert len(flat) - len(set(flat.tolist())) == padded  # duplicates are only the padding
        if padded == 0:
            for a in range(world):
                for b in range(a + 1, world):
                    assert not set(shards[a].tolist()) & set(shards[b].tolist())


@pytest.mark.parametrize("n, world", [(10, 1), (10, 3), (11, 4), (3, 4), (97, 8)])
def test_eval_reads_every_sample_exactly_once(n, world):
    shards = _shards(n, world, train=False)
    flat = np.concatenate(shards).tolist()
    assert sorted(flat) == list(range(n))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    sampler = ShardedSampler(n, rank=world - 1, world_size=world, train=False, keys=False)
    assert len(sampler) == len(shards[-1]) == len(list(sampler))


def test_sampler_yields_keys_for_its_epoch_and_resumes_from_start():
    sampler = ShardedSampler(20, seed=3, rank=1, world_size=2)
    sampler.set_epoch(4)
    keys = list(sampler)
    assert all(isinstance(k, SampleKey) and k.seed == 3 and k.epoch == 4 for k in keys)
    assert [k.index for k in keys] == _shards(20, 2, seed=3, epoch=4)[1].tolist()
    sampler.set_start(7)
    assert list(sampler) == keys[7:]
    assert list(sampler) == keys  # the start applies once
    plain = ShardedSampler(20, seed=3, rank=1, world_size=2, keys=False, epoch=4)
    assert list(plain) == [k.index for k in keys]


@pytest.mark.parametrize(
    "kwargs", [{"length": 0}, {"length": 5, "rank": 2, "world_size": 2}, {"length": 5, "world_size": 0}]
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ConfigError):
        ShardedSampler(**kwargs)
