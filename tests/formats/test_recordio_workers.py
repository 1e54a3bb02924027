"""RecordIO readers across processes (pickle, fork, spawn), and the time to load a
full-size index (read speed is measured by ``benchmarks/raw_reads.py``)."""

from __future__ import annotations

import multiprocessing
import os
import pickle

import numpy as np
import pytest
import torch

from fastdata.formats import Sample
from fastdata.formats.recordio import Reader, open_shard, parse_index, write_shard


class RecordDataset(torch.utils.data.Dataset):
    """Top level so spawn workers can unpickle it."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, i: int) -> tuple[bytes, int, int]:
        return self.reader[i], self.reader.key(i), os.getpid()


def _shard(tmp_path, n: int, lo: int = 100, hi: int = 500, seed: int = 0):
    rng = np.random.default_rng(seed)
    samples = [
        Sample(image=i.to_bytes(4, "little") + rng.bytes(int(rng.integers(lo, hi))), label=i % 10, id=i)
        for i in range(n)
    ]
    write_shard(tmp_path / "s.rec", samples)
    return tmp_path / "s.rec", samples


def test_reader_pickles_as_paths(tmp_path):
    rec, _ = _shard(tmp_path, 50)
    reader = Reader(rec)
    first = reader[0]
    blob = pickle.dumps(reader)
    assert len(blob) < 300 and b"numpy" not in blob
    clone = pickle.loads(blob)
    assert clone[0] == first and list(clone) == list(reader) and clone.get(7) == reader[7]
    shard = open_shard(rec)
    shard.sample(1)
    assert pickle.loads(pickle.dumps(shard)).sample(1) == shard.sample(1)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers(tmp_path, context):
    rec, samples = _shard(tmp_path, 24, 0, 50)
    reader = Reader(rec)
    reader[5]  # mapped in the parent before the workers start
    loader = torch.utils.data.DataLoader(
        RecordDataset(reader),
        batch_size=None,
        num_workers=2,
        multiprocessing_context=multiprocessing.get_context(context),
    )
    got = list(loader)
    payloads = [bytes(payload) for payload, _, _ in got]
    assert payloads == [reader[i] for i in range(len(reader))]
    assert [int(key) for _, key, _ in got] == [s.id for s in samples]
    pids = {int(pid) for _, _, pid in got}
    assert len(pids) == 2 and os.getpid() not in pids


def test_a_full_size_index_loads_by_the_whole_array_parse(tmp_path, monkeypatch):
    """ImageNet-1k's .idx loads by the whole-array numpy parse (~0.1 s of CPU), never by the
    per-line fallback (~0.5 s). Asked of the code path, not of a clock: a CPU-time bound
    failed on a busy machine (0.30 s against 0.3)."""
    from fastdata.formats.recordio import index as recordio_index

    def per_line(data, path):
        raise AssertionError(f"{path}: a well-formed .idx fell to the per-line parse")

    n = 1_281_167
    rng = np.random.default_rng(0)
    offsets = np.cumsum(rng.integers(1, 40_000, n)) * 4
    lines = np.char.add(np.char.add(rng.permutation(n).astype("U7"), "\t"), offsets.astype("U14"))
    (tmp_path / "big.idx").write_text("\n".join(lines.tolist()) + "\n")
    rec = tmp_path / "big.rec"
    with open(rec, "wb") as f:  # sparse: only the size matters until a record is read
        f.truncate(int(offsets[-1]) + 4096)
    monkeypatch.setattr(recordio_index, "_parse_lines", per_line)
    reader = Reader(rec, tmp_path / "big.idx")
    assert len(reader) == n and reader.offset(0) == offsets[0] and reader.offset(-1) == offsets[-1]
    keys, _ = parse_index(tmp_path / "big.idx")
    assert np.array_equal(reader.keys(), keys)  # lines were written in offset order
