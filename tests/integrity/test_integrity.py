"""Issue 19: every damaged byte is found on read, every error is a fastdata error naming its file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fuzz_shards import convert, make_source

import fastdata
from fastdata.converters.cli import main as cli
from fastdata.errors import FormatError, ManifestError
from fastdata.formats import Manifest, checksums, registry
from fastdata.formats._atomic import written


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """One small converted dataset per format (3 shards, sources.jsonl, dali.idx)."""
    root = tmp_path_factory.mktemp("integrity")
    source = make_source(root / "src")
    return {fmt: convert(source, root / fmt, fmt) for fmt in registry.names()}


def _copy(converted, fmt, tmp_path) -> Path:
    out = tmp_path / fmt
    shutil.copytree(converted[fmt], out)
    return out


def _flip_payload(ds_dir: Path, fmt: str, shard: int = 0) -> Path:
    """Flip a byte in the middle of the first record's image bytes; returns the file."""
    m = Manifest.read(ds_dir)
    data_file = registry.get(fmt).data_file(ds_dir / m.shards[shard].file)
    image = fastdata.open_dataset(str(ds_dir), decode=False)[int(sum(s.records for s in m.shards[:shard]))][0]
    data = bytearray(data_file.read_bytes())
    tail = image[-50:-10]  # entropy-coded bytes: unique to this image (its headers are not)
    at = data.find(tail) + 10
    assert at > 10 and data.count(tail) == 1
    data[at] ^= 0x40
    data_file.write_bytes(bytes(data))
    return data_file


def _run(capsys, *argv):
    code = cli([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["recordio", "lmdb"])
def test_a_flipped_payload_byte_is_a_format_error_naming_file_record_and_source(converted, tmp_path, fmt):
    ds_dir = _copy(converted, fmt, tmp_path)
    data_file = _flip_payload(ds_dir, fmt)
    ds = fastdata.open_dataset(str(ds_dir), decode=False)
    with pytest.raises(FormatError) as info:
        ds[0]
    message = str(info.value)
    assert str(data_file) in message and "record 0" in message and "CRC32C mismatch" in message
    assert "source file" in message and ".jpg" in message
    skipping = fastdata.open_dataset(str(ds_dir), decode=False, on_error="skip")
    assert skipping[0] == ds[1] and skipping.skipped == 1


def test_skipped_counts_each_corrupt_sample_once(converted, tmp_path):
    ds_dir = _copy(converted, "recordio", tmp_path)
    for shard in range(3):  # the first record of each shard: samples 0, 4, 8
        _flip_payload(ds_dir, "recordio", shard)
    rec = ds_dir / Manifest.read(ds_dir).shards[0].file
    data = bytearray(rec.read_bytes())  # and sample 1, so that sample 0's replacement is corrupt too
    image = fastdata.open_dataset(str(ds_dir), decode=False, on_error="skip").shards.reader(0).reader[1]
    at = data.find(image[-50:-10]) + 5
    data[at] ^= 1
    rec.write_bytes(bytes(data))
    ds = fastdata.open_dataset(str(ds_dir), decode=False, on_error="skip")
    [ds[i] for i in range(len(ds))]
    assert ds.skipped == 4  # samples 0, 1, 4, 8: once each, though sample 1 was tried in place of 0


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b.replace(b'"classes"', b'"cl\xe1sses"', 1), "not UTF-8"),
        (lambda b: b.replace(b'"ants", "bees"'.replace(b", ", b",\n  "), b'"bees",\n  "ants"'), "checksum"),
        (lambda b: b.replace(b'"label_base": 0', b'"label_base": 1'), "checksum"),
        (lambda b: b[: len(b) // 2], "not valid JSON"),
        (lambda b: b.replace(b'"checksum"', b'"chdcksum"'), "unknown field"),
    ],
    ids=["utf8", "classes-reordered", "label-base", "truncated", "checksum-key"],
)
def test_a_damaged_manifest_is_a_manifest_error_naming_it(converted, tmp_path, damage, message):
    ds_dir = _copy(converted, "recordio", tmp_path)
    manifest = ds_dir / "manifest.json"
    before = manifest.read_bytes()
    manifest.write_bytes(damage(before))
    assert manifest.read_bytes() != before
    with pytest.raises(ManifestError, match=message) as info:
        fastdata.open_dataset(str(ds_dir))
    assert str(manifest) in str(info.value)


def _old_manifest(ds_dir: Path, edit) -> None:
    """Rewrite ``manifest.json`` as a version-1 manifest (no checksum of its own) with ``edit`` applied."""
    path = ds_dir / "manifest.json"
    doc = json.loads(path.read_text())
    doc["manifest_version"] = 1
    del doc["checksum"], doc["digests"]
    edit(doc)
    path.write_text(json.dumps(doc))


def test_an_unknown_format_names_the_manifest(converted, tmp_path):
    ds_dir = _copy(converted, "recordio", tmp_path)
    _old_manifest(ds_dir, lambda d: d.update(format="zip"))
    with pytest.raises(ManifestError, match=r"manifest\.json: unknown format 'zip'"):
        fastdata.open_dataset(str(ds_dir))


@pytest.mark.parametrize("fmt", registry.names())
def test_labels_outside_the_manifest_classes_are_a_format_error(converted, tmp_path, fmt):
    ds_dir = _copy(converted, fmt, tmp_path)
    _old_manifest(ds_dir, lambda d: d.update(classes=d["classes"][:1], class_to_idx={d["classes"][0]: 0}))
    ds = fastdata.open_dataset(str(ds_dir), decode=False)
    labels = []
    with pytest.raises(FormatError, match=r"label 1 is not a class index \(the manifest lists 1 classes\)"):
        for i in range(len(ds)):
            labels.append(ds[i][1])
    assert set(labels) <= {0}


def _foreign_rec(shared_data: Path, tmp_path: Path) -> Path:
    out = tmp_path / "foreign"
    shutil.copytree(shared_data / "recordio" / "adaface_shuffled_idx", out)
    for p in out.iterdir():
        p.chmod(0o644)
    return out / "train.rec"


def test_an_empty_idx_beside_a_foreign_rec_is_an_error(shared_data, tmp_path):
    rec = _foreign_rec(shared_data, tmp_path)
    rec.with_suffix(".idx").write_bytes(b"")
    with pytest.raises(FormatError, match=r"train\.idx.*lists no records but the \.rec holds"):
        len(fastdata.open_dataset(str(rec)))


def test_a_duplicate_key_in_an_idx_is_an_error(shared_data, tmp_path):
    rec = _foreign_rec(shared_data, tmp_path)
    idx = rec.with_suffix(".idx")
    lines = idx.read_text().splitlines()
    first_key = lines[0].split("\t")[0]
    lines[1] = first_key + "\t" + lines[1].split("\t")[1]
    idx.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match=rf"lists key {first_key} twice"):
        fastdata.open_dataset(str(rec))


def test_a_changed_idx_of_a_converted_shard_is_found_on_open(converted, tmp_path):
    ds_dir = _copy(converted, "recordio", tmp_path)
    idx = ds_dir / Manifest.read(ds_dir).shards[1].index
    text = idx.read_text()
    idx.write_text(text.replace("4\t", "9\t", 1))  # a digit flip in a key: reading by position alone would not notice
    ds = fastdata.open_dataset(str(ds_dir), decode=False)
    with pytest.raises(FormatError, match=rf"{idx}.*does not match the digest the manifest records"):
        ds[4]


@pytest.mark.parametrize("victim", ["dali.idx", "sources.jsonl", "index", "checksums"])
def test_verify_flags_a_changed_byte_in_every_file_the_manifest_lists(converted, tmp_path, capsys, victim):
    ds_dir = _copy(converted, "recordio", tmp_path)
    info = Manifest.read(ds_dir).shards[0]
    path = ds_dir / {"index": info.index, "checksums": info.checksums}.get(victim, victim)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    code, out, _ = _run(capsys, "verify", ds_dir, "--decode")
    assert code == 1 and f"PROBLEM {path}:" in out, out


def test_verify_on_a_truncated_shard_names_it_and_never_says_rebuild_the_index(converted, tmp_path, capsys):
    ds_dir = _copy(converted, "recordio", tmp_path)
    rec = ds_dir / Manifest.read(ds_dir).shards[1].file
    rec.write_bytes(rec.read_bytes()[:-300])
    code, out, _ = _run(capsys, "verify", ds_dir)
    assert code == 1 and f"PROBLEM {rec}: size is" in out
    assert "rebuild" not in out and "build_index" not in out, out
    assert "restore" in out and "re-convert" in out


@pytest.mark.parametrize("kind", ["recordio", "lmdb"])
def test_index_checksums_makes_payload_flips_in_foreign_shards_visible(shared_data, tmp_path, capsys, kind):
    if kind == "recordio":
        shard = _foreign_rec(shared_data, tmp_path)
        data_file = shard
    else:
        shard = tmp_path / "test_lmdb"
        shutil.copytree(shared_data / "lmdb" / "caffe_raw_datum" / "test_lmdb", shard)
        for p in shard.iterdir():
            p.chmod(0o644)
        data_file = shard / "data.mdb"
    ds = fastdata.open_dataset(str(shard), decode=False)
    before = [ds[i] for i in range(3)]
    if kind == "recordio":
        stored = ds.shards.reader(0).reader[1]
    else:
        reader = ds.shards.reader(0).reader
        stored = reader.read(reader.key(1), bytes)
    data = bytearray(data_file.read_bytes())
    at = data.find(stored[len(stored) // 2 : len(stored) // 2 + 32])
    assert at > 0
    data[at] ^= 0x08
    data_file.write_bytes(bytes(data))
    assert fastdata.open_dataset(str(shard), decode=False)[1] != before[1]  # silently changed without checksums
    data_file.write_bytes(bytes(data[:at]) + bytes([data[at] ^ 0x08]) + bytes(data[at + 1 :]))  # undo
    code, out, err = _run(capsys, "index", "--checksums", shard)
    assert code == 0 and str(checksums.sidecar_path(shard)) in out, err
    data_file.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=r"record 1\b.*CRC32C mismatch"):
        fastdata.open_dataset(str(shard), decode=False)[1]
    code, out, _ = _run(capsys, "verify", shard)
    assert code == 1 and "record 1" in out and "CRC32C mismatch" in out
    code, _, err = _run(capsys, "index", "--checksums", shard)
    assert code == 2 and "--force" in err


def test_checksums_of_a_foreign_file_that_changed_since_are_refused_naming_them(shared_data, tmp_path, capsys):
    rec = _foreign_rec(shared_data, tmp_path)
    assert _run(capsys, "index", "--checksums", rec)[0] == 0
    rec.write_bytes(rec.read_bytes() + b"\0" * 8)
    with pytest.raises(FormatError, match=r"train\.rec\.crc.*the shard changed after its checksums were computed"):
        fastdata.open_dataset(str(rec), decode=False)[0]


def test_index_checksums_on_a_tfrecord_writes_nothing_and_says_why(converted, capsys):
    shard = converted["tfrecord"] / Manifest.read(converted["tfrecord"]).shards[0].file
    code, out, _ = _run(capsys, "index", "--checksums", shard)
    assert code == 0 and "carry their own CRC32C" in out
    assert not checksums.sidecar_path(shard).exists()


def test_written_commits_in_order_and_leaves_nothing_on_failure(tmp_path):
    a, b = tmp_path / "a.idx", tmp_path / "a.rec"
    with written(a, b) as (pa, pb):
        pa.write_text("index")
        pb.write_text("data")
        assert not a.exists() and not b.exists()
    assert a.read_text() == "index" and b.read_text() == "data"
    with pytest.raises(RuntimeError), written(tmp_path / "c.idx", tmp_path / "c.rec") as (pc, pd):
        pc.write_text("x")
        pd.write_text("y")
        raise RuntimeError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.idx", "a.rec"]



@pytest.mark.parametrize("fmt", ["recordio", "tfrecord"])
def test_dali_refuses_an_index_that_does_not_match_the_manifest(converted, tmp_path, fmt):
    ds_dir = _copy(converted, fmt, tmp_path)
    m = Manifest.read(ds_dir)
    index = ds_dir / (m.extra["dali_index"] if fmt == "recordio" else m.shards[0].index)
    index.write_text(index.read_text().replace("0", "1", 1))
    spec = registry.get(fmt)
    with pytest.raises(FormatError, match=rf"{index}.*does not match the digest"):
        spec.dali.index_paths(ds_dir, m)
