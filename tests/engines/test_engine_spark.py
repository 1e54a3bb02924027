"""``fastdata convert --engine spark`` on Spark ``local[2,2]``: the bytes of
one machine; a task whose first attempt dies half-way, two attempts of one
task at once (what speculation does), and a task that never succeeds."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import enginekit
import pytest
from enginekit import CONVERT

from fastdata.converters.cli import main
from fastdata.converters.workers import sparkpool
from fastdata.converters.workers.attempts import ATTEMPT_PREFIX, job_folder

pytestmark = pytest.mark.timeout(600)


def files(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (hidden ones too: a stray attempt folder counts) by relative path."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _half_written_then_dead(args: tuple) -> None:
    """What a worker killed half-way leaves: an attempt folder with part of a shard; then it dies."""
    folder = job_folder(args)
    if folder is not None:
        dead = Path(folder) / f"{ATTEMPT_PREFIX}killed-{os.getpid()}"
        dead.mkdir(exist_ok=True)
        (dead / Path(args[0].path).name).write_bytes(b"half a shard")
    os._exit(1)


def dies_on_first_attempt(cwd, init, key, table, fn, args):
    from pyspark import TaskContext

    from fastdata.converters.workers import sparkpool as real

    if TaskContext.get().attemptNumber() == 0:
        _half_written_then_dead(args)
    return real._spark_task(cwd, init, key, table, fn, args)


def always_dies(cwd, init, key, table, fn, args):
    _half_written_then_dead(args)


def two_attempts_at_once(cwd, init, key, table, fn, args):
    """Two attempts of one task writing the same shard at the same time, as a
    speculative copy does on a cluster (local mode never launches one: its one
    host already runs the first)."""
    from fastdata.converters.workers import sparkpool as real

    answers = []
    racers = [threading.Thread(target=lambda: answers.append(real._spark_task(cwd, init, key, table, fn, args)))
              for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    # Spark keeps the first attempt that succeeds; the other may fail (a join's
    # pieces are gone once one attempt joined them) or be killed
    return next((answer for answer in answers if answer[0]), answers[0])


@pytest.fixture()
def task(monkeypatch):
    """Replace the function each Spark task runs (shipped by value to the Python workers)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield lambda fn: monkeypatch.setattr(sparkpool, "_spark_task", fn)
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def convert(photos: Path, out: Path) -> int:
    return main(["convert", str(photos), str(out), *CONVERT, "--engine", "spark"])


def test_spark_writes_the_bytes_of_one_machine(spark, photos, reference, tmp_path):
    out = tmp_path / "spark"
    assert convert(photos, out) == 0
    assert files(out) == files(reference)
    assert main(["verify", str(out), "-q"]) == 0


def test_a_first_attempt_that_dies_half_way(spark, task, photos, reference, tmp_path):
    task(dies_on_first_attempt)
    out = tmp_path / "retried"
    assert convert(photos, out) == 0
    assert files(out) == files(reference)  # no half shard, no attempt folder, every record once


def test_two_attempts_of_one_task_at_once(spark, task, photos, reference, tmp_path):
    task(two_attempts_at_once)
    out = tmp_path / "speculated"
    assert convert(photos, out) == 0
    assert files(out) == files(reference)


def test_a_task_that_never_succeeds_leaves_no_manifest(spark, task, photos, tmp_path, capsys):
    task(always_dies)
    out = tmp_path / "failed"
    assert convert(photos, out) == 2
    err = capsys.readouterr().err
    assert "Spark task failed on every attempt" in err and "--resume" in err
    assert not (out / "manifest.json").exists()
    assert not [p for p in out.rglob("*") if p.name.startswith(ATTEMPT_PREFIX)]


# fastdata.converters.engines.spark.write_shards: a DataFrame of image bytes, one shard a partition


def photo_frame(spark, photos: Path, partitions: int = 3):
    from pyspark.sql import functions as F

    df = spark.read.format("binaryFile").option("recursiveFileLookup", "true").option("pathGlobFilter", "*.jpg")
    df = df.load(str(photos))
    return df.withColumn("label", F.when(F.col("path").contains("/bees/"), 1).otherwise(0)).repartition(partitions)


def stored(out: Path) -> list[tuple[bytes, int]]:
    from fastdata import open_dataset

    dataset = open_dataset(str(out))
    return sorted(dataset.encoded(i)[:2] for i in range(len(dataset)))


def sources(photos: Path) -> list[tuple[bytes, int]]:
    return sorted((p.read_bytes(), int(p.parent.name == "bees")) for p in photos.rglob("*.jpg"))


class FirstAttemptDies:
    """Stands in for the partition task: its first attempt writes half a shard, then its worker dies.
    ``env``: set in the executor first, as ``spark.executorEnv`` would have (the session started
    before the S3 server did)."""

    def __init__(self, real, env: dict | None = None) -> None:
        self.real, self.env = real, env or {}

    def __call__(self, partition, rows):
        from pyspark import TaskContext

        os.environ.update(self.env)

        if TaskContext.get().attemptNumber() == 0:
            enginekit.half_a_shard(self.real.output, f"{partition:05d}-killed")
            os._exit(1)
        return self.real(partition, rows)


def test_a_dataframe_becomes_a_dataset(spark, photos, tmp_path):
    from fastdata.converters.engines.spark import write_shards

    out = tmp_path / "frame"
    summary = write_shards(photo_frame(spark, photos), out, format="recordio", classes=["ants", "bees"])
    assert summary == {"shards": 3, "images": 100, "skipped": []}  # the *.jpg files
    assert stored(out) == sources(photos)  # every image exactly once, byte for byte (stored as they are)
    assert main(["verify", str(out), "-q"]) == 0
    assert not (out / ".fastdata-attempts").exists()


def test_a_dataframe_task_that_dies_on_its_first_attempt(spark, photos, tmp_path, monkeypatch):
    from pyspark import cloudpickle

    from fastdata.converters.engines import spark as engine

    real = engine._ShardTask
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(enginekit)
    try:
        monkeypatch.setattr(engine, "_ShardTask", lambda *a: FirstAttemptDies(real(*a)))
        out = tmp_path / "frame-retried"
        assert engine.write_shards(photo_frame(spark, photos), out, format="tfrecord")["images"] == 100
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        cloudpickle.unregister_pickle_by_value(enginekit)
    assert stored(out) == sources(photos)
    assert not [p for p in out.rglob("*") if "attempt" in p.name or "killed" in p.name or p.name == "shard-x.rec"]
    assert main(["verify", str(out), "-q"]) == 0


def table_frame(spark, photos: Path, partitions: int = 3):
    """The photos as a DataFrame of (content, label, path) rows in path order, in
    ``partitions`` fixed slices: the same partitions, run after run."""
    rows = [(p.read_bytes(), int(p.parent.name == "bees"), str(p)) for p in sorted(photos.rglob("*.jpg"))]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), ["content", "label", "path"])


def test_a_dataframe_written_to_s3_is_the_dataset_a_folder_gets(spark, s3, photos, tmp_path, monkeypatch):
    """Each task uploads its shard under its own attempt name, its first attempt dying half-way
    through; the driver copies the counted ones into place: the bucket then holds, byte for byte,
    what a folder gets, and no attempt."""
    from pyspark import cloudpickle

    from fastdata.converters.engines import spark as engine

    folder = tmp_path / "folder"
    engine.write_shards(table_frame(spark, photos), folder, format="recordio", name=None)
    s3.client().mkdir("spark-out")
    real = engine._ShardTask
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(enginekit)
    try:
        monkeypatch.setattr(engine, "_ShardTask", lambda *a: FirstAttemptDies(real(*a), s3.env()))
        summary = engine.write_shards(table_frame(spark, photos), "s3://spark-out/photos", format="recordio", name=None)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        cloudpickle.unregister_pickle_by_value(enginekit)
    assert summary["images"] == 100
    assert enginekit.bucket_files(s3, "spark-out/photos") == files(folder)


def test_credentials_in_storage_options_are_refused(spark, photos, tmp_path):
    from fastdata.errors import ConfigError
    from fastdata.spark import write_shards

    with pytest.raises(ConfigError, match=r"\['key', 'secret'\] hold credentials.*spark.executorEnv"):
        write_shards(table_frame(spark, photos), "s3://spark-out/refused", format="recordio",
                     storage_options={"key": "k", "secret": "s", "endpoint_url": "http://127.0.0.1:9"})


def test_a_dataframe_of_paths_and_urls_becomes_a_dataset(spark, photos, tmp_path):
    """A table of file names instead of bytes: each task reads its files, by path or by URL (``file://``
    here, the fsspec code path of ``s3://``); a file that is gone is skipped and named, not fatal."""
    from fastdata.spark import write_shards

    files = sorted(photos.rglob("*.jpg"))
    rows = [(p.as_uri() if k % 2 else str(p), int(p.parent.name == "bees")) for k, p in enumerate(files)]
    rows.append((str(photos / "bees" / "gone.jpg"), 1))
    df = spark.createDataFrame(rows, ["file", "label"]).repartition(2)
    out = tmp_path / "paths"
    summary = write_shards(df, out, format="recordio", image="file", name=None)
    assert summary["images"] == len(files)
    assert [(name.endswith("gone.jpg"), "cannot be read" in why) for name, why in summary["skipped"]] == [(True, True)]
    assert stored(out) == sources(photos)
    assert main(["verify", str(out), "-q"]) == 0
