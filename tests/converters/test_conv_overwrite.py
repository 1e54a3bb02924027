"""``--overwrite`` deletes only what fastdata wrote: the files its manifest or plan lists."""

from __future__ import annotations

import json

import pytest
from convkit import make_folder, manifest_json, run_cli, tree

from fastdata.converters.planning.layout import PLAN_NAME
from fastdata.formats import registry


@pytest.fixture
def src(tmp_path):
    make_folder(tmp_path / "src", {"a": 3, "b": 2})
    return tmp_path / "src"


def _user_files(directory):
    (directory / "NOTES.md").write_text("my notes")
    (directory / "checkpoints").mkdir()
    (directory / "checkpoints" / "model.pt").write_bytes(b"weights")
    (directory / "shard-00000.txt").write_text("looks like a shard name, is not one")
    (directory / "mine.partial").write_text("not a fastdata partial file")


@pytest.mark.parametrize("fmt", registry.names())
def test_overwrite_keeps_user_files_beside_a_finished_dataset(src, tmp_path, capsys, fmt):
    out = tmp_path / "out"
    assert run_cli(capsys, "convert", src, out, "--format", fmt, "--shards", "3", "-q")[0] == 0
    reference = tree(out)
    _user_files(out)
    code, _, err = run_cli(capsys, "convert", src, out, "--format", fmt, "--shards", "2", "--overwrite", "-q")
    assert code == 0, err
    assert (out / "NOTES.md").read_text() == "my notes"
    assert (out / "checkpoints" / "model.pt").read_bytes() == b"weights"
    assert (out / "shard-00000.txt").exists() and (out / "mine.partial").exists()
    assert len(manifest_json(out)["shards"]) == 2
    # the third shard of the first run is gone: it was fastdata's
    assert not any(name.startswith("shard-00002") for name in tree(out))
    assert reference.keys() - tree(out).keys()


def test_overwrite_keeps_user_files_in_split_folders(src, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["convert", src, out, "--format", "recordio", "--val-fraction", "0.4", "-q"]
    assert run_cli(capsys, *args)[0] == 0
    _user_files(out)
    (out / "train" / "NOTES.md").write_text("train notes")
    assert run_cli(capsys, *args, "--overwrite")[0] == 0
    assert (out / "NOTES.md").read_text() == "my notes" and (out / "train" / "NOTES.md").read_text() == "train notes"
    assert (out / "checkpoints" / "model.pt").exists()
    assert (out / "val" / "manifest.json").exists()


def test_overwrite_of_an_unfinished_conversion_keeps_user_files(src, tmp_path, capsys):
    out = tmp_path / "out"
    # node 0 of 2 writes its shards and leaves the conversion unfinished (a plan, no manifest)
    code, _, _ = run_cli(capsys, "convert", src, out, "--format", "tfrecord", "--shards", "4", "--num-nodes", "2", "--node-rank", "0", "-q")
    assert code == 0 and (out / PLAN_NAME).exists()
    _user_files(out)
    assert run_cli(capsys, "convert", src, out, "--format", "tfrecord", "--shards", "4", "--overwrite", "-q")[0] == 0
    assert (out / "NOTES.md").exists() and (out / "checkpoints" / "model.pt").exists()
    assert (out / "shard-00000.txt").exists() and (out / "mine.partial").exists()
    assert not (out / PLAN_NAME).exists() and len(manifest_json(out)["shards"]) == 4


def test_overwrite_of_an_unfinished_conversion_removes_its_record_checksums(src, tmp_path, capsys):
    """The .crc beside each shard of the unfinished plan goes too, not only the shard and its index."""
    out = tmp_path / "out"
    args = ["convert", src, out, "--format", "recordio", "-q"]
    assert run_cli(capsys, *args, "--shards", "4", "--num-nodes", "2", "--node-rank", "0")[0] == 0
    assert (out / "shard-00002.rec.crc").exists()
    assert run_cli(capsys, *args, "--shards", "1", "--overwrite")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "dali.idx", "manifest.json", "shard-00000.idx", "shard-00000.rec", "shard-00000.rec.crc", "sources.jsonl"]


@pytest.mark.parametrize("where", ["", "train", "val"])
def test_a_manifest_fastdata_did_not_write_is_refused(src, tmp_path, capsys, where):
    out = tmp_path / "ex"
    (out / where).mkdir(parents=True, exist_ok=True)
    (out / where / "manifest.json").write_text(json.dumps({"x": 1}))
    (out / "data.csv").write_text("a\n")
    before = tree(out)
    for extra in ([], ["--overwrite"]):
        code, _, err = run_cli(capsys, "convert", src, out, "--format", "recordio", *extra)
        assert code == 2, err
        assert "manifest.json" in err and "not written by fastdata" in err
        assert len(err.strip().splitlines()) == 1
        assert tree(out) == before  # nothing deleted, nothing added


def test_overwrite_reads_each_manifest_once(tmp_path, capsys, monkeypatch):
    from fastdata.formats.manifest import Manifest

    make_folder(tmp_path / "src", {"a": 3, "b": 3})
    args = ["convert", tmp_path / "src", tmp_path / "o", "--format", "recordio", "--val-fraction", "0.3", "-q"]
    assert run_cli(capsys, *args)[0] == 0
    reads = []
    real = Manifest.read.__func__

    def counting(cls, directory, *a, **k):
        reads.append(str(directory))
        return real(cls, directory, *a, **k)

    monkeypatch.setattr(Manifest, "read", classmethod(counting))
    assert run_cli(capsys, *args, "--overwrite")[0] == 0
    assert len(reads) == len(set(reads)) == 2, reads  # train's and val's, once each
