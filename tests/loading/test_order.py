"""fastdata.order: the seeds every stream derives from (pinned: a change here
changes users' data order or augmentation), and the one rank resolver under
each spelling it serves."""

from __future__ import annotations

import pytest

from fastdata import ConfigError
from fastdata.order import Place, resolve_place, seeds
from fastdata.order import ranks as ranks_module


def test_seeds_are_pinned():
    assert seeds.sample_generator(1, 0, 5).random() == 0.9601100149775774
    assert seeds.worker_generator(1, 2, 3, 4).random() == 0.6932183058653566
    assert seeds.process_seeds(1, 2, 3, 4) == (13752635748059411184, 916856893, 1835808421432588723)
    assert seeds.epoch_permutation(6, 1, 2).tolist() == [2, 4, 5, 3, 1, 0]
    assert seeds.rotation(1, 2, 100) == 69 and seeds.rotation(1, 2, 1) == 0
    assert seeds.window_draws(2, 1, 2).tolist() == [4122066377809307816, 9902637885725442452]
    # what converters/plan.py drew for (seed, purpose, class) before it asked this module
    assert seeds.conversion_generator(3, 1, 2).random() == 0.43696838798137627
    assert seeds.conversion_generator(7, 2).random() == 0.277970282193581


def test_purposes_and_inputs_never_share_a_stream():
    draws = {
        "sample": seeds.sample_generator(1, 2, 3).random(),
        "sample, next index": seeds.sample_generator(1, 2, 4).random(),
        "worker": seeds.worker_generator(1, 2, 3, 0).random(),
        "worker, next rank": seeds.worker_generator(1, 2, 4, 0).random(),
        "main": seeds.main_generator(1).random(),
        "unseeded": seeds.unseeded_generator(1).random(),
        "conversion": seeds.conversion_generator(1, 2, 3).random(),
    }
    assert len(set(draws.values())) == len(draws)


def test_one_resolver_speaks_each_callers_words(monkeypatch):
    dali = {"names": ("shard_id", "num_shards")}
    with pytest.raises(ConfigError, match="both shard_id and num_shards"):
        resolve_place(1, None, **dali)
    with pytest.raises(ConfigError, match="shard_id < num_shards"):
        resolve_place(2, 2, **dali)
    assert resolve_place(1, 3, **dali) == Place(1, 3, explicit=True)
    monkeypatch.setattr(ranks_module, "_group", lambda: (1, 2))
    assert resolve_place(**dali) == Place(1, 2)
    with pytest.raises(ConfigError, match="num_shards=1 under a torch.distributed group of 2 ranks"):
        resolve_place(0, 1, **dali)
    assert resolve_place(0, 1, train=False, **dali).world_size == 1  # evaluation on every rank


def test_current_rank_and_a_place_the_group_later_contradicts(monkeypatch):
    monkeypatch.setattr(ranks_module, "_group", lambda: None)
    monkeypatch.setenv("RANK", "3")
    assert ranks_module.current_rank() == 3
    found, given = resolve_place(), resolve_place(0, 1)
    monkeypatch.setattr(ranks_module, "_group", lambda: (0, 2))
    assert ranks_module.current_rank() == 0
    given.check_unchanged("this stream")
    with pytest.raises(ConfigError, match="after init_process_group"):
        found.check_unchanged("this stream")
