"""``fastdata convert URL OUT --engine spark``: on one machine (a local
session) a URL source is copied here first; on a cluster of several machines
it is only listed here, and the tasks read the objects where they run and
hand their shards back (:mod:`fastdata.converters.workers.shipping`)."""

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


def test_a_cluster_of_several_machines_reads_the_bucket_where_the_tasks_run(spark, photos, reference, tmp_path,
                                                                           monkeypatch):
    from fastdata.converters.workers.engines import SEVERAL_MACHINES_VARIABLE

    monkeypatch.setenv(SEVERAL_MACHINES_VARIABLE, "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "from-url"
    assert main(["convert", photos.as_uri(), str(out), *CONVERT, "--engine", "spark"]) == 0
    got, want = _files(out), _files(reference)
    assert got.keys() == want.keys()
    assert [n for n in want if got[n] != want[n]] == ["manifest.json", "sources.jsonl"]
    assert not (tmp_path / "cache" / "fastdata" / "sources").exists()  # listed, never downloaded here
    # a local folder SRC into a URL OUT: the tasks read the folder (mounted on every node), the files come back
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    assert main(["convert", str(photos), (bucket / "ds").as_uri(), *CONVERT, "--engine", "spark"]) == 0
    assert _files(bucket / "ds") == want


def test_the_several_machines_path_is_taken_where_the_cluster_spans_them(monkeypatch):
    class Context:
        master = "spark://head:7077"

    class Session:
        sparkContext = Context()

    pytest.importorskip("pyspark", reason="the engine tests need the [spark] extra")
    from pyspark.sql import SparkSession

    monkeypatch.setattr(engines, "connect", lambda engine: 4)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: Session()))
    assert engines.several_machines("spark")
    Context.master = "local[4]"
    assert not engines.several_machines("spark")


def test_a_table_writer_takes_a_url_output_for_a_url(tmp_path, monkeypatch):
    """A URL OUT was once taken for a relative folder named ``s3:`` (or ``file:``)."""
    from fastdata.converters.engines.commit import prepare_output

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    output = prepare_output((tmp_path / "bucket").as_uri())
    assert output.is_url and output.attempts == ".fastdata-attempts"
    assert not list(cwd.iterdir())
