"""The table writers' commit on object storage, without an engine: attempts
written by tasks (:func:`write_attempt`) and committed by the driver
(:func:`commit`) into a ``file://`` URL, which goes through fsspec and the
same uploads, copies and deletes as ``s3://`` (the engines' S3 runs are in
test_engine_spark.py and test_ray_write.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastdata.converters.cli import main
from fastdata.converters.engines.commit import ATTEMPTS, ShardOptions, abandon, commit, prepare_output, write_attempt
from fastdata.errors import ConfigError
from fastdata.remote.store import Store


def _parts(photos: Path, parts: int = 3) -> list[list[tuple]]:
    files = sorted(photos.rglob("*.jpg"))
    rows = [(i, p.read_bytes(), int(p.parent.name == "bees"), f"{p.parent.name}/{p.name}") for i, p in enumerate(files)]
    size = -(-len(rows) // parts)
    return [rows[k * size:(k + 1) * size] for k in range(parts)]


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


OPTIONS = ShardOptions("recordio", classes=["ants", "bees"])


def test_the_counted_attempts_become_the_dataset_a_folder_gets(photos, tmp_path, monkeypatch):
    parts = _parts(photos)
    local = prepare_output(tmp_path / "folder")
    commit(local, [write_attempt(local, f"{k:05d}", k, rows, OPTIONS) for k, rows in enumerate(parts)], OPTIONS, "test")

    url = (tmp_path / "bucket").as_uri()
    remote = prepare_output(url)
    counted = [write_attempt(remote, f"{k:05d}", k, rows, OPTIONS) for k, rows in enumerate(parts)]
    assert all(a.folder.startswith(f"{ATTEMPTS}/") for a in counted)  # object prefixes, not local folders
    write_attempt(remote, "00001", 1, parts[1], OPTIONS)  # a retried task's first attempt: not counted
    remote.store().write_bytes(f"{ATTEMPTS}/00002-killed/shard-00002.rec", b"half a shard")  # a task killed mid-upload
    uploads: list[str] = []
    real = Store.upload
    monkeypatch.setattr(Store, "upload", lambda self, local, name: (uploads.append(name), real(self, local, name))[1])
    summary = commit(remote, counted, OPTIONS, "test")

    assert summary == {"shards": 3, "images": sum(map(len, parts)), "skipped": []}
    assert _files(tmp_path / "bucket") == _files(tmp_path / "folder")  # byte for byte; no attempt left
    assert uploads[-1] == "manifest.json"  # last: nothing reads the dataset as whole before it
    assert main(["verify", url, "-q"]) == 0


def test_a_job_that_fails_leaves_neither_manifest_nor_attempts(photos, tmp_path):
    url = (tmp_path / "bucket").as_uri()
    output = prepare_output(url)
    write_attempt(output, "00000", 0, _parts(photos)[0], OPTIONS)
    assert list((tmp_path / "bucket" / ATTEMPTS).iterdir())
    abandon(output)
    assert not [p for p in (tmp_path / "bucket").rglob("*") if p.is_file()]


def test_attempts_a_failed_job_left_are_removed_before_the_next_job_writes(photos, tmp_path):
    url = (tmp_path / "bucket").as_uri()
    stale = prepare_output(url).store()
    stale.write_bytes(f"{ATTEMPTS}/00000-old/shard-00000.rec", b"a dead job's shard")
    prepare_output(url)
    assert not [p for p in (tmp_path / "bucket").rglob("*") if p.is_file()]


def test_a_read_only_or_finished_url_is_refused(photos, tmp_path):
    with pytest.raises(ConfigError, match="read-only"):
        prepare_output("https://example.com/out")
    url = (tmp_path / "bucket").as_uri()
    output = prepare_output(url)
    commit(output, [write_attempt(output, "00000", 0, _parts(photos)[0], OPTIONS)], OPTIONS, "test")
    with pytest.raises(ConfigError, match="already holds a finished dataset"):
        prepare_output(url)
