"""One conformance suite over every registered format (CONTRIBUTING.md, "Tests")."""

from __future__ import annotations

import multiprocessing
import os
import pickle

import numpy as np
import pytest
import torch

from fastdata.errors import FastDataError, FormatError
from fastdata.formats import Manifest, Sample, registry
from fastdata.formats.hooks import NO_FRAMING

from formatkit import data_file, make_samples, open_all, read_all, write

FORMATS = registry.names()


@pytest.fixture(params=FORMATS)
def fmt(request):
    return request.param


def test_round_trip_across_shards(tmp_path, fmt):
    samples = make_samples(40)
    manifest = write(tmp_path, fmt, samples)
    assert len(manifest.shards) > 2, "shard_bytes should force several shards"
    assert manifest.num_samples == 40 and Manifest.read(tmp_path) == manifest
    assert read_all(tmp_path, manifest) == [(s.image, s.label) for s in samples]
    for shard in manifest.shards:
        assert (tmp_path / shard.file).exists()
        if shard.index:
            assert (tmp_path / shard.index).exists()
    assert not [p for p in tmp_path.rglob("*") if ".partial" in p.name]


def test_random_access_equals_sequential_scan(tmp_path, fmt):
    manifest = write(tmp_path, fmt, make_samples(30, seed=1), shard_bytes=10**6)
    (reader,) = open_all(tmp_path, manifest)
    sequential = [reader.sample(i) for i in range(len(reader))]
    order = np.random.default_rng(0).permutation(len(reader))
    for i in order:
        img, label = reader.sample(int(i))
        assert (bytes(img), int(label)) == (bytes(sequential[i][0]), int(sequential[i][1]))


def test_label_vectors_round_trip_or_are_refused_as_declared(tmp_path, fmt):
    samples = [Sample(image=b"\xff\xd8\xff\xe0" + bytes([i]), label=[float(i), 0.5, -2.0], id=i) for i in range(4)]
    if not registry.get(fmt).label_vectors:  # the format must say so, not mangle them
        with pytest.raises(FastDataError, match="label"):
            write(tmp_path, fmt, samples)
        return
    manifest = write(tmp_path, fmt, samples)
    for reader in open_all(tmp_path, manifest):
        for i in range(len(reader)):
            _, label = reader.sample(i)
            np.testing.assert_allclose(np.asarray(label, dtype=np.float32), [float(i), 0.5, -2.0])


def test_empty_shard_is_valid(tmp_path, fmt):
    spec = registry.get(fmt)
    info = spec.write_shard(tmp_path / f"empty{spec.suffix}", [])
    assert info.records == 0
    assert len(spec.open_shard(tmp_path / info.file)) == 0


def test_empty_dataset(tmp_path, fmt):
    manifest = write(tmp_path, fmt, [])
    assert manifest.num_samples == 0 and Manifest.read(tmp_path).num_samples == 0


def _read_everything(directory, manifest):
    for reader in open_all(directory, manifest):
        for i in range(len(reader)):
            reader.sample(i)


def test_truncated_last_record_raises_format_error(tmp_path, fmt):
    manifest = write(tmp_path, fmt, make_samples(10), shard_bytes=10**6)
    path = data_file(tmp_path, manifest)
    size = path.stat().st_size
    for cut in (1, 3, 9):
        os.truncate(path, size - cut)
        with pytest.raises(FormatError) as info:
            _read_everything(tmp_path, manifest)
        assert str(path.name) in str(info.value)


# Every spec must declare its framing (FormatSpec has no default for it);
# NO_FRAMING formats (LMDB keeps values in B-tree pages) have nothing to flip.
FRAMED = [name for name in FORMATS if registry.get(name).framing != NO_FRAMING]


@pytest.mark.parametrize("fmt", FRAMED)
@pytest.mark.parametrize("bit", [0, 3, 7])
def test_flipped_framing_bits_raise_format_error(tmp_path, fmt, bit):
    framing = registry.get(fmt).framing
    manifest = write(tmp_path, fmt, make_samples(6), shard_bytes=10**6)
    path = data_file(tmp_path, manifest)
    original = path.read_bytes()
    for span in framing:
        for pos in span:
            damaged = bytearray(original)
            damaged[pos] ^= 1 << bit
            path.write_bytes(bytes(damaged))
            try:
                read_all(tmp_path, manifest)
            except FormatError as exc:
                assert path.name in str(exc)
            else:
                pytest.fail(f"{fmt}: flipping bit {bit} of byte {pos} went unnoticed")


def test_tfrecord_data_crc_is_checked(tmp_path):
    manifest = write(tmp_path, "tfrecord", make_samples(3), shard_bytes=10**6)
    path = data_file(tmp_path, manifest)
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[0:8], "little")
    for pos in (12, 12 + length // 2, 12 + length, 12 + length + 3):  # data bytes, then the data CRC
        damaged = bytearray(data)
        damaged[pos] ^= 0x10
        path.write_bytes(bytes(damaged))
        with pytest.raises(FormatError, match="(?i)crc"):
            read_all(tmp_path, manifest)


def test_readers_pickle_without_open_handles(tmp_path, fmt):
    manifest = write(tmp_path, fmt, make_samples(8), shard_bytes=10**6)
    (reader,) = open_all(tmp_path, manifest)
    reader.sample(0)  # opened in this process
    blob = pickle.dumps(reader)
    assert len(blob) < 4096, "a reader must pickle as paths and settings"
    clone = pickle.loads(blob)
    assert [bytes(clone.sample(i)[0]) for i in range(len(clone))] == [bytes(reader.sample(i)[0]) for i in range(len(reader))]


class _ShardDataset(torch.utils.data.Dataset):
    def __init__(self, reader):
        self.reader = reader

    def __len__(self):
        return len(self.reader)

    def __getitem__(self, i):
        img, label = self.reader.sample(i)
        return bytes(img), int(label)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_workers_read_the_same_records(tmp_path, fmt, context):
    manifest = write(tmp_path, fmt, make_samples(16), shard_bytes=10**6)
    (reader,) = open_all(tmp_path, manifest)
    reader.sample(3)  # a handle opened before fork must not be shared with the children
    loader = torch.utils.data.DataLoader(
        _ShardDataset(reader),
        batch_size=None,
        num_workers=2,
        multiprocessing_context=multiprocessing.get_context(context),
    )
    assert [tuple(x) for x in loader] == [(bytes(reader.sample(i)[0]), int(reader.sample(i)[1])) for i in range(len(reader))]
