"""make_loader takes torch DataLoader's worker keywords (what a DataLoader
user types first) as the Workers(...) fields they name."""

from __future__ import annotations

import multiprocessing

import pytest
import torch

from fastdata import ConfigError, Workers, make_loader
from fastdata.loading.settings import DATALOADER_KEYWORDS

from ._data import IndexImages


def test_dataloader_keywords_set_the_workers():
    with make_loader(IndexImages(24), 4, seed=3, num_workers=2, persistent_workers=False, prefetch_factor=3,
                     pin_memory=False, multiprocessing_context="fork") as loader:
        dl = loader.dataloader
        assert (dl.num_workers, dl.persistent_workers, dl.prefetch_factor, dl.pin_memory) == (2, False, 3, False)
        assert dl.multiprocessing_context.get_start_method() == "fork"
        got = [(x.clone(), y.clone()) for x, y in loader]
    with make_loader(IndexImages(24), 4, seed=3, workers=Workers(2, persistent=False, prefetch_factor=3,
                                                                   pin_memory=False, context="fork")) as loader:
        want = list(loader)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(got, want, strict=True))


def test_every_keyword_maps_to_a_workers_field_and_a_context_object_is_taken():
    fields = set(Workers.__dataclass_fields__)
    assert set(DATALOADER_KEYWORDS.values()) <= fields
    ctx = multiprocessing.get_context("spawn")
    assert Workers.of(None, multiprocessing_context=ctx).context == "spawn"
    assert Workers.of(4, num_workers=4).num == 4
    assert Workers.of(Workers(3), pin_memory=True) == Workers(3, pin_memory=True)


def test_a_keyword_make_loader_does_not_take_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'shuffle' \(it takes torch DataLoader's num_workers"):
        make_loader(IndexImages(8), 4, shuffle=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 2, "num_workers": 4}, "workers=2 and num_workers=4 disagree"),
        ({"workers": Workers(2, persistent=False), "persistent_workers": True}, "persistent_workers=True and workers=Workers(persistent=False) disagree"),
        ({"num_workers": -1}, "Workers(num=...) must be >= 0"),
        ({"workers": Workers(2, kind="threads"), "multiprocessing_context": "spawn"}, "Workers(kind='threads') starts no processes"),
    ],
)
def test_contradictions_are_one_line_config_errors(kwargs, message):
    with pytest.raises(ConfigError) as err:
        make_loader(IndexImages(8), 4, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)
