"""``fastdata.ray.write_shards``: a Ray Data ``Dataset`` of image bytes written
as a fastdata dataset on the two-node local cluster (one shard a block):
every image once with its label, the same files run after run, a write task
whose worker dies on its first attempt, and a job that cannot finish; and
the public names ``fastdata.ray.write_shards`` / ``fastdata.spark.write_shards``."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import enginekit
import pytest

from fastdata.converters.cli import main

pytestmark = pytest.mark.timeout(600)

ATTEMPTS = ".fastdata-attempts"


def files(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (hidden ones too: a stray attempt folder counts) by relative path."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def photo_dataset(photos: Path, blocks: int = 3):
    """The photos' ``*.jpg`` files as Ray Data rows (``bytes``, ``path``, ``label``: 1 for bees), in ``blocks`` blocks."""
    import ray

    ds = ray.data.read_binary_files(str(photos), include_paths=True, file_extensions=["jpg"])
    return ds.map(lambda row: {**row, "label": int("/bees/" in row["path"])}).repartition(blocks)


def stored(out: Path) -> list[tuple[bytes, int]]:
    from fastdata import open_dataset

    dataset = open_dataset(str(out))
    return sorted(dataset.encoded(i)[:2] for i in range(len(dataset)))


def sources(photos: Path) -> list[tuple[bytes, int]]:
    return sorted((p.read_bytes(), int(p.parent.name == "bees")) for p in photos.rglob("*.jpg"))


def no_attempts_left(out: Path) -> bool:
    return not [p for p in out.rglob("*") if ATTEMPTS in p.as_posix() or "killed" in p.name]


def test_a_dataset_becomes_a_recordio_dataset(ray_nodes, photos, tmp_path):
    from fastdata.ray import write_shards

    out = tmp_path / "rec"
    summary = write_shards(photo_dataset(photos), out, format="recordio", classes=["ants", "bees"])
    assert summary == {"shards": 3, "images": 100, "skipped": []}
    assert stored(out) == sources(photos)  # every image exactly once, with its label, byte for byte
    assert sorted(p.name for p in out.glob("*.rec")) == ["shard-00000.rec", "shard-00001.rec", "shard-00002.rec"]
    assert main(["verify", str(out), "-q"]) == 0
    assert no_attempts_left(out)


def test_the_same_dataset_writes_the_same_files(ray_nodes, photos, tmp_path):
    """Sample ids and shard boundaries follow the dataset's order, not the tasks' timing (tfrecord)."""
    from fastdata.ray import write_shards

    first, second = tmp_path / "one", tmp_path / "two"
    for out in (first, second):
        assert write_shards(photo_dataset(photos, 2), out, format="tfrecord")["shards"] == 2
    assert files(first) == files(second)
    assert stored(first) == sources(photos)
    assert main(["verify", str(first), "-q"]) == 0


def _sink_that_dies(real: type, marker: str, times: int) -> type:
    """A sink whose write tasks leave half a shard in an attempt folder and
    kill their worker, ``times`` times in all (counted in files named ``marker.N``)."""

    class Dies(real):  # type: ignore[misc, valid-type]
        def write(self, blocks, ctx):
            for n in range(times):
                try:
                    os.close(os.open(f"{marker}.{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    continue
                enginekit.half_a_shard(self.output, f"{ctx.task_idx:05d}-killed-{os.getpid()}")
                os._exit(1)
            return super().write(blocks, ctx)

    return Dies


@pytest.fixture()
def sink(monkeypatch):
    """Swap the engine's sink for one made by ``_sink_that_dies`` (shipped to the workers by value)."""
    from ray import cloudpickle

    from fastdata.converters.engines import ray as engine

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(enginekit)
    yield lambda marker, times: monkeypatch.setattr(engine, "_ShardSink",
                                                    _sink_that_dies(engine._ShardSink, marker, times))
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    cloudpickle.unregister_pickle_by_value(enginekit)


def test_a_write_task_whose_worker_dies_once(ray_nodes, sink, photos, tmp_path):
    from fastdata.ray import write_shards

    sink(str(tmp_path / "died"), 1)
    out = tmp_path / "retried"
    assert write_shards(photo_dataset(photos), out, format="lmdb")["images"] == 100
    assert (tmp_path / "died.0").exists()  # a worker did die
    assert stored(out) == sources(photos)  # exactly once: the dead attempt's half shard is not committed
    assert no_attempts_left(out)
    assert main(["verify", str(out), "-q"]) == 0


def test_a_bucket_gets_the_files_a_folder_gets_with_a_worker_dying_once(ray_nodes, sink, s3, photos, tmp_path):
    """s3:// OUT: the write tasks upload under attempt names of their own (one dies mid-shard and
    is retried), the driver copies the counted ones into place and writes the manifest last."""
    from fastdata.ray import write_shards

    folder = tmp_path / "folder"
    write_shards(photo_dataset(photos), folder, format="recordio")
    sink(str(tmp_path / "died"), 1)
    s3.client().mkdir("ray-out")
    # the nodes started before the S3 server: the tasks' credentials and endpoint come as Ray gives env
    summary = write_shards(photo_dataset(photos), "s3://ray-out/photos", format="recordio",
                           ray_remote_args={"runtime_env": {"env_vars": s3.env()}})
    assert summary["images"] == 100 and (tmp_path / "died.0").exists()  # a worker did die
    assert enginekit.bucket_files(s3, "ray-out/photos") == files(folder)  # byte for byte; no attempt object left


def test_a_job_that_cannot_finish_leaves_no_manifest(ray_nodes, sink, photos, tmp_path):
    from fastdata.ray import write_shards

    sink(str(tmp_path / "died"), 1000)
    out = tmp_path / "failed"
    with pytest.raises(Exception, match=r"(?i)worker|died|crash|exit"):
        write_shards(photo_dataset(photos, 1), out, format="recordio", ray_remote_args={"max_retries": 1})
    assert (tmp_path / "died.1").exists()  # tried twice
    assert not (out / "manifest.json").exists()
    assert not (out / ATTEMPTS).exists()
    assert list(out.iterdir()) == []


def test_a_finished_folder_is_refused(ray_nodes, photos, tmp_path):
    from fastdata.errors import ConfigError
    from fastdata.ray import write_shards

    out = tmp_path / "done"
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    with pytest.raises(ConfigError, match="already holds a finished dataset"):
        write_shards(photo_dataset(photos), out, format="recordio")
    with pytest.raises(ConfigError, match=r"no column 'content'.*it has"):
        write_shards(photo_dataset(photos), tmp_path / "other", format="recordio", image="content")


# the public names: thin doors to the engines, and what they say when a part is missing


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_the_public_name_calls_the_engine(engine, monkeypatch):
    import importlib

    public = importlib.import_module(f"fastdata.{engine}")
    module = importlib.import_module(f"fastdata.converters.engines.{engine}")
    calls = []
    monkeypatch.setattr(module, "write_shards", lambda *a, **k: calls.append((a, k)) or {"shards": 0})
    assert public.write_shards("data", "out", format="tfrecord", label="y") == {"shards": 0}
    (args, kwargs), = calls
    assert args == ("data", "out") and kwargs["format"] == "tfrecord" and kwargs["label"] == "y"


@pytest.mark.parametrize(("engine", "missing", "says"), [
    ("ray", "fastdata.converters.engines.ray", "pip install -e ."),
    ("ray", "ray.data", "pip install 'fastdata[ray]'"),
    ("spark", "fastdata.converters.engines.spark", "pip install -e ."),
    ("spark", "pyspark", "pip install 'fastdata[spark]'"),
])
def test_a_missing_part_is_named(engine, missing, says, monkeypatch):
    import importlib

    from fastdata.errors import ConfigError

    public = importlib.import_module(f"fastdata.{engine}")
    monkeypatch.setitem(sys.modules, missing, None)  # import raises ModuleNotFoundError naming it
    if missing.startswith("fastdata.converters"):  # else `from package import engine` finds the attribute
        monkeypatch.delattr(importlib.import_module("fastdata.converters.engines"), engine, raising=False)
    with pytest.raises(ConfigError, match=f"fastdata.{engine}.write_shards needs .*{re.escape(says)}"):
        public.write_shards(object(), "out", format="recordio")
