"""loader.indices(): which samples a rank reads, without reading them."""

from __future__ import annotations

import pytest

from fastdata import ConfigError, make_loader

from ._data import IndexImages


@pytest.mark.parametrize("train", [True, False])
def test_indices_are_the_samples_each_rank_reads_in_order(train):
    n, ranks = 22, 3
    read, listed = [], []
    for rank in range(ranks):
        loader = make_loader(IndexImages(n), 2, seed=5, rank=rank, world_size=ranks, train=train, drop_last=False,
                             workers=0)
        expected = loader.indices().tolist()
        got = [int(i) for _, y in loader for i in y]
        assert got == expected  # the order it reads them in
        assert loader.indices(0).tolist() == expected and loader.indices().tolist() == loader.indices(1).tolist()
        read += got
        listed.append(expected)
    if train:  # shares padded to equal sizes: every sample at least once
        assert set(read) == set(range(n)) and len({len(x) for x in listed}) == 1
    else:  # evaluation: every sample exactly once over the ranks
        assert sorted(read) == list(range(n))


def test_a_new_epoch_lists_a_new_order():
    loader = make_loader(IndexImages(40), 4, seed=1, workers=0)
    assert loader.indices(0).tolist() != loader.indices(1).tolist()
    assert sorted(loader.indices(0).tolist()) == sorted(loader.indices(1).tolist())


def test_a_stream_says_it_has_no_index_list(tmp_path):
    class Stream:
        pass

    loader = make_loader(IndexImages(8), 4, workers=0)
    loader.order = Stream()
    with pytest.raises(ConfigError, match="stream"):
        loader.indices()
