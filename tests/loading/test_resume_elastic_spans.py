"""The pure functions under elastic resume (fastdata.order.unread, .progress):
what ``unread_after`` says is left is exactly what the ranks' shares,
read a prefix each, did not read -- for map-style (interleaved) and stream
(contiguous, windowed) dealing, training and evaluation, chains of jobs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdata.errors import ConfigError
from fastdata.order.partition import Share
from fastdata.order.progress import Pass, unread_after
from fastdata.order.unread import Unread


def _positions(unread: Unread) -> set[int]:
    return {p for a, b in unread.spans for p in range(a, b)}


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(0, 9), min_size=1, max_size=8).filter(lambda c: sum(c) > 0),
    jobs=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(0, 12)), min_size=1, max_size=4),
    stream=st.booleans(),
    train=st.booleans(),
    drop_last=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_what_is_left_is_what_the_ranks_did_not_read(counts, jobs, stream, train, drop_last, seed):
    total = sum(counts)
    remainder = "pad" if train else "even"
    window = 3 if stream and train else 0
    unread, read = Unread.whole(total), []
    # one-record blocks: the record at each reading position, inverted to find a record's position
    whole = Share(seed, 0, remainder="even", shuffle=train, window=window).records([1] * total)
    position_of = np.argsort(whole)
    for world, batch, stop in jobs:
        plan = Pass(world, not stream, remainder, batch, drop_last)
        per_rank = plan.batches(unread)
        # record numbers: which positions each rank's share holds, then the prefix it read
        shares = [Share(seed, 0, r, world, remainder=remainder, shuffle=train, window=window, interleave=not stream,
                        unread=unread) for r in range(world)]
        taken = [min(stop, n) * batch for n in per_rank]
        done = [s.records(counts)[:t] for s, t in zip(shares, taken)]
        positions = [position_of[s.records([1] * total)[:t]] for s, t in zip(shares, taken)]
        left = unread_after(unread, plan, stop, total)
        if stop > 0 and stop >= max(per_rank):  # every rank's pass is over (k = 0: nothing changes)
            assert len(left) == 0
            break
        assert _positions(left) == _positions(unread) - {int(p) for part in positions for p in part}
        read += [int(r) for part in done for r in part]
        unread = left
    # a record is read at most once, but for padding (at most world - 1 per job)
    assert len(read) - len(set(read)) <= sum(w - 1 for w, _, _ in jobs)


def test_windows_of_the_epoch_do_not_depend_on_the_world_size():
    counts = [7, 9, 4, 11, 30]
    one = Share(3, 2, remainder="even", window=8).records(counts)
    for world in (2, 3, 4):
        parts = [Share(3, 2, r, world, remainder="even", window=8).records(counts) for r in range(world)]
        assert np.array_equal(np.concatenate(parts), one)  # contiguous runs of the one reading order


def test_spans_text_round_trip_and_refusals():
    unread = Unread.of([(5, 9), (0, 2), (8, 12), (20, 20)])
    assert unread.spans == ((0, 2), (5, 12)) and len(unread) == 9
    assert Unread.parse(unread.text(), 12) == unread
    assert unread.at(np.array([0, 1, 2, 8])).tolist() == [0, 1, 5, 11]
    assert unread.between(1, 4) == [(1, 2), (5, 7)]
    assert unread.without([(6, 8), (11, 30)]).spans == ((0, 2), (5, 6), (8, 11))
    for bad in ("5-3", "0-2,1-4", "0-13", "a-b", "0-2,"):
        with pytest.raises(ConfigError, match="unread"):
            Unread.parse(bad, 12)
