"""Datasets behind a real web server (nginx on 127.0.0.1, see conftest):
every format read over http://, a missing object, and nginx stopped
mid-epoch and started again."""

from __future__ import annotations

import shutil
import time

import pytest
from remotekit import make_dataset
from servers import Outage

import fastdata
from fastdata.errors import FormatError, RemoteError
from fastdata.remote import RetryPolicy, localize, read_log


@pytest.fixture(scope="module")
def published(nginx, tmp_path_factory):
    """``{format: (url, image bytes -> index)}`` for datasets under nginx's root."""
    out = {}
    for fmt in ("recordio", "tfrecord", "lmdb"):
        ids = make_dataset(nginx.root / fmt, fmt, n=30, shards=3)
        out[fmt] = (f"{nginx.url}/{fmt}", ids)
    return out


@pytest.mark.parametrize("fmt", ["recordio", "tfrecord", "lmdb"])
def test_every_format_reads_over_http(published, fmt, tmp_path):
    url, ids = published[fmt]
    ds = fastdata.open_dataset(localize(url, cache_dir=tmp_path), decode=False)
    assert sorted(ids[ds[i][0]] for i in range(len(ds))) == list(range(30))
    if fmt != "lmdb":
        stream = fastdata.open_dataset(url, streaming=True, decode=False)
        assert sorted(ids[image] for image, _ in stream) == list(range(30))


def test_a_missing_object_over_http_is_named(nginx, published, tmp_path):
    shutil.copytree(nginx.root / "tfrecord", nginx.root / "gone")
    (nginx.root / "gone" / "shard-00001.tfrecord").unlink()
    ds = fastdata.TFRecordDataset(localize(f"{nginx.url}/gone", cache_dir=tmp_path), decode=False)
    with pytest.raises(FormatError, match=rf"{nginx.url}/gone/shard-00001\.tfrecord.*missing on the server"):
        ds[int(ds.shards.starts[1])]


def test_nginx_stopped_mid_epoch_and_restarted(nginx, published, tmp_path):
    url, ids = published["recordio"]
    policy = RetryPolicy(total_seconds=20, first_delay=0.1, max_delay=0.5, timeout=2)
    # a cache of two shards: read-ahead (half the cache) takes one shard ahead, so shard 2 waits for shard 1
    limit = 2 * max(p.stat().st_size for p in (nginx.root / "recordio").glob("*.rec")) + 1
    stream = fastdata.RecordIOStream(localize(url, cache_dir=tmp_path, retry=policy, cache_bytes=limit), decode=False,
                                     shuffle=False)
    seen = []
    with Outage(nginx, seconds=1.0) as outage:
        for image, _ in stream:
            seen.append(ids[image])
            if len(seen) == 3:  # in shard 0 of 3: shard 2 is not fetched yet
                outage.begin()
    assert sorted(seen) == list(range(30))
    # ended after the stop, so fetched once nginx was back (its download may end before the restart is
    # recorded: nginx answers as soon as it listens, before the readiness check returns)
    late = [e["file"] for e in read_log(tmp_path) if e["time"] > outage.stopped_at]
    assert "shard-00002.rec" in late
    assert any("shard-00002.rec" in line for line in nginx.requests())


def test_nginx_down_past_the_budget_names_the_url(nginx, published, tmp_path):
    url, _ = published["lmdb"]
    ds = fastdata.LMDBDataset(localize(url, cache_dir=tmp_path, retry=RetryPolicy(total_seconds=1, first_delay=0.1, timeout=1)),
                              decode=False)
    nginx.stop()
    try:
        start = time.monotonic()
        with pytest.raises(RemoteError, match=rf"{url}/shard-00000\.lmdb/data\.mdb: still failing.*retry budget 1 s"):
            ds[0]
        assert time.monotonic() - start < 5
    finally:
        nginx.start()
    assert not read_log(tmp_path) or all("shard-00000" not in e["file"] for e in read_log(tmp_path))
