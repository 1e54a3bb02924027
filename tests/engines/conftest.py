"""Fixtures of the engine tests: the generated photos converted on this
machine (the reference), a two-node Ray cluster, a Spark session. A missing
engine skips its tests; under CI (``CI=true``, where .ci/run installs both) it fails them."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the clusters, shared with engine_convert.py
from clusters import MISSING, RayNodes, spark_session  # noqa: E402
from enginekit import CONVERT  # noqa: E402

from fastdata.converters.cli import main  # noqa: E402


def _need(module: str, what: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        reason = MISSING.format(what=what, extra=extra)
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def photos(photo_tree: Path) -> Path:
    """The generated photos' train split (101 JPEGs in two classes)."""
    return photo_tree / "train"


@pytest.fixture(scope="session")
def reference(photos: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``fastdata convert --workers 2`` of :func:`photos`: what every engine must write, byte for byte."""
    out = tmp_path_factory.mktemp("engines") / "reference"
    assert main(["convert", str(photos), str(out), *CONVERT, "--workers", "2"]) == 0
    return out


@pytest.fixture(scope="module")
def ray_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayNodes]:
    """Two Ray nodes on 127.0.0.1 (one CPU each), this process connected;
    their workers sleep 0.04 s per image (so a test can kill one mid-shard)."""
    _need("ray", "Ray", "ray")
    nodes = RayNodes(tmp_path_factory.mktemp("ray-logs"), env={"FASTDATA_TEST_DELAY": "0.04"})
    try:
        nodes.connect()
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    """A Spark ``local[2,2]`` session (a failed task is tried twice)."""
    _need("pyspark", "PySpark", "spark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        reason = "Spark needs a Java runtime (17+): apt-get install openjdk-17-jre-headless"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    session = spark_session()
    try:
        yield session
    finally:
        session.stop()
