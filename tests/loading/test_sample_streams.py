"""One reusable generator set to each sample's stream (order/seeds.SampleStreams,
used by the loader threads' batch planning) draws what sample_generator draws."""

from __future__ import annotations

import numpy as np
import pytest

from fastdata.order import seeds


def _draws(gen: np.random.Generator, k: int) -> list:
    # uniform/random use whole 64-bit words, small integers() the buffered 32-bit halves
    return [(gen.uniform(0.08, 1.0), int(gen.integers(0, 300)), gen.random(), int(gen.integers(0, 2**40)))
            for _ in range(k)]


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # sample_generator(..., -1)
@pytest.mark.parametrize("first", [(0, 0, 0), (0, 0, 7), (3, 1, 2**63 + 5), (2, 1, -1)])
def test_first_and_following_streams_match_sample_generator(first):
    streams = seeds.SampleStreams()
    rs = np.random.default_rng(1)
    keys = [first] + [(int(rs.integers(0, 3)), int(rs.integers(0, 3)), int(rs.integers(0, 2**64, dtype=np.uint64)))
                      for _ in range(200)]
    for i, (seed, epoch, index) in enumerate(keys):
        k = 1 + i % 4  # streams left part-way through a buffer before the next is set
        assert _draws(streams.at(seed, epoch, index), k) == _draws(seeds.sample_generator(seed, epoch, index), k)


def test_same_generator_object():
    streams = seeds.SampleStreams()
    assert streams.at(0, 0, 1) is streams.at(5, 2, 9) is streams.generator
