"""``fastdata verify`` opens each file of a shard once: the data file's digest
is computed over the mapping its records are read through, the record count
comes from that same reader, and an index or checksum file is read once for
its digest and its contents."""

from __future__ import annotations

import builtins
import io
import os
import shutil
from collections import Counter

import lmdb
import pytest
from convkit import flip_byte, run_cli

from fastdata.converters.tools.verify import command as verification
from fastdata.formats.manifest import Manifest


@pytest.fixture(scope="module")
def converted(small_folder, tmp_path_factory):
    from fastdata.converters import cli

    root = tmp_path_factory.mktemp("once")
    for fmt in ("recordio", "tfrecord", "lmdb"):
        argv = ["convert", str(small_folder), str(root / fmt), "--format", fmt, "--shards", "2", "-q"]
        assert cli.main(argv) == 0
    return root


class Opens:
    """Counts, by real path, the files this process opens through Python
    (``open``, ``io.open``, ``os.open``; a mapping needs one of them) and the
    LMDB environments liblmdb opens (its own ``open(2)``, out of Python's sight)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: Counter = Counter()
        self.envs: Counter = Counter()
        real_open, real_os_open, real_env = builtins.open, os.open, lmdb.open

        def counted_open(file, *args, **kwargs):
            self._note(self.files, file)
            return real_open(file, *args, **kwargs)

        def counted_os_open(path, *args, **kwargs):
            self._note(self.files, path)
            return real_os_open(path, *args, **kwargs)

        def counted_env(path, *args, **kwargs):
            self._note(self.envs, path)
            return real_env(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counted_open)
        monkeypatch.setattr(io, "open", counted_open)
        monkeypatch.setattr(os, "open", counted_os_open)
        monkeypatch.setattr(lmdb, "open", counted_env)

    @staticmethod
    def _note(counter: Counter, file: object) -> None:
        if isinstance(file, (str, bytes, os.PathLike)):
            counter[os.path.realpath(os.fsdecode(file))] += 1

    def of(self, path: os.PathLike[str]) -> int:
        return self.files[os.path.realpath(path)]


# with --workers 2, each worker opens the shards it reads in its own process (not counted here)
@pytest.mark.parametrize(
    "argv", [(), ("--decode", "--workers", "1"), ("--decode", "--workers", "2")], ids=["read", "decode", "workers"]
)
@pytest.mark.parametrize("fmt", ["recordio", "tfrecord", "lmdb"])
def test_verify_opens_every_file_of_a_shard_once(converted, capsys, monkeypatch, fmt, argv):
    ds = converted / fmt
    m = Manifest.read(ds)
    opens = Opens(monkeypatch)
    code, out, _ = run_cli(capsys, "verify", ds, *argv)
    assert code == 0, out
    for shard in m.shards:
        path = ds / shard.file
        for name in filter(None, (shard.index, shard.checksums)):
            assert opens.of(ds / name) == 1, (name, opens.files)
        if fmt == "lmdb":
            # liblmdb maps data.mdb itself, once; Python reads it once whole for its digest (just
            # before, so liblmdb finds it in the page cache) and py-lmdb's structural check opens it
            # for its meta, branch and leaf pages
            assert opens.envs[os.path.realpath(path)] == 1, opens.envs
            assert opens.of(path / "data.mdb") <= 2, opens.files
        else:
            assert opens.of(path) == 1, (shard.file, opens.files)  # mapped once: digest, count and records
    # the list of source files too: read once for its digest and for naming records' sources
    assert opens.of(ds / m.extra["sources"]) == 1, opens.files


def test_verify_of_a_single_file_opens_it_once(converted, tmp_path, capsys, monkeypatch):
    """A foreign ``.rec`` without an index: scanned and read through one reader."""
    shard = Manifest.read(converted / "recordio").shards[0]
    rec = tmp_path / "alone.rec"
    shutil.copyfile(converted / "recordio" / shard.file, rec)
    env = tmp_path / "alone.lmdb"
    shutil.copytree(converted / "lmdb" / Manifest.read(converted / "lmdb").shards[0].file, env)
    opens = Opens(monkeypatch)
    identify = verification.identify

    def uncounted(path):  # recognising the file reads its first bytes: not the verification's reads
        target = identify(path)
        opens.files.clear()
        return target

    monkeypatch.setattr(verification, "identify", uncounted)
    assert run_cli(capsys, "verify", rec, "--decode")[0] == 0
    assert opens.of(rec) == 1, opens.files
    assert run_cli(capsys, "verify", env, "--decode")[0] == 0
    assert opens.envs[os.path.realpath(env)] == 1, opens.envs


def test_a_damaged_shard_is_still_named_with_its_digest_and_records(converted, tmp_path, capsys):
    """The digest now comes from the records' own mapping: a flipped payload
    byte is reported as a changed file and as the damaged record."""
    ds = tmp_path / "ds"
    shutil.copytree(converted / "recordio", ds)
    shard = Manifest.read(ds).shards[1]
    rec = ds / shard.file
    flip_byte(rec, 0x01)
    code, out, _ = run_cli(capsys, "verify", ds)
    assert code == 1
    assert f"PROBLEM {rec}: crc32c differs from the manifest's" in out
    assert f"PROBLEM {rec}: record " in out and "CRC32C mismatch" in out
