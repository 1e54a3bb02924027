"""``fastdata inspect``, ``verify`` and ``index`` on fastdata's output and on files other tools wrote."""

from __future__ import annotations

import io
import json
import os
import shutil

import pytest
from convkit import jpeg, manifest_json, run_cli

from fastdata.formats import registry
from fastdata.formats.dataset_writer import finish_dataset
from fastdata.formats.sample import Sample


@pytest.fixture(scope="module")
def datasets(small_folder, tmp_path_factory):
    """The small generated folder (cat 4, dog 5, zebra_7 4; tests/testkit.py) converted once per format."""
    from fastdata.converters import cli

    root = tmp_path_factory.mktemp("ds")
    for fmt in registry.names():
        assert cli.main(["convert", str(small_folder), str(root / fmt), "--format", fmt, "--shards", "2", "-q"]) == 0
    assert cli.main(["convert", str(small_folder), str(root / "split"), "--format", "lmdb", "--val-fraction", "0.3", "-q"]) == 0
    return root


def test_inspect_dataset_text_and_json(datasets, capsys):
    code, out, _ = run_cli(capsys, "inspect", datasets / "recordio")
    assert code == 0
    assert "fastdata dataset, format recordio, 13 records in 2 shard(s), 3 classes" in out
    assert "0=cat, 1=dog, 2=zebra_7" in out and "image_format=JPEG" in out
    code, out, _ = run_cli(capsys, "inspect", datasets / "tfrecord", "--json", "--records", "3")
    doc = json.loads(out)
    assert doc["format"] == "tfrecord" and doc["records"] == 13 and doc["label_base"] == 1
    assert len(doc["samples"]) == 3
    for s in doc["samples"]:
        assert 0 <= s["label"] < 3 and s["class"] == doc["classes"][s["label"]] and s["image_format"] == "JPEG"
        assert s["width"] > 0 and s["height"] > 0
    code, out, _ = run_cli(capsys, "inspect", datasets / "split", "--json")
    doc = json.loads(out)
    assert doc["kind"] == "splits" and set(doc["splits"]) == {"train", "val"}


@pytest.mark.parametrize(
    "rel, expect",
    [
        ("recordio/adaface_shuffled_idx/train.rec", ['recordio file, 8 records', 'key=4', 'flag=0', 'width=112']),
        ("recordio/detection_label_vectors/train.idx", ['recordio file, 12 records', 'flag=9', 'label=[4.0, 5.0']),
        ("vectors/train-00000-of-00002.tfrecord", ['tfrecord file', 'type=Example', '"image/class/label": [1]']),
        ("vectors/train-gzip.tfrecord.gz", ['gzip-compressed, 13 records']),
        ("tfrecord/pytorch_data/sequence_example.tfrecord", ['type=SequenceExample', 'feature_lists=']),
        ("lmdb/caffe_raw_datum/test_lmdb", ['lmdb file, 8 records', 'key=00000000_c7.jpg', 'width=256']),
        ("lmdb/png_values/gt.lmdb", ['lmdb file, 2 records', 'key=baboon', 'image_format=PNG']),
    ],
)
def test_inspect_foreign_files(shared_data, capsys, rel, expect):
    code, out, err = run_cli(capsys, "inspect", shared_data / rel)
    assert code == 0, err
    for text in expect:
        assert text in out, (text, out)


def test_inspect_errors(tmp_path, capsys):
    code, _, err = run_cli(capsys, "inspect", tmp_path / "missing")
    assert code == 2 and "no such file or directory" in err
    (tmp_path / "x.bin").write_bytes(b"hello world, what is this")
    code, _, err = run_cli(capsys, "inspect", tmp_path / "x.bin")
    assert code == 2 and "not a RecordIO file" in err


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_a_path_that_is_no_dataset_is_an_error_for_inspect_and_verify(tmp_path, capsys, command):
    (tmp_path / "empty").mkdir()
    (tmp_path / "x.bin").write_bytes(b"hello world, what is this")
    (tmp_path / "unfinished").mkdir()
    (tmp_path / "unfinished" / ".fastdata-plan.json").write_text("{}")
    cases = [
        (tmp_path / "missing", "no such file or directory"),
        (tmp_path / "empty", "not a fastdata dataset"),
        (tmp_path / "x.bin", "not a RecordIO file"),
        (tmp_path / "unfinished", "an unfinished conversion"),
    ]
    for path, message in cases:
        code, out, err = run_cli(capsys, command, path)
        assert code == 2 and out == "", (path, out, err)
        assert err.startswith(f"fastdata: error: {path}: ") and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", ["verify", "inspect"])
@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b"{", "not valid JSON"),
        (lambda b: b.replace(b'"classes"', b'"cl\xe1sses"', 1), "not UTF-8"),
        (lambda b: b.replace(b'"cat"', b'"cbt"'), "does not match its checksum"),
        (lambda b: b.replace(b'"label_base": 0', b'"label_base": 1'), "does not match its checksum"),
        (lambda b: b.replace(b'"format": "recordio"', b'"format": "zip"'), "does not match its checksum"),
    ],
    ids=["json", "utf8", "class-name", "label-base", "format"],
)
def test_a_damaged_manifest_is_one_line_and_exit_2(datasets, tmp_path, capsys, command, damage, message):
    ds = tmp_path / "ds"
    shutil.copytree(datasets / "recordio", ds)
    manifest = ds / "manifest.json"
    manifest.write_bytes(damage(manifest.read_bytes()))
    code, out, err = run_cli(capsys, command, ds)
    if command == "verify":  # damage found (README: exit 1), reported as verify reports a damaged shard
        problems = [line for line in out.splitlines() if "PROBLEM" in line]
        assert code == 1 and err == "" and len(problems) == 1, (out, err)
        assert problems[0].startswith(f"fastdata verify: PROBLEM {manifest}: ") and message in problems[0]
        return
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (out, err)
    assert err.startswith(f"fastdata: error: {manifest}: ") and message in err


@pytest.mark.parametrize("fmt", registry.names())
def test_inspect_flags_a_truncated_shard(datasets, tmp_path, capsys, fmt):
    ds = tmp_path / fmt
    shutil.copytree(datasets / fmt, ds)
    m = manifest_json(ds)
    info = m["shards"][1]
    data_file = registry.get(fmt).data_file(ds / info["file"])
    os.truncate(data_file, info["bytes"] - 50)
    code, out, err = run_cli(capsys, "inspect", ds)
    assert code == 1, out + err
    assert f"{info['file']}: {info['records']} records, {info['bytes'] - 50} bytes" in out
    assert f"manifest says {info['bytes']}" in out
    assert str(data_file) in err and f"fastdata verify {ds}" in err
    code, out, err = run_cli(capsys, "inspect", ds, "--json")
    shard = json.loads(out)["shards"][1]
    assert code == 1 and shard["bytes"] == info["bytes"] and shard["file_bytes"] == info["bytes"] - 50


@pytest.mark.parametrize("fmt", registry.names())
def test_verify_clean_datasets(datasets, capsys, fmt):
    code, out, _ = run_cli(capsys, "verify", datasets / fmt, "--decode")
    assert code == 0 and "OK, 13 records in 2 shard(s) read and decoded" in out
    assert "per class: cat 4, dog 5, zebra_7 4" in out


@pytest.mark.parametrize(
    "rel", ["recordio/adaface_shuffled_idx/train.rec", "vectors/multipart.rec", "vectors/train-gzip.tfrecord.gz",
            "tfrecord/pytorch_data/example.tfrecord", "lmdb/caffe_raw_datum/test_lmdb", "vectors/im2rec_passthrough.rec"],
)
def test_verify_foreign_files(shared_data, capsys, rel):
    code, out, err = run_cli(capsys, "verify", shared_data / rel, "--decode")
    assert code == 0, out + err
    assert "OK" in out


def test_verify_finds_damage(datasets, tmp_path, capsys):
    ds = tmp_path / "tf"
    shutil.copytree(datasets / "tfrecord", ds)
    m = manifest_json(ds)
    shard = ds / m["shards"][1]["file"]
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF  # inside the first record's data: its CRC no longer matches
    shard.write_bytes(bytes(data))
    code, out, _ = run_cli(capsys, "verify", ds)
    assert code == 1
    assert f"PROBLEM {shard}: crc32c differs" in out
    assert "record 0" in out and "byte offset" in out and "CRC" in out
    (ds / m["shards"][0]["file"]).unlink()
    code, out, _ = run_cli(capsys, "verify", ds)
    assert code == 1 and "shard listed in the manifest is missing" in out


def test_verify_decode_catches_a_broken_image(corrupt_images, tmp_path, capsys):
    out = tmp_path / "ds"
    out.mkdir()
    spec = registry.get("recordio")
    broken = (corrupt_images / "truncated_jpeg.jpg").read_bytes()
    samples = [Sample(jpeg(0), 0, 0), Sample(broken, 1, 1), Sample(jpeg(2), 0, 2)]
    info = spec.write_shard(out / "shard-00000.rec", samples)
    finish_dataset(out, "recordio", [info], ["a", "b"])
    assert run_cli(capsys, "verify", out)[0] == 0  # framing is fine...
    code, text, _ = run_cli(capsys, "verify", out, "--decode")
    assert code == 1 and "record 1: image does not decode" in text  # ...the image is not


def _dataset_with_broken_images(corrupt_images, out):
    out.mkdir()
    spec = registry.get("recordio")
    broken = (corrupt_images / "truncated_jpeg.jpg").read_bytes()
    infos = []
    for k in range(3):
        samples = [Sample(broken if i % 7 == 3 else jpeg(i), i % 2, i) for i in range(k * 40, k * 40 + 40)]
        infos.append(spec.write_shard(out / f"shard-{k:05d}.rec", samples))
    finish_dataset(out, "recordio", infos, ["a", "b"])
    return out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_verify_decode_uses_the_worker_pool_and_reports_the_same(corrupt_images, tmp_path, capsys, monkeypatch):
    import concurrent.futures  # the pool is imported from here when it starts

    ds = _dataset_with_broken_images(corrupt_images, tmp_path / "ds")
    code, serial, _ = run_cli(capsys, "verify", ds, "--decode", "--workers", "1")
    assert code == 1 and serial.count("image does not decode") == 17
    pools = []

    class Spy(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, workers, **kwargs):
            pools.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Spy)
    code, pooled, _ = run_cli(capsys, "verify", ds, "--decode", "--workers", "2")
    assert code == 1 and pooled == serial
    assert pools == [2]


def test_verify_shows_progress_on_a_terminal(corrupt_images, tmp_path):
    from fastdata.converters.tools.verify import command as verification

    ds = _dataset_with_broken_images(corrupt_images, tmp_path / "ds")
    terminal, out = _Terminal(), io.StringIO()
    assert verification.run(str(ds), decode=True, workers=1, stdout=out, stderr=terminal) == 1
    assert "120/120" in terminal.getvalue()  # tqdm's bar, on stderr
    piped = io.StringIO()
    assert verification.run(str(ds), decode=True, workers=1, stdout=io.StringIO(), stderr=piped) == 1
    assert piped.getvalue() == ""  # no bar into a log file
    quiet = _Terminal()
    assert verification.run(str(ds), decode=True, quiet=True, workers=1, stdout=io.StringIO(), stderr=quiet) == 1
    assert quiet.getvalue() == ""


def test_verify_bad_label(tmp_path, capsys):
    out = tmp_path / "ds"
    out.mkdir()
    info = registry.get("lmdb").write_shard(out / "shard-00000.lmdb", [Sample(jpeg(0), 5, 0)])
    finish_dataset(out, "lmdb", [info], ["a", "b"])
    code, text, _ = run_cli(capsys, "verify", out)
    assert code == 1 and "label 5 is not a class index (0..1)" in text


def test_index_matches_reference_tools(shared_data, tmp_path, capsys):
    from tfrecord.tools.tfrecord2idx import create_index

    for name in ("train-00000-of-00002.tfrecord", "im2rec_passthrough.rec", "sequential.rec", "train-gzip.tfrecord.gz"):
        shutil.copy(shared_data / "vectors" / name, tmp_path / name)
    shutil.copy(shared_data / "recordio" / "adaface_shuffled_idx" / "train.rec", tmp_path / "adaface.rec")
    files = ["train-00000-of-00002.tfrecord", "im2rec_passthrough.rec", "sequential.rec", "adaface.rec", "train-gzip.tfrecord.gz"]
    code, _, err = run_cli(capsys, "index", *[tmp_path / f for f in files])
    assert code == 2 and "gzip-compressed" in err  # the one compressed file; the others are done
    create_index(str(tmp_path / "train-00000-of-00002.tfrecord"), str(tmp_path / "ref.idx"))
    assert (tmp_path / "train-00000-of-00002.tfrecord.idx").read_bytes() == (tmp_path / "ref.idx").read_bytes()

    def lines(p):
        return sorted(p.read_text().split("\n")[:-1])

    assert lines(tmp_path / "adaface.idx") == lines(shared_data / "recordio" / "adaface_shuffled_idx" / "train.idx")
    assert lines(tmp_path / "im2rec_passthrough.idx") == lines(shared_data / "vectors" / "im2rec_passthrough.idx")
    assert [ln.split("\t")[0] for ln in lines(tmp_path / "sequential.idx")] == [str(i) for i in range(7)]
    code, _, err = run_cli(capsys, "index", tmp_path / "adaface.rec")
    assert code == 2 and "already exists; pass --force" in err
    assert run_cli(capsys, "index", tmp_path / "adaface.rec", "--force")[0] == 0
