"""Joining a shard written in pieces gives the bytes one writer gives (formats with ``join``)."""

from __future__ import annotations

import os
import sys

import pytest
from crc32c import crc32c

from fastdata.formats import Sample, registry
from fastdata.formats.concat import append_file, combined, crc32c_combine, shift_offsets
from fastdata.formats.recordio.framing import MAGIC_BYTES

from formatkit import make_samples

JOINABLE = [name for name in registry.names() if registry.get(name).join is not None]


def test_the_formats_that_join_are_the_position_free_ones():
    assert JOINABLE == ["recordio", "tfrecord"]  # LMDB is a B-tree: its shards are written whole


def _files(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.mark.parametrize("fmt", JOINABLE)
@pytest.mark.parametrize("cuts", [[], [1], [5, 6, 20], [39]])
def test_join_is_byte_identical_to_one_writer(tmp_path, fmt, cuts):
    spec = registry.get(fmt)
    samples = make_samples(40, seed=len(cuts))
    # a payload holding the RecordIO magic word at an aligned offset: a multi-part record
    samples[3] = Sample(image=samples[3].image[:4] + MAGIC_BYTES * 3 + samples[3].image[4:], label=1, id=3)
    whole = tmp_path / "whole"
    whole.mkdir()
    expected = spec.write_shard(whole / f"shard-00000{spec.suffix}", samples)
    pieces = []
    bounds = [0, *cuts, len(samples)]
    for k, (start, stop) in enumerate(zip(bounds, bounds[1:])):
        directory = tmp_path / f"piece{k}"
        directory.mkdir()
        path = directory / f"shard-00000{spec.suffix}"
        pieces.append((path, spec.write_shard(path, samples[start:stop])))
    joined = tmp_path / "joined"
    joined.mkdir()
    info = spec.join(joined / f"shard-00000{spec.suffix}", pieces)
    assert info == expected
    assert _files(joined) == _files(whole)
    assert not [p for p in tmp_path.rglob("*") if ".partial" in p.name]


def test_crc32c_combine_matches_a_crc_of_the_concatenation():
    for a, b in [(0, 0), (0, 5), (7, 0), (1, 1), (3, 1000), (4096, 12345), (100_000, 7)]:
        left, right = os.urandom(a), os.urandom(b)
        assert crc32c_combine(crc32c(left), crc32c(right), b) == crc32c(left + right)
    parts = [os.urandom(n) for n in (0, 17, 4000, 1, 65536)]
    assert combined([(crc32c(p), len(p)) for p in parts]) == crc32c(b"".join(parts))


@pytest.mark.parametrize("mode", ["r+b", "ab"])
def test_append_file_and_shift_offsets(tmp_path, monkeypatch, mode):
    """In the kernel where it can ("r+b"); an O_APPEND file ("ab"), which copy_file_range refuses, by a plain copy."""
    calls = []
    real = getattr(os, "copy_file_range", None)
    if real is not None:
        monkeypatch.setattr(os, "copy_file_range", lambda *a: calls.append(a) or real(*a))
    (tmp_path / "a").write_bytes(b"abc")
    (tmp_path / "b").write_bytes(os.urandom(300_000))
    with open(tmp_path / "a", mode) as f:
        f.seek(0, os.SEEK_END)
        assert append_file(f, tmp_path / "b") == 300_000
        f.write(b"tail")
    assert (tmp_path / "a").read_bytes() == b"abc" + (tmp_path / "b").read_bytes() + b"tail"
    if real is not None and mode == "r+b" and sys.platform.startswith("linux"):
        assert calls  # the join's copy stayed in the kernel
    assert shift_offsets("3\t0\n9\t40\n", 100, 1, "\t") == "3\t100\n9\t140\n"
    assert shift_offsets("0 12\n12 30\n", 5, 0, None) == "5 12\n17 30\n"
