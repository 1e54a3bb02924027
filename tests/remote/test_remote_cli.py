"""The command line on URLs, against SeaweedFS: ``convert SRC s3://...``
(manifest last, ``--resume`` after an interrupted upload), and ``inspect``,
``verify``, ``index`` of objects in the bucket."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from remotekit import image_bytes, unique_prefix

import fastdata
from fastdata.converters import remote_io
from fastdata.remote import localize

BUCKET = "fastdata-cli"


@pytest.fixture(scope="module")
def bucket(s3):
    fs = s3.client()
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return fs


@pytest.fixture()
def source(tmp_path) -> Path:
    for i in range(24):
        path = tmp_path / "src" / ("cat" if i % 2 else "dog") / f"{i:02d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(image_bytes(i))
    return tmp_path / "src"


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fastdata.converters.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def _convert_args(source: Path, url: str, *extra: str, quiet: bool = True) -> list[str]:
    args = ["convert", str(source), url, "--format", "tfrecord", "--shards", "3", "--workers", "1", *extra]
    return args + ["-q"] if quiet else args


def test_convert_to_s3_then_read_inspect_verify(bucket, source, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    url = f"s3://{BUCKET}/{unique_prefix('ds')}"
    done = cli(*_convert_args(source, url))
    assert done.returncode == 0, done.stderr
    names = sorted(p.rsplit("/", 1)[1] for p in bucket.ls(url[5:]))
    assert "manifest.json" in names and sum(n.endswith(".tfrecord") for n in names) == 3
    assert not remote_io.staging_dir(url).exists()  # the staging copy is gone once uploaded
    ds = fastdata.open_dataset(url, decode=False)
    assert len(ds) == 24 and sorted(ds.classes) == ["cat", "dog"]
    again = cli(*_convert_args(source, url))
    assert again.returncode == 2 and "already holds a finished dataset" in again.stderr
    shown = cli("inspect", url, "--records", "2")
    assert shown.returncode == 0 and f"{url}: fastdata dataset, format tfrecord, 24 records in 3 shard(s)" in shown.stdout
    checked = cli("verify", url)
    assert checked.returncode == 0 and f"{url}: OK, 24 records in 3 shard(s)" in checked.stdout


def test_an_interrupted_upload_leaves_no_manifest_and_resume_finishes_it(bucket, source, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    url = f"s3://{BUCKET}/{unique_prefix('resume')}"
    real_upload, sent = remote_io.Store.upload, []

    def upload_then_crash(self, local, name):
        if len(sent) == 2:
            raise KeyboardInterrupt  # Ctrl-C (or a lost node) in the middle of the upload
        sent.append(name)
        real_upload(self, local, name)

    monkeypatch.setattr(remote_io.Store, "upload", upload_then_crash)
    from fastdata.converters.cli import main

    assert main(_convert_args(source, url)) == 130  # "run the same command with --resume to finish"
    monkeypatch.setattr(remote_io.Store, "upload", real_upload)
    assert "manifest.json" not in sent and len(bucket.ls(url[5:])) == 2  # a reader sees no dataset yet
    with pytest.raises(fastdata.ManifestError):
        localize(url, cache_dir=tmp_path / "cache")
    refused = cli(*_convert_args(source, url), env={"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert refused.returncode == 2 and "--resume" in refused.stderr
    resumed = cli(*_convert_args(source, url, "--resume"), env={"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert resumed.returncode == 0, resumed.stderr
    ds = fastdata.open_dataset(localize(url, cache_dir=tmp_path / "cache"), decode=False)
    assert len(ds) == 24


def test_resume_on_another_machine_sends_only_what_is_missing(bucket, source, tmp_path):
    """No staging copy here (another machine): the conversion is redone, which
    gives the same bytes, and the objects already uploaded are skipped."""
    url = f"s3://{BUCKET}/{unique_prefix('elsewhere')}"
    first = cli(*_convert_args(source, url), env={"XDG_CACHE_HOME": str(tmp_path / "a")})
    assert first.returncode == 0
    manifest = bucket.cat_file(f"{url[5:]}/manifest.json")
    bucket.rm_file(f"{url[5:]}/manifest.json")
    bucket.rm_file(f"{url[5:]}/shard-00001.tfrecord")
    again = cli(*_convert_args(source, url, "--resume", quiet=False), env={"XDG_CACHE_HOME": str(tmp_path / "b")})
    assert again.returncode == 0, again.stderr
    assert bucket.cat_file(f"{url[5:]}/manifest.json") == manifest  # the same dataset, byte for byte
    assert f"uploaded 2 file(s) to {url} (manifest last)" in again.stdout  # the shard and the manifest


def test_verify_names_a_damaged_remote_shard(bucket, source, tmp_path):
    url = f"s3://{BUCKET}/{unique_prefix('damaged')}"
    assert cli(*_convert_args(source, url), env={"XDG_CACHE_HOME": str(tmp_path)}).returncode == 0
    key = f"{url[5:]}/shard-00002.tfrecord"
    data = bytearray(bucket.cat_file(key))
    data[40] ^= 0xFF
    bucket.pipe_file(key, bytes(data))
    checked = cli("verify", url)
    assert checked.returncode == 1
    assert f"PROBLEM {url}/shard-00002.tfrecord" in checked.stdout and "fastdata-remote-" not in checked.stdout


def test_index_builds_and_uploads_beside_the_file(bucket, tmp_path):
    from remotekit import make_dataset

    make_dataset(tmp_path / "d", "tfrecord", n=10, shards=1)
    key = f"{BUCKET}/{unique_prefix('index')}/train.tfrecord"
    bucket.put_file(str(tmp_path / "d" / "shard-00000.tfrecord"), key)
    made = cli("index", f"s3://{key}")
    assert made.returncode == 0, made.stderr
    assert bucket.exists(f"{key}.idx") and len(bucket.cat_file(f"{key}.idx").splitlines()) == 10
    assert cli("index", f"s3://{key}").returncode == 2  # exists: --force to rebuild
    missing = cli("index", f"s3://{BUCKET}/nothing/here.tfrecord")
    assert missing.returncode == 2 and "no such object" in missing.stderr


def test_wrong_credentials_on_the_command_line_print_no_secret(s3, bucket):
    wrong = "wrong-secret-value-1234567"
    out = cli("inspect", f"s3://{BUCKET}/anything", env={"AWS_SECRET_ACCESS_KEY": wrong})
    assert out.returncode == 2 and "access denied" in out.stderr and "Traceback" not in out.stderr
    assert wrong not in out.stderr + out.stdout and s3.secret_key not in out.stderr + out.stdout


def test_overwrite_replaces_the_dataset_and_leaves_other_objects(bucket, source, tmp_path):
    url = f"s3://{BUCKET}/{unique_prefix('overwrite')}"
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert cli(*_convert_args(source, url, "--shards", "4"), env=env).returncode == 0  # 4 shards (last --shards wins)
    bucket.pipe_file(f"{url[5:]}/notes.txt", b"mine")
    done = cli(*_convert_args(source, url, "--overwrite"), env=env)
    assert done.returncode == 0, done.stderr
    names = sorted(p.rsplit("/", 1)[1] for p in bucket.ls(url[5:]))
    assert "notes.txt" in names and "shard-00003.tfrecord" not in names  # the old 4th shard is gone
    assert len(fastdata.open_dataset(localize(url, cache_dir=tmp_path / "c"), decode=False)) == 24


# A damaged manifest is damage found (exit 1, one PROBLEM line naming its URL), as for a local dataset.
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
