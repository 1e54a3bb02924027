"""Datasets in S3, served by a real SeaweedFS on 127.0.0.1 (see conftest):
every format, streams across ranks and workers, and the faults -- the
server stopped mid-epoch, a damaged or missing object, wrong credentials,
a cache too small."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch.utils.data
from remotekit import make_dataset, run_forked, upload
from servers import Outage

import fastdata
from fastdata.errors import FormatError, RemoteError
from fastdata.remote import RetryPolicy, localize, read_log

BUCKET = "fastdata-test"
FAST_FAIL = RetryPolicy(total_seconds=2.0, first_delay=0.1, max_delay=0.5, timeout=1.0)
PATIENT = RetryPolicy(total_seconds=40.0, first_delay=0.2, max_delay=1.0, timeout=3.0)


@pytest.fixture(scope="module")
def datasets(s3, tmp_path_factory):
    """One dataset per format in the bucket: ``{format: (url, image bytes -> index, local copy)}``."""
    fs = s3.client()
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    root = tmp_path_factory.mktemp("s3-datasets")
    out = {}
    for fmt, n, shards in (("recordio", 80, 8), ("tfrecord", 40, 4), ("lmdb", 40, 4)):
        ids = make_dataset(root / fmt, fmt, n=n, shards=shards)
        upload(fs, root / fmt, f"{BUCKET}/{fmt}")
        out[fmt] = (f"s3://{BUCKET}/{fmt}", ids, root / fmt)
    return out


def _copy(s3, datasets, fmt: str, name: str) -> tuple[str, Path]:
    """A private copy of one dataset (for tests that damage it)."""
    url, _, local = datasets[fmt]
    upload(s3.client(), local, f"{BUCKET}/{name}")
    return f"s3://{BUCKET}/{name}", local


def _cached_bytes(directory: Path) -> int:
    """Bytes of finished shard and index files (a download in flight is renamed under our feet)."""
    total = 0
    for path in directory.glob("shard-*"):
        if not path.name.endswith(".partial"):
            try:
                total += path.stat().st_size
            except FileNotFoundError:
                pass  # evicted just now
    return total


def _shard_files(cache: Path) -> list[str]:
    return [e["file"] for e in read_log(cache) if not e["file"].endswith((".idx", ".jsonl", ".crc"))]


@pytest.mark.parametrize("fmt", ["recordio", "tfrecord", "lmdb"])
def test_a_url_reads_like_the_local_copy(datasets, fmt, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the default cache location
    url, ids, local = datasets[fmt]
    remote_ds = fastdata.open_dataset(url, decode=False)
    local_ds = fastdata.open_dataset(str(local), decode=False)
    assert type(remote_ds) is type(local_ds) and len(remote_ds) == len(local_ds)
    got = [remote_ds[i] for i in range(len(remote_ds))]
    assert got == [local_ds[i] for i in range(len(local_ds))]
    assert sorted(ids[image] for image, _ in got) == list(range(len(ids)))
    cache = tmp_path / "xdg" / "fastdata" / "remote"
    shards = _shard_files(cache)
    assert len(shards) == len(set(shards)) == len(remote_ds.shards.paths)
    again = fastdata.open_dataset(url, decode=False)  # warm: served from the cache
    assert [again[i] for i in range(len(again))] == got and _shard_files(cache) == shards


# Shuffle windows are windows of the epoch's order (the same for any world size, so a
# resume may change it): the window across the two ranks' boundary is read by both, and
# with the default 512 it would span every shard of this small dataset.
WINDOW = 8


def _stream_ids(directory: str, ids: dict, rank: int, epoch: int) -> list[int]:
    stream = fastdata.RecordIOStream(directory, decode=False, seed=5, rank=rank, world_size=2, shuffle_buffer=WINDOW)
    stream.set_epoch(epoch)
    loader = torch.utils.data.DataLoader(stream, batch_size=None, num_workers=2, multiprocessing_context="fork")
    return [ids[image] for image, _ in loader]


def test_two_ranks_two_workers_read_each_sample_once_and_fetch_only_their_shards(datasets, tmp_path):
    url, ids, _ = datasets["recordio"]
    seen = []
    for rank in (0, 1):  # two nodes: each its own cache
        node = tmp_path / f"node{rank}"
        directory = localize(url, cache_dir=node)
        seen += _stream_ids(directory, ids, rank, epoch=0)
        stream = fastdata.RecordIOStream(directory, decode=False, seed=5, rank=rank, world_size=2, shuffle_buffer=WINDOW)
        share = stream.share(0).records(stream.shards.counts)
        mine = {Path(stream.shards.paths[k]).name for k in np.unique(np.searchsorted(stream.shards.ends, share, side="right"))}
        fetched = [e for e in read_log(node) if e["file"].endswith(".rec")]
        assert sorted(e["file"] for e in fetched) == sorted(mine)  # each of its shards once, no other
        sizes = {s.file: s.bytes for s in fastdata.formats.Manifest.read(directory).shards}
        assert sum(e["bytes"] for e in fetched) == sum(sizes[f] for f in mine) < sum(sizes.values())
    assert sorted(seen) == list(range(len(ids)))  # every sample exactly once across ranks and workers


def _whole_epoch(directory: str, ids: dict, out) -> None:
    stream = fastdata.RecordIOStream(directory, decode=False, seed=5, rank=0, world_size=1)
    loader = torch.utils.data.DataLoader(stream, batch_size=None, num_workers=2, multiprocessing_context="fork")
    out.put(sorted(ids[image] for image, _ in loader))


def test_jobs_on_one_node_share_the_cache_and_download_each_shard_once(datasets, tmp_path):
    """Two processes with two workers each read every shard at the same time
    through one cache: each shard is downloaded once, the others wait for it."""
    url, ids, _ = datasets["recordio"]
    directory = localize(url, cache_dir=tmp_path / "node")
    results = run_forked(_whole_epoch, directory, ids, copies=2, timeout=120)
    assert results == [list(range(len(ids)))] * 2
    fetched = Counter(e["file"] for e in read_log(tmp_path / "node") if e["file"].endswith(".rec"))
    assert len(fetched) == 8 and set(fetched.values()) == {1}


def test_server_stopped_mid_epoch_and_restarted_the_epoch_completes(s3, datasets, tmp_path):
    url, ids, _ = datasets["recordio"]
    directory = localize(url, cache_dir=tmp_path / "cache", retry=PATIENT)
    stream = fastdata.RecordIOStream(directory, decode=False, seed=1, shuffle=False)
    seen = []
    with Outage(s3, seconds=1.0) as outage:
        for image, _ in stream:
            seen.append(ids[image])
            if len(seen) == 5:  # inside the first shard: the other seven are not fetched yet
                outage.begin()
    stopped, restarted = outage.stopped_at, {"at": outage.restarted_at}
    assert sorted(seen) == list(range(len(ids))) and len(seen) == len(set(seen))
    # downloads that ended after the stop waited out the outage (read-ahead may end them just before
    # the restart is recorded: the server answers before its own readiness probe returns)
    late = [e for e in read_log(tmp_path / "cache") if e["time"] > stopped and e["file"].endswith(".rec")]
    assert late and restarted["at"] - stopped >= 1.0  # shards did arrive after the restart


def test_server_down_past_the_retry_budget_fails_clearly_and_fast(s3, datasets, tmp_path):
    url, _, _ = datasets["tfrecord"]
    ds = fastdata.TFRecordDataset(localize(url, cache_dir=tmp_path / "cache", retry=FAST_FAIL), decode=False)
    s3.stop()
    try:
        start = time.monotonic()
        with pytest.raises(RemoteError, match=rf"downloading {url}/shard-00000\.tfrecord: still failing after \d+ attempt") as info:
            ds[0]
        elapsed = time.monotonic() - start
    finally:
        s3.start()
    assert elapsed < FAST_FAIL.total_seconds + FAST_FAIL.timeout + 2, elapsed  # bounded: never a hang
    assert s3.secret_key not in str(info.value)


def test_a_damaged_object_is_detected_and_named(s3, datasets, tmp_path):
    url, local = _copy(s3, datasets, "lmdb", "damaged-lmdb")
    data = bytearray((local / "shard-00001.lmdb" / "data.mdb").read_bytes())
    data[-100] ^= 0xFF
    s3.client().pipe_file(f"{BUCKET}/damaged-lmdb/shard-00001.lmdb/data.mdb", bytes(data))
    ds = fastdata.LMDBDataset(localize(url, cache_dir=tmp_path / "cache"), decode=False)
    ds[0]  # shard 0 is fine
    with pytest.raises(FormatError, match=rf"{url}/shard-00001\.lmdb/data\.mdb.*CRC32C differs.*after two downloads"):
        ds[int(ds.shards.starts[1])]
    assert [e.get("problem", "") != "" for e in read_log(tmp_path / "cache") if e["file"] == "shard-00001.lmdb/data.mdb"] == [True, True]


def test_a_missing_object_is_named(s3, datasets, tmp_path):
    url, _ = _copy(s3, datasets, "tfrecord", "missing-shard")
    s3.client().rm_file(f"{BUCKET}/missing-shard/shard-00002.tfrecord")
    ds = fastdata.TFRecordDataset(localize(url, cache_dir=tmp_path / "cache"), decode=False)
    with pytest.raises(FormatError, match=rf"{url}/shard-00002\.tfrecord.*missing on the server"):
        ds[int(ds.shards.starts[2])]
    with pytest.raises(fastdata.ManifestError, match=rf"s3://{BUCKET}/no-such-dataset/manifest.json: no manifest"):
        localize(f"s3://{BUCKET}/no-such-dataset", cache_dir=tmp_path / "cache")


def test_wrong_credentials_are_refused_clearly_without_the_secret(s3, datasets, tmp_path, monkeypatch):
    wrong = "not-the-secret-but-secret-all-the-same"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    start = time.monotonic()
    with pytest.raises(RemoteError, match="access denied.*AWS_SECRET_ACCESS_KEY") as info:
        localize(datasets["recordio"][0], cache_dir=tmp_path / "cache")
    assert time.monotonic() - start < 5  # refused at once, not retried
    text = str(info.value)
    assert wrong not in text and s3.secret_key not in text and s3.access_key not in text


def test_a_cache_smaller_than_the_dataset_evicts_and_the_epoch_completes(datasets, tmp_path):
    url, ids, local = datasets["recordio"]
    sizes = sorted(p.stat().st_size for p in local.glob("*.rec"))
    limit = sizes[-1] * 3  # three of eight shards
    directory = localize(url, cache_dir=tmp_path / "cache", cache_bytes=limit)
    stream = fastdata.RecordIOStream(directory, decode=False, shuffle=False)
    peak, seen = 0, []
    for image, _ in stream:
        seen.append(ids[image])
        peak = max(peak, _cached_bytes(Path(directory)))
    assert seen == list(range(len(ids))) and peak <= limit
    assert len(list(Path(directory).glob("*.rec"))) < 8
