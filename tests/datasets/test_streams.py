"""Streaming datasets: every record exactly once per epoch across ranks and
workers, an order that is a pure function of (seed, epoch), and the map-style
conveniences (classes, targets, decode=False)."""

from __future__ import annotations

import pickle

import pytest
import torch
from dskit import CLASSES, N, image_bytes, label_of, samples, width_of

from fastdata.datasets import RecordIOStream, TFRecordStream
from fastdata.errors import ConfigError
from fastdata.formats.dataset_writer import write_dataset

STREAMS = {"recordio": RecordIOStream, "tfrecord": TFRecordStream}


@pytest.fixture(scope="module", params=sorted(STREAMS))
def fmt(request):
    return request.param


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, fmt):
    root = tmp_path_factory.mktemp(f"{fmt}-many")
    manifest = write_dataset(root, fmt, samples(), CLASSES, shard_bytes=1500)
    assert len(manifest.shards) > 4  # more shards than the 2 x 2 readers
    return root


@pytest.fixture(scope="module")
def one_shard(tmp_path_factory, fmt):
    root = tmp_path_factory.mktemp(f"{fmt}-one")
    write_dataset(root, fmt, samples(), CLASSES)
    return root


def _epoch(stream, epoch, *, workers=2):
    stream.set_epoch(epoch)
    if not workers:
        return list(stream)
    loader = torch.utils.data.DataLoader(stream, batch_size=None, num_workers=workers, multiprocessing_context="fork")
    return [(w, t) for w, t in loader]


@pytest.mark.parametrize("layout", ["sharded", "one_shard"])
def test_exactly_once_across_two_ranks_and_two_workers(request, fmt, layout):
    root = request.getfixturevalue(layout)
    seen = []
    for rank in range(2):
        stream = STREAMS[fmt](root, transform=width_of, seed=3, rank=rank, world_size=2)
        items = _epoch(stream, epoch=1)
        assert len(items) == len(stream) == N // 2
        seen += items
    assert sorted(seen) == [(i, label_of(i)) for i in range(N)]


def test_order_is_a_pure_function_of_seed_and_epoch(sharded, fmt):
    def order(seed, epoch):
        return [w for w, _ in _epoch(STREAMS[fmt](sharded, transform=width_of, seed=seed), epoch, workers=0)]

    first = order(5, 0)
    assert sorted(first) == list(range(N))
    assert order(5, 0) == first
    assert order(5, 1) != first
    assert order(6, 0) != first


def test_set_epoch_reaches_persistent_workers(sharded, fmt):
    stream = STREAMS[fmt](sharded, transform=width_of, seed=1)
    loader = torch.utils.data.DataLoader(
        stream, batch_size=None, num_workers=2, persistent_workers=True, multiprocessing_context="fork"
    )
    orders = []
    for epoch in range(3):
        stream.set_epoch(epoch)
        orders.append([w for w, _ in loader])
    for epoch, got in enumerate(orders):
        reference = STREAMS[fmt](sharded, transform=width_of, seed=1)
        assert sorted(got) == list(range(N))
        assert sorted(got) == sorted(w for w, _ in _epoch(reference, epoch))
        assert got == [w for w, _ in _epoch(reference, epoch)]
    assert orders[0] != orders[1] != orders[2]


def test_no_shuffle_streams_in_file_order(sharded, fmt):
    stream = STREAMS[fmt](sharded, decode=False, shuffle=False)
    assert [bytes(d) for d, _ in stream] == [image_bytes(i) for i in range(N)]


def test_each_window_is_read_in_file_order_and_handed_out_shuffled(sharded, fmt, monkeypatch):
    stream = STREAMS[fmt](sharded, decode=False, seed=1, shuffle_buffer=8)
    shards, reads = stream.shards, []

    def read(shard, local, real=shards.read):
        reads.append(int(shards.starts[shard]) + local)
        return real(shard, local)

    monkeypatch.setattr(shards, "read", read)
    handed = [bytes(d) for d, _ in stream]
    windows = [reads[i:i + 8] for i in range(0, N, 8)]
    assert sorted(reads) == list(range(N)) and all(w == sorted(w) for w in windows)  # sequential reads
    assert [image_bytes(i) for i in reads] != handed and sorted(handed) == sorted(map(image_bytes, range(N)))


def test_classes_targets_len_and_pickle(sharded, fmt):
    stream = STREAMS[fmt](sharded, rank=1, world_size=3, drop_last=True)
    assert stream.classes == CLASSES and stream.targets.tolist() == [label_of(i) for i in range(N)]
    assert len(stream) == N // 3 and stream.num_samples == N
    clone = pickle.loads(pickle.dumps(stream))
    assert len(pickle.dumps(stream)) < 5000
    assert sorted(t for _, t in clone) == sorted(t for _, t in stream)


def test_spawn_persistent_workers_every_stream(tmp_path):
    # One spawn loader over both stream classes: starting spawn workers costs seconds.
    streams = []
    for fmt, cls in sorted(STREAMS.items()):
        write_dataset(tmp_path / fmt, fmt, samples(), CLASSES, shard_bytes=1500)
        streams.append(cls(tmp_path / fmt, transform=width_of, seed=2))
    chain = torch.utils.data.ChainDataset(streams)

    def run(context, persistent):
        return torch.utils.data.DataLoader(
            chain, batch_size=None, num_workers=2, persistent_workers=persistent, multiprocessing_context=context
        )

    spawned = run("spawn", persistent=True)
    orders = []
    for epoch in (4, 5):
        for stream in streams:
            stream.set_epoch(epoch)
        got = [w for w, _ in spawned]
        assert sorted(got) == sorted(list(range(N)) * len(STREAMS))
        assert got == [w for w, _ in run("fork", persistent=False)]  # the epoch reached the spawned workers
        orders.append(got)
    assert orders[0] != orders[1]


def test_distributed_misuse_fails_loudly(sharded, fmt, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(ConfigError, match="init_process_group"):
        STREAMS[fmt](sharded)
    with pytest.raises(ConfigError, match="rank"):
        STREAMS[fmt](sharded, rank=1)
    with pytest.raises(ConfigError, match="range"):
        STREAMS[fmt](sharded, rank=2, world_size=2)
    assert len(STREAMS[fmt](sharded, rank=0, world_size=4)) == N // 4
