"""``fastdata verify URL`` of a dataset whose manifest is damaged: damage found
(exit 1, one PROBLEM line naming the manifest's URL), as for a local dataset."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from remotekit import image_bytes, unique_prefix

BUCKET = "fastdata-cli"


@pytest.fixture(scope="module")
def bucket(s3):
    fs = s3.client()
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return fs


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fastdata.converters.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_verify_of_a_remote_dataset_with_a_damaged_manifest_exits_1(bucket, tmp_path):
    src = tmp_path / "src"
    for i in range(6):
        path = src / ("cat" if i % 2 else "dog") / f"{i:02d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(image_bytes(i))
    url = f"s3://{BUCKET}/{unique_prefix('manifest')}"
    made = cli("convert", str(src), url, "--format", "tfrecord", "--shards", "1", "--workers", "1", "-q",
               env={"XDG_CACHE_HOME": str(tmp_path)})
    assert made.returncode == 0, made.stderr
    key = f"{url[5:]}/manifest.json"
    bucket.pipe_file(key, bucket.cat_file(key)[:-30])
    checked = cli("verify", url)
    assert checked.returncode == 1 and checked.stderr == "", (checked.stdout, checked.stderr)
    problems = [line for line in checked.stdout.splitlines() if "PROBLEM" in line]
    assert len(problems) == 1 and problems[0].startswith(f"fastdata verify: PROBLEM {url}/manifest.json: ")
    assert "fastdata-remote-" not in checked.stdout
