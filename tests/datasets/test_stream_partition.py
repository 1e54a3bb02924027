"""The streaming plan by its invariants: a partition of every record, disjoint
across ranks and workers, balanced, sequential runs, a pure function of its inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdata.datasets.partition import plan
from fastdata.errors import ConfigError


def _records(counts, segments):
    starts = np.concatenate([[0], np.cumsum(counts)])
    return [int(starts[s]) + i for s, a, b in segments for i in range(a, b)]


@settings(max_examples=150, deadline=None)
@given(
    counts=st.lists(st.integers(0, 9), min_size=1, max_size=7),
    world=st.integers(1, 4),
    workers=st.integers(1, 3),
    seed=st.integers(0, 2**40),
    epoch=st.integers(0, 50),
    shuffle=st.booleans(),
    drop_last=st.booleans(),
)
def test_every_record_once_and_balanced(counts, world, workers, seed, epoch, shuffle, drop_last):
    total = sum(counts)
    per_rank, everything = [], []
    for rank in range(world):
        mine = []
        for worker in range(workers):
            kw = dict(seed=seed, epoch=epoch, rank=rank, world_size=world, worker=worker, num_workers=workers)
            segments = plan(counts, shuffle=shuffle, drop_last=drop_last, **kw)
            assert segments == plan(counts, shuffle=shuffle, drop_last=drop_last, **kw)
            assert all(0 <= a < b <= counts[s] for s, a, b in segments)
            assert len(segments) <= len(counts) + 1  # long sequential runs, not scattered records
            mine += _records(counts, segments)
        per_rank.append(len(mine))
        everything += mine
    assert len(everything) == len(set(everything))
    if drop_last:
        assert per_rank == [total // world] * world
    else:
        assert sorted(everything) == list(range(total))
        assert max(per_rank) - min(per_rank) <= 1
    if not shuffle:
        assert everything == sorted(everything)


def test_order_changes_with_epoch_and_seed():
    counts = [5, 7, 3, 9]
    base = plan(counts, seed=1, epoch=0)
    assert plan(counts, seed=1, epoch=1) != base and plan(counts, seed=2, epoch=0) != base
    assert plan(counts, seed=1, epoch=0) == base


def test_one_shard_still_moves_between_ranks_across_epochs():
    firsts = {plan([100], seed=0, epoch=e, rank=1, world_size=2)[0][1] for e in range(5)}
    assert len(firsts) > 1


def test_bad_places_are_refused():
    with pytest.raises(ConfigError):
        plan([3], seed=0, epoch=0, rank=2, world_size=2)
    with pytest.raises(ConfigError):
        plan([3], seed=0, epoch=0, worker=1, num_workers=1)
