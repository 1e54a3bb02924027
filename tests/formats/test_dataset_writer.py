"""write_dataset(overwrite=True) replaces the dataset fastdata wrote and
nothing else: user files beside the shards stay, a foreign manifest is refused."""

from __future__ import annotations

import os

import pytest
from formatkit import make_samples, read_all, write

from fastdata.errors import ConfigError
from fastdata.formats import MANIFEST_NAME, registry
from fastdata.formats.dataset_writer import write_dataset

USER = {"NOTES.md": b"my notes", "shard-00000.txt": b"looks like a shard name", "mine.partial": b"not fastdata's"}


def _user_files(directory):
    for name, data in USER.items():
        (directory / name).write_bytes(data)
    (directory / "checkpoints").mkdir()
    (directory / "checkpoints" / "model.pt").write_bytes(b"weights")


@pytest.mark.parametrize("fmt", registry.names())
def test_overwrite_keeps_user_files_beside_the_shards(tmp_path, fmt):
    old = write(tmp_path, fmt, make_samples(12), shard_bytes=600)
    assert len(old.shards) >= 3
    _user_files(tmp_path)
    samples = make_samples(4, seed=1)
    new = write_dataset(tmp_path, fmt, samples, ["a", "b", "c"], shard_bytes=1 << 20, overwrite=True)
    assert len(new.shards) == 1
    assert read_all(tmp_path, new) == [(s.image, s.label) for s in samples]
    assert {name: (tmp_path / name).read_bytes() for name in USER} == USER
    assert (tmp_path / "checkpoints" / "model.pt").read_bytes() == b"weights"
    # what is left is the new dataset and the user's files: the old shards beyond the first are gone
    assert set(os.listdir(tmp_path)) == {*new.files(), MANIFEST_NAME, *USER, "checkpoints"}


def test_overwrite_refuses_a_manifest_fastdata_cannot_read(tmp_path):
    _user_files(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text('{"written by": "another tool"}')
    with pytest.raises(ConfigError, match="not a manifest fastdata can read.*deletes none"):
        write_dataset(tmp_path, registry.names()[0], make_samples(2), ["a"], overwrite=True)
    assert sorted(os.listdir(tmp_path)) == sorted([*USER, "checkpoints", MANIFEST_NAME])
    assert (tmp_path / "checkpoints" / "model.pt").read_bytes() == b"weights"


def test_without_overwrite_a_finished_dataset_is_refused(tmp_path):
    fmt = registry.names()[0]
    write(tmp_path, fmt, make_samples(3))
    with pytest.raises(ConfigError, match="already holds a finished dataset"):
        write_dataset(tmp_path, fmt, make_samples(3), ["a"])
