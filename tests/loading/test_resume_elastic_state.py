"""The elastic-resume state: plain data every rank agrees on, refused with
one line naming the field when it cannot be honoured, and honoured across
worker counts and kinds, at a pass's last batch and into the next epoch."""

from __future__ import annotations

import io
import json
import random

import pytest
import torch
from torch.distributed.checkpoint.stateful import Stateful

from fastdata import ConfigError, Workers, make_loader, open_dataset
from fastdata.formats import Sample
from fastdata.formats.dataset_writer import write_dataset

from ._data import IndexImages, StreamPixels, indices, write_records
from ._elastic import Reads, chain, check_epoch, dataset, job, reference

N = 61


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("elastic-state"), N)


def _mid_epoch(kind: str, records, **options) -> dict:
    return job(kind, N, records, 2, 4, seed=3, train=options.pop("train", True), state=None, stop=3, reads=Reads(),
               **options)


@pytest.mark.parametrize("kind", ["map", "stream"])
def test_state_is_plain_data_for_json_torch_save_and_dcp(records, kind):
    state = _mid_epoch(kind, records)
    assert all(isinstance(v, (int, str)) for v in state.values())
    assert json.loads(json.dumps(state)) == state
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    assert torch.load(buffer, weights_only=True) == state
    loader = make_loader(dataset(kind, N, records), 4, seed=3, workers=0)
    assert isinstance(loader, Stateful)
    assert state["read"] == 2 * 3 * 4 and state["kind"] == ("map-style" if kind == "map" else "stream")
    assert len(json.dumps(state)) < 400


def _written(root, n: int, shard_bytes: int):
    items = [Sample(image=b"record%d" % i, label=i, id=i) for i in range(n)]
    write_dataset(root, "recordio", items, [str(i) for i in range(n)], shard_bytes=shard_bytes)
    return root


@pytest.mark.parametrize("field, build", [
    ("seed", lambda r, tmp: make_loader(IndexImages(N), 4, seed=4, workers=0)),
    ("dataset_length", lambda r, tmp: make_loader(IndexImages(N + 1), 4, seed=3, workers=0)),
    ("train", lambda r, tmp: make_loader(IndexImages(N), 4, seed=3, train=False, workers=0)),
    ("seeding", lambda r, tmp: make_loader(IndexImages(N), 4, seed=3, seeding="worker", workers=0)),
    ("kind", lambda r, tmp: make_loader(dataset("stream", N, r), 4, seed=3, workers=0)),
])
def test_what_cannot_be_honoured_is_one_line_naming_the_field(records, tmp_path, field, build):
    state = _mid_epoch("map", records)
    with pytest.raises(ConfigError, match=f"^cannot resume: {field}: saved ") as caught:
        build(records, tmp_path).load_state_dict(state)
    assert "\n" not in str(caught.value)


def test_another_stream_or_shuffle_buffer_is_refused(records, tmp_path):
    state = _mid_epoch("stream", records)
    other = _written(tmp_path, N, shard_bytes=60)  # the same samples in other shards: another sequence
    for stream, field in ((open_dataset(other, streaming=True, transform=StreamPixels(), shuffle_buffer=16),
                           "dataset_digest"),
                          (open_dataset(records, streaming=True, transform=StreamPixels(), shuffle_buffer=8),
                           "shuffle_buffer")):
        with pytest.raises(ConfigError, match=f"^cannot resume: {field}: saved [^\n]*$"):
            make_loader(stream, 4, seed=3, workers=0).load_state_dict(state)


@pytest.mark.parametrize("change, words", [
    ({"unread": "9-3"}, "unread"), ({"unread": "0-5,4-9"}, "unread"), ({"read": -1}, "read"),
    ({"epoch": "1"}, "epoch"), ({"version": 1}, "version 1"),
])
def test_malformed_states_are_refused(records, change, words):
    state = _mid_epoch("map", records)
    with pytest.raises(ConfigError, match=words):
        make_loader(IndexImages(N), 4, seed=3, workers=0).load_state_dict({**state, **change})


@pytest.mark.parametrize("kind", ["map", "stream"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_every_rank_agrees_at_a_pass_end_even_with_uneven_batches(records, kind, train):
    # N = 61 over 3 ranks in batches of 5: ranks of 21 (padded), or 21/20/20 samples in eval: 5 or 4 batches
    lengths = [len(make_loader(dataset(kind, N, records), 5, rank=r, world_size=3, seed=3, train=train,
                               drop_last=False, workers=0)) for r in range(3)]
    assert sorted(lengths) == ([5, 5, 5] if train else [4, 4, 5])
    for stop in (4, 5, 6):
        state = job(kind, N, records, 3, 5, seed=3, train=train, state=None, stop=stop, reads=Reads())
        done = stop >= (4 if train else 5)  # training drops each rank's partial fifth batch
        assert (state["epoch"], state["read"] == 0) == ((1, True) if done else (0, False)), (stop, state)


@pytest.mark.parametrize("kind", ["map", "stream"])
def test_worker_counts_and_kinds_change_across_a_resume(records, kind):
    expected = reference(kind, N, records, seed=3, train=True)
    kinds = [Workers(2, context="fork"), Workers(2, kind="threads") if kind == "map" else Workers(1, context="fork"), 0]
    reads, state = Reads(), None
    for (world, batch), workers in zip([(2, 4), (3, 2), (1, 5)], kinds):
        state = job(kind, N, records, world, batch, seed=3, train=True, state=state, stop=2 if world > 1 else None,
                    reads=reads, workers=workers)
    check_epoch(reads, expected, N, train=True, last=(1, 5))


@pytest.mark.parametrize("kind", ["map", "stream"])
def test_persistent_workers_that_ran_an_epoch_take_a_loaded_state(records, kind):
    state = _mid_epoch(kind, records)
    loader = make_loader(dataset(kind, N, records), 4, seed=3, workers=Workers(2, context="fork"))
    with loader:
        list(loader)  # the workers now hold epoch 0's whole order
        loader.load_state_dict(state)
        rest = [i for x, _ in loader for i in indices(x)]
    assert len(rest) == (N - state["read"]) // 4 * 4
    done = Reads()
    job(kind, N, records, 2, 4, seed=3, train=True, state=None, stop=3, reads=done)
    assert not set(rest) & set(done.counts)


@pytest.mark.parametrize("kind", ["map", "stream"])
def test_after_a_resumed_epoch_the_next_follows_the_new_set_up_from_its_start(records, kind):
    _, state = chain(kind, N, records, [(3, 4), (2, 5)], seed=3, train=True, draw=random.Random(0))
    for rank in range(2):
        def build():
            return make_loader(dataset(kind, N, records), 5, rank=rank, world_size=2, seed=3, workers=0)

        resumed, fresh = build(), build()
        resumed.load_state_dict(state)
        fresh.set_epoch(1)
        assert [indices(x) for x, _ in resumed] == [indices(x) for x, _ in fresh]


def test_an_eval_state_loads_under_another_seed_and_reads_the_rest_once(records):
    # eval reads every sample once, in order: the seed does not change which samples are left
    def eval_loader(seed: int):
        return make_loader(IndexImages(N), 4, seed=seed, train=False, workers=0)

    saving = eval_loader(3)
    batches = iter(saving)
    first = [int(t) for _ in range(2) for t in next(batches)[1]]
    state = saving.state_dict()
    resumed = eval_loader(7)
    resumed.load_state_dict(state)
    rest = [int(t) for _, targets in resumed for t in targets]
    assert sorted(first + rest) == list(range(N)) and not set(first) & set(rest)
    with pytest.raises(ConfigError, match="^cannot resume: seed: saved 3"):  # training still refuses
        make_loader(IndexImages(N), 4, seed=4, workers=0).load_state_dict(_mid_epoch("map", records))
