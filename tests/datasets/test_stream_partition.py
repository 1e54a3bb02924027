"""The one partition scheme (fastdata.order.partition) by its invariants: a
partition of every record, disjoint across ranks and workers, balanced, long
sequential runs for streams, a pure function of its inputs; and the
map-style sampler is the same scheme with one record per block."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdata.errors import ConfigError
from fastdata.loading.sampler import ShardedSampler
from fastdata.order.partition import Deal, Share


def _runs(records: np.ndarray) -> int:
    """Sequential runs in a reading order (record numbers that follow each other)."""
    return int(np.count_nonzero(np.diff(records) != 1)) + 1 if len(records) else 0


@settings(max_examples=150, deadline=None)
@given(
    counts=st.lists(st.integers(0, 9), min_size=1, max_size=7),
    world=st.integers(1, 4),
    workers=st.integers(1, 3),
    unit=st.sampled_from([None, 1, 2, 5]),
    seed=st.integers(0, 2**40),
    epoch=st.integers(0, 50),
    shuffle=st.booleans(),
    remainder=st.sampled_from(["even", "pad", "drop"]),
    window=st.sampled_from([0, 1, 3, 8]),
    interleave=st.booleans(),
)
def test_every_record_once_and_balanced(counts, world, workers, unit, seed, epoch, shuffle, remainder, window,
                                        interleave):
    total = sum(counts)
    per_rank, everything = [], []
    for rank in range(world):
        share = Share(seed, epoch, rank, world, remainder=remainder, shuffle=shuffle, window=window,
                      interleave=interleave)
        records = share.records(counts)
        assert np.array_equal(records, share.records(counts)) and len(records) == share.size(total)
        mine = []
        for worker in range(workers):
            deal = Deal(worker, workers, unit=unit)
            chunks = list(deal.chunks(len(records), share.window))
            if window > 1:
                assert all(len(c) <= window for c in chunks)  # a reader holds one window at most
            mine += records[np.concatenate(chunks)].tolist() if chunks else []
        assert sorted(mine) == sorted(records.tolist())  # the workers split the rank's part exactly
        per_rank.append(len(records))
        everything += records.tolist()
    assert set(everything) <= set(range(total))
    assert max(per_rank) - min(per_rank) <= (0 if remainder != "even" else 1)
    if remainder == "even":
        assert sorted(everything) == list(range(total))
    elif remainder == "drop":
        assert len(set(everything)) == len(everything) == total // world * world
    else:
        assert set(everything) == set(range(total)) and len(everything) - total == per_rank[0] * world - total
    if not shuffle and not interleave and remainder != "pad":  # padding wraps round to the start
        assert everything == sorted(everything)
    if not interleave and (not shuffle or window <= 1) and remainder == "even":
        # streams: one rank reads few long runs (at most one per shard, plus the wrap-round)
        assert sum(_runs(Share(seed, epoch, r, world, shuffle=shuffle).records(counts)) for r in range(world)) \
            <= len(counts) + world


def test_order_changes_with_epoch_and_seed():
    counts = [5, 7, 3, 9]
    base = Share(1, 0).records(counts)
    assert not np.array_equal(Share(1, 1).records(counts), base)
    assert not np.array_equal(Share(2, 0).records(counts), base)
    assert np.array_equal(Share(1, 0).records(counts), base)


def test_one_shard_still_moves_between_ranks_across_epochs():
    firsts = {int(Share(0, e, rank=1, world_size=2).records([100])[0]) for e in range(5)}
    assert len(firsts) > 1


def test_round_robin_deal_by_batches_gives_batches_in_sequence_order():
    records = Share(3, 2, window=8).records([7, 9, 4, 11])
    start, batch = 5, 4
    for workers in (1, 2, 3):
        parts = [records[Deal(w, workers, unit=batch, start=start).positions(len(records))] for w in range(workers)]
        # a DataLoader takes batch j from worker j % workers, the worker's (j // workers)-th
        count = -(-(len(records) - start) // batch)
        taken = [parts[j % workers][batch * (j // workers):batch * (j // workers + 1)] for j in range(count)]
        assert np.array_equal(np.concatenate(taken), records[start:])


def test_the_sampler_is_the_scheme_with_one_record_per_block():
    for world in (1, 3):
        for rank in range(world):
            sampler = ShardedSampler(20, seed=4, rank=rank, world_size=world, epoch=2, keys=False)
            share = Share(4, 2, rank, world, remainder="pad", interleave=True)
            assert list(sampler) == share.records(total=20).tolist() == share.records([1] * 20).tolist()


def test_bad_places_are_refused():
    with pytest.raises(ConfigError, match="rank"):
        Share(0, 0, rank=2, world_size=2)
    with pytest.raises(ConfigError, match="worker"):
        Deal(1, 1)
    with pytest.raises(ConfigError, match="remainder"):
        Share(0, 0, remainder="wrap")
