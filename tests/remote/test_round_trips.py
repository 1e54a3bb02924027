"""The requests of a remote epoch, counted by a loopback proxy in front of
SeaweedFS (see benchmarks/latency_proxy.py): one GET per file the manifest lists, no HEAD for
a file whose size the manifest records, nothing fetched twice -- and a
manifest written before sizes were recorded still reads, asking the size."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the benchmark's own proxy
from latency_proxy import LatencyProxy
from remotekit import image_bytes, make_dataset, upload

import fastdata
from fastdata.errors import DecodeError
from fastdata.formats import Manifest, Sample, registry
from fastdata.formats._atomic import write_text_atomic
from fastdata.formats.dataset_writer import finish_dataset, shard_name
from fastdata.formats.manifest import MANIFEST_NAME, SIZES_EXTRA
from fastdata.remote import localize, read_log

BUCKET = "fastdata-round-trips"


@pytest.fixture(scope="module")
def dataset(s3, tmp_path_factory):
    """``(url, image bytes -> index, manifest)``: 80 samples in 8 RecordIO shards."""
    fs = s3.client()
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    local = tmp_path_factory.mktemp("round-trips") / "ds"
    ids = make_dataset(local, "recordio", n=80, shards=8)
    upload(fs, local, f"{BUCKET}/sized")
    return f"s3://{BUCKET}/sized", ids, Manifest.read(local), local


@pytest.fixture(scope="module")
def proxy(s3):
    with LatencyProxy(s3.ports["s3"], 0.0) as p:
        yield p


def _epoch(proxy, url, cache, *, streaming: bool) -> list[bytes]:
    directory = localize(url, cache_dir=cache, storage_options={"endpoint_url": proxy.url})
    ds = fastdata.open_dataset(directory, decode=False, streaming=streaming)
    loader = fastdata.make_loader(ds, 10, train=False, workers=2, collate_fn=lambda batch: batch)
    try:
        return [image for batch in loader for image, _ in batch]
    finally:
        loader.close()


def _objects(requests, prefix: str) -> Counter:
    return Counter((q.method, q.path.split(prefix + "/", 1)[1]) for q in requests if prefix + "/" in q.path)


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "stream"])
def test_an_epoch_gets_each_file_once_and_asks_no_size(dataset, proxy, tmp_path, streaming):
    url, ids, manifest, _ = dataset
    proxy.reset()
    images = _epoch(proxy, url, tmp_path / "cache", streaming=streaming)
    assert sorted(ids[image] for image in images) == list(range(80))
    asked = _objects(proxy.reset(), f"/{BUCKET}/sized")
    heads = sorted(name for (method, name) in asked if method == "HEAD")
    assert heads == [], f"HEAD for {heads}: the manifest gives their sizes"
    wanted = {("GET", name) for name in [MANIFEST_NAME, *manifest.files()]}
    assert set(asked) == wanted and set(asked.values()) == {1}, asked  # every file once, nothing else
    assert sum(asked.values()) == 1 + 8 * 3 + len(manifest.extra_files())  # 26 here (the DALI index): no more


def test_a_manifest_without_sizes_still_reads_asking_each_small_file_its_size(s3, dataset, proxy, tmp_path):
    _, ids, _, local = dataset
    older = Manifest.read(local)
    sizes = older.extra.pop(SIZES_EXTRA)
    fs = s3.client()
    upload(fs, local, f"{BUCKET}/unsized")
    write_text_atomic(tmp_path / MANIFEST_NAME, older.to_json())  # as a fastdata before sizes wrote it
    fs.put_file(str(tmp_path / MANIFEST_NAME), f"{BUCKET}/unsized/{MANIFEST_NAME}")
    proxy.reset()
    images = _epoch(proxy, f"s3://{BUCKET}/unsized", tmp_path / "cache", streaming=False)
    assert sorted(ids[image] for image in images) == list(range(80))
    asked = _objects(proxy.reset(), f"/{BUCKET}/unsized")
    assert sorted(name for (method, name) in asked if method == "HEAD") == sorted(sizes)


def test_the_list_of_sources_comes_when_an_error_first_names_one(tmp_path):
    """``sources.jsonl`` (a line per sample, for messages) is not fetched up
    front; a record that does not decode still names its source file."""
    server = tmp_path / "server"
    server.mkdir()
    images = [image_bytes(i) if i != 2 else b"\xff\xd8\xff\xe0" + b"\x00" * 40 for i in range(4)]
    info = registry.get("recordio").write_shard(server / shard_name("recordio", 0),
                                                [Sample(image=b, label=0, id=i) for i, b in enumerate(images)])
    (server / "sources.jsonl").write_text("".join(json.dumps(f"/photos/img_{i}.jpg") + "\n" for i in range(4)))
    finish_dataset(server, "recordio", [info], ["cls"], extra={"sources": "sources.jsonl"})
    directory = Path(localize(f"file://{server}", cache_dir=tmp_path / "cache"))
    assert not (directory / "sources.jsonl").exists()
    ds = fastdata.RecordIODataset(directory)
    assert ds[1][1] == 0
    with pytest.raises(DecodeError, match=r"record 2.*\(source file /photos/img_2\.jpg\)"):
        ds[2]


def _shards_fetched(cache) -> set[str]:
    return {e["file"] for e in read_log(cache) if e["file"].endswith(".rec")}


@pytest.mark.parametrize("cache_shards, ahead", [(None, 4), (4, 2)], ids=["unbounded", "four-shard-cache"])
def test_opening_a_shard_reads_ahead_the_next_ones_within_half_the_cache(tmp_path, cache_shards, ahead):
    """A map-style reader opens shard 0: shards 1-4 follow in the manifest's
    order (4 at most), and no more bytes than half the cache may hold."""
    server = tmp_path / "server"
    make_dataset(server, "recordio", n=80, shards=8)
    largest = max(p.stat().st_size for p in server.glob("*.rec"))
    limit = None if cache_shards is None else cache_shards * largest
    directory = localize(f"file://{server}", cache_dir=tmp_path / "cache", cache_bytes=limit)
    fastdata.RecordIODataset(directory, decode=False)[0]
    wanted = {f"shard-{k:05d}.rec" for k in range(ahead + 1)}
    deadline = time.monotonic() + 30
    while not wanted <= _shards_fetched(tmp_path / "cache") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # a read-ahead beyond the window would show by now
    assert _shards_fetched(tmp_path / "cache") == wanted
