"""``fastdata convert URL OUT --engine spark``: a URL source is copied to this
machine first, so the engine must be this one machine (a local session);
a cluster of several machines is refused before anything is fetched, saying
what to do instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from enginekit import CONVERT

from fastdata.converters.cli import main
from fastdata.converters.workers import engines


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_url_source_on_a_local_spark_session(spark, photos, reference, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "from-url"
    assert main(["convert", photos.as_uri(), str(out), *CONVERT, "--engine", "spark"]) == 0
    got, want = _files(out), _files(reference)
    assert got.keys() == want.keys()
    assert [n for n in want if got[n] != want[n]] == ["manifest.json", "sources.jsonl"]  # shards: the same bytes
    assert json.loads(got["manifest.json"])["extra"]["converter"]["source"]["url"] == photos.as_uri()


def test_a_cluster_of_several_machines_is_refused_for_a_url(tmp_path, monkeypatch, capsys):
    class Context:
        master = "spark://head:7077"

    class Session:
        sparkContext = Context()

    pytest.importorskip("pyspark", reason="the engine tests need the [spark] extra")
    from pyspark.sql import SparkSession

    monkeypatch.setattr(engines, "connect", lambda engine: 4)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: Session()))
    code = main(["convert", str(tmp_path), "s3://bucket/out", *CONVERT, "--engine", "spark", "--workers", "2"])
    assert code == 2
    assert "folder every node mounts" in capsys.readouterr().err
    # a URL source: refused before anything is downloaded
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "x.jpg").write_bytes(b"not fetched")
    code = main(["convert", (tmp_path / "src").as_uri(), str(tmp_path / "out"), *CONVERT, "--engine", "spark",
                 "--workers", "2"])
    assert code == 2
    assert "folder every node mounts" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


def test_a_table_writer_takes_a_url_output_for_a_url(tmp_path, monkeypatch):
    """A URL OUT was once taken for a relative folder named ``s3:`` (or ``file:``)."""
    from fastdata.converters.engines.commit import prepare_output

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    output = prepare_output((tmp_path / "bucket").as_uri())
    assert output.is_url and output.attempts == ".fastdata-attempts"
    assert not list(cwd.iterdir())
