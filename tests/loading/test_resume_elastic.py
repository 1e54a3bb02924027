"""Elastic exact resume: a state saved by a job of one size finishes the
epoch in jobs of others -- every sample once, with the pixels of an
uninterrupted single-rank run -- for map-style datasets and streams,
training and evaluation (issue 31)."""

from __future__ import annotations

import random

import pytest

from ._data import write_records
from ._elastic import chain, check_epoch, reference

N = 331  # prime: no world size or batch size divides it
SETUPS = [(w, b) for w in (1, 2, 3, 4) for b in (1, 5, 8, 16)]
# each chain: four jobs (three interruptions); over the eight chains every
# (world size, batch size) pair comes twice, at different places in a chain
CHAINS = [[SETUPS[(2 * c + 5 * j) % 16] for j in range(4)] for c in range(8)]
ISSUE_CHAIN = [(4, 8), (2, 16), (3, 5), (1, 1)]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("elastic"), N)


@pytest.fixture(scope="module")
def expected(records):
    return {(kind, train): reference(kind, N, records, seed=7, train=train)
            for kind in ("map", "stream") for train in (True, False)}


def test_the_chains_cover_every_pair_in_every_place():
    assert sorted(s for c in CHAINS for s in c) == sorted(SETUPS * 2)
    assert all(len(set(c)) == 4 for c in CHAINS)


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("kind", ["map", "stream"])
@pytest.mark.parametrize("setups", CHAINS + [ISSUE_CHAIN], ids=lambda s: "-".join(f"W{w}B{b}" for w, b in s))
def test_a_chain_of_three_interruptions_reads_each_sample_once_with_its_pixels(records, expected, kind, train,
                                                                              setups):
    draw = random.Random(f"{kind}{train}{setups}")
    reads, _ = chain(kind, N, records, setups, seed=7, train=train, draw=draw)
    check_epoch(reads, expected[kind, train], N, train=train, last=setups[-1])
