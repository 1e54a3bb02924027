"""``fastdata convert --engine ray`` on a two-node local cluster, and
``fastdata.ray.read_shards``: the same bytes as one machine, the same samples
as the loader, and a worker or a node lost mid-run."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from clusters import task_processes
from enginekit import CONVERT

from fastdata.converters.cli import main

pytestmark = pytest.mark.timeout(600)


def files(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (hidden ones too: a stray attempt folder counts) by relative path."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def convert_in_thread(photos: Path | str, out: Path | str) -> tuple[threading.Thread, list[int]]:
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(main(["convert", str(photos), str(out), *CONVERT,
                                                                 "--engine", "ray"])), daemon=True)
    thread.start()
    return thread, codes


def wait_for_task(nodes, node: int | None, thread: threading.Thread, timeout: float = 120.0) -> int:
    """The pid of a worker running a shard task (on ``node``, or any), once there is one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and thread.is_alive():
        found = task_processes(nodes, node)
        if found:
            return found[0]
        time.sleep(0.02)
    pytest.fail(f"no shard task ran on node {node} within {timeout} s (the conversion {'ended' if not thread.is_alive() else 'is stuck'})")


def test_two_nodes_write_the_bytes_of_one_machine(ray_nodes, photos, reference, tmp_path):
    out = tmp_path / "ray"
    assert main(["convert", str(photos), str(out), *CONVERT, "--engine", "ray"]) == 0
    assert files(out) == files(reference)
    assert main(["verify", str(out), "-q"]) == 0


def test_a_cluster_of_several_machines_converts_url_to_url(ray_nodes, photos, reference, tmp_path, monkeypatch):
    """The path of nodes that share no folder with the driver: the source is
    only listed here, the tasks read each object and hand their shards back,
    and the dataset is uploaded from the staging folder, the manifest last."""
    from fastdata.converters.workers.engines import SEVERAL_MACHINES_VARIABLE

    monkeypatch.setenv(SEVERAL_MACHINES_VARIABLE, "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    assert main(["convert", photos.as_uri(), (bucket / "out").as_uri(), *CONVERT, "--engine", "ray"]) == 0
    got, want = files(bucket / "out"), files(reference)
    assert got.keys() == want.keys()
    assert [n for n in want if got[n] != want[n]] == ["manifest.json", "sources.jsonl"]  # shards: the same bytes
    assert not (tmp_path / "cache" / "fastdata" / "sources").exists()  # no object was downloaded here
    assert not any((tmp_path / "cache" / "fastdata" / "listings").glob("*"))  # the listing is gone once done
    assert main(["verify", (bucket / "out").as_uri(), "-q"]) == 0


def test_a_worker_killed_mid_shard_is_retried(ray_nodes, photos, reference, tmp_path):
    out = tmp_path / "killed"
    thread, codes = convert_in_thread(photos, out)
    victim = wait_for_task(ray_nodes, None, thread)
    os.kill(victim, signal.SIGKILL)
    thread.join(300)
    assert codes == [0], "the conversion did not finish after a worker was killed"
    assert files(out) == files(reference)  # every record once, no partial or attempt file left


def test_a_worker_killed_mid_shard_on_a_node_that_hands_shards_back(ray_nodes, photos, reference, tmp_path, monkeypatch):
    from fastdata.converters.workers.engines import SEVERAL_MACHINES_VARIABLE

    monkeypatch.setenv(SEVERAL_MACHINES_VARIABLE, "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "shipped"
    thread, codes = convert_in_thread(photos.as_uri(), out)
    os.kill(wait_for_task(ray_nodes, None, thread), signal.SIGKILL)
    thread.join(300)
    assert codes == [0], "the conversion did not finish after a worker was killed"
    got, want = files(out), files(reference)
    assert got.keys() == want.keys()  # no partial, landing or attempt file left
    assert [n for n in want if got[n] != want[n]] == ["manifest.json", "sources.jsonl"]


def test_read_shards_gives_the_loaders_samples(ray_nodes, reference):
    import ray

    from fastdata import make_loader, open_dataset
    from fastdata.ray import read_shards
    from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    transform = Compose([RandomResizedCrop(48), RandomHorizontalFlip()])
    rows = read_shards(str(reference), seed=7, epoch=2, transform=transform, tasks=3).take_all()
    loader = make_loader(open_dataset(str(reference), transform=transform), 10, seed=7, workers=0, drop_last=False)
    loader.set_epoch(2)
    images, targets = [], []
    for batch, labels in loader:
        images.extend(batch)
        targets.extend(labels.tolist())
    assert len(rows) == len(images) == 101
    assert [int(r["target"]) for r in rows] == targets
    assert all(np.array_equal(image.numpy().transpose(1, 2, 0), r["image"]) for image, r in zip(images, rows))
    # another epoch draws other crops: the rows depend on the epoch, not only the seed
    again = read_shards(str(reference), seed=7, epoch=3, transform=transform, tasks=3).take(5)
    assert any(not np.array_equal(a["image"], b["image"]) for a, b in zip(again, rows))
    plain = read_shards(str(reference)).take_all()  # stored order, one task per shard, undecoded
    assert [r["key"] for r in plain] == list(range(101))
    from fastdata import open_dataset as reopen

    stored = reopen(str(reference))
    assert [r["bytes"] for r in plain[:5]] == [stored.encoded(i)[0] for i in range(5)]


@pytest.mark.parametrize("name", ["im2rec_passthrough.rec", "train-00000-of-00002.tfrecord"])
def test_read_shards_reads_what_mxnet_and_tensorflow_wrote(ray_nodes, shared_data, name):
    """Shards another tool wrote (the real MXNet's im2rec, TensorFlow's TFRecordWriter) read as
    open_dataset reads them: the same keys, targets and stored bytes."""
    from fastdata import open_dataset
    from fastdata.ray import read_shards

    path = str(shared_data / "vectors" / name)
    rows = read_shards(path).take_all()
    dataset = open_dataset(path)
    assert len(rows) == len(dataset) > 0
    assert [r["key"] for r in rows] == list(range(len(dataset)))
    for r in rows:
        data, target, _ = dataset.encoded(r["key"])
        assert r["bytes"] == data and np.array_equal(r["target"], target)


def test_a_node_that_leaves_mid_run(ray_nodes, photos, reference, tmp_path):
    """Last in this module: the cluster is one node afterwards."""
    out = tmp_path / "node-left"
    thread, codes = convert_in_thread(photos, out)
    wait_for_task(ray_nodes, 1, thread)
    ray_nodes.kill_node(1)
    thread.join(300)
    assert codes == [0], "the conversion did not finish on the node that stayed"
    assert files(out) == files(reference)
