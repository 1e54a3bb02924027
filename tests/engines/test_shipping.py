"""The pool of a cluster whose nodes share no folder with the driver
(:mod:`fastdata.converters.workers.shipping`), without an engine: a task
writes its shard in a folder of its node and hands the files back, they land
where the shard goes, a join runs in the driver, and a folder SRC missing on
a node is named."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from fastdata.converters.workers.pool import Outcome
from fastdata.converters.workers.shipping import LANDING, ShippingPool, run_elsewhere
from fastdata.errors import FastDataError


@dataclasses.dataclass(frozen=True)
class Job:
    path: str
    sources_root: str | None = None


@dataclasses.dataclass(frozen=True)
class Join:
    target: str


class Here:
    """An engine's pool that runs each task at once, in this process."""

    def __init__(self) -> None:
        self.finished: list[tuple[int, Outcome]] = []

    def submit(self, fn, *args) -> int:
        token = 100 + len(self.finished)
        try:
            self.finished.append((token, Outcome(fn(*args))))
        except Exception as exc:  # noqa: BLE001 - as an engine hands an error back
            self.finished.append((token, Outcome(error=exc)))
        return token

    def completed(self, timeout=None):
        done, self.finished = self.finished, []
        return done


def test_a_task_writes_on_its_node_and_its_files_land_where_the_shard_goes(tmp_path):
    seen: list[str] = []

    def write(job: Job) -> str:
        seen.append(job.path)
        Path(job.path).write_bytes(b"records")
        Path(job.path).with_suffix(".idx").write_bytes(b"idx")
        return "its record"

    folder = tmp_path / "out"
    folder.mkdir()
    pool = ShippingPool(Here())
    token = pool.submit(write, Job(str(folder / "shard-00000.rec")))
    [(got, outcome)] = pool.completed()
    assert got == token and outcome.result() == "its record"
    assert not seen[0].startswith(str(tmp_path))  # written in a folder of the node, not the driver's
    assert not Path(seen[0]).parent.exists()  # and that folder is gone
    assert (folder / "shard-00000.rec").read_bytes() == b"records" and (folder / "shard-00000.idx").read_bytes() == b"idx"
    assert pool.shipped == len(b"records") + len(b"idx") and not list(folder.glob(f"*{LANDING}"))
    joined = pool.submit(lambda job: f"joined {Path(job.target).name}", Join(str(folder / "shard-00001.rec")))
    assert [(t, o.result()) for t, o in pool.completed()] == [(joined, "joined shard-00001.rec")]


def test_a_failed_task_lands_nothing_and_its_error_comes_back(tmp_path):
    def fail(job: Job) -> str:
        Path(job.path).write_bytes(b"half")
        raise OSError("disk full on the node")

    pool = ShippingPool(Here())
    pool.submit(fail, Job(str(tmp_path / "shard-00000.rec")))
    [(_, outcome)] = pool.completed()
    with pytest.raises(OSError, match="disk full"):
        outcome.result()
    assert not list(tmp_path.iterdir())


def test_a_folder_source_missing_on_the_node_is_named(tmp_path):
    job = Job(str(tmp_path / "shard-00000.rec"), sources_root=str(tmp_path / "not-mounted"))
    with pytest.raises(FastDataError, match=r"not-mounted is not on node .*mount it on every node"):
        run_elsewhere(lambda j: pytest.fail("ran without its source"), job)
    # a URL source is read from the bucket: no folder to look for
    assert run_elsewhere(lambda j: "ok", Job(str(tmp_path / "s.rec"), sources_root="s3://b/photos")) == ("ok", {})


def test_a_task_on_a_node_without_the_drivers_folder_runs_where_it_is(tmp_path):
    from fastdata.converters.workers.attempts import run_task

    here = os.getcwd()
    ran = run_task(str(tmp_path / "the-driver's-folder"), lambda *a: None, "key", lambda: (),
                   run_elsewhere, (lambda job: "written", Job(str(tmp_path / "s.rec"))))
    assert ran == (True, ("written", {})) and os.getcwd() == here
