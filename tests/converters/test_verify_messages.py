"""What ``fastdata verify`` and ``convert`` say about damage (issue 27): each fact
once per line, damage of any kind (the manifest's included) exit 1, the records a
truncated shard still holds, the command that rebuilds an index, and why an
output folder of the user's own files is refused."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import shutil
from pathlib import Path

import pytest
from convkit import make_folder, run_cli
from fastdata.converters import cli

from fastdata.errors import FormatError, ManifestError
from fastdata.formats import recordio, tfrecord
from fastdata.formats.manifest import Manifest

N = 20  # records in the one shard


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """One source folder converted once into each format, one shard each (copied by each test)."""
    root = tmp_path_factory.mktemp("verify_messages")
    make_folder(root / "src", {"a": N // 2, "b": N // 2})
    out = {}
    for fmt in ("recordio", "tfrecord"):
        out[fmt] = root / fmt
        code, _, err = _convert(root / "src", out[fmt], fmt)
        assert code == 0, err
    return out


def _convert(src, out, fmt):
    """``fastdata convert`` in this process, outside any test's capsys (a module fixture)."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["convert", str(src), str(out), "--format", fmt, "--shards", "1", "--workers", "1", "-q"])
    return code, "", stderr.getvalue()


def _copy(converted, fmt, tmp_path) -> tuple[Path, Path, Manifest]:
    ds = tmp_path / fmt
    shutil.copytree(converted[fmt], ds)
    m = Manifest.read(ds)
    return ds, ds / m.shards[0].file, m


def _offsets(rec: Path) -> list[int]:
    reader = recordio.Reader(rec)
    try:
        return [reader.offset(i) for i in range(len(reader))]
    finally:
        reader.close()


def _source(ds: Path, m: Manifest, record: int) -> str:
    return json.loads((ds / m.extra["sources"]).read_text().splitlines()[record])


def _problems(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("fastdata verify: PROBLEM ")]


# -- 1. one flipped byte: each fact once -------------------------------------------


def test_a_flipped_byte_names_file_record_offset_source_cause_and_fix_once(converted, tmp_path, capsys):
    ds, rec, m = _copy(converted, "recordio", tmp_path)
    k = 12
    offset = _offsets(rec)[k]
    data = bytearray(rec.read_bytes())
    data[offset + 8 + 24 + 40] ^= 0x10  # inside the JPEG, past the framing and the IRHeader
    rec.write_bytes(bytes(data))
    code, out, _ = run_cli(capsys, "verify", ds, "-q")
    assert code == 1, out
    lines = [line for line in _problems(out) if "CRC32C mismatch" in line]
    assert len(lines) == 1, out
    line = lines[0]
    expected = (
        f"fastdata verify: PROBLEM {rec}: record {k}, byte offset {offset}, source file {_source(ds, m, k)}: "
        "CRC32C mismatch: the stored bytes changed since they were written (damaged shard); "
        "restore the shard from a good copy or re-convert"
    )
    assert line == expected
    assert line.count(str(rec)) == 1 and line.count(f"record {k}") == 1 and "key" not in line
    assert "`fastdata verify`" not in line  # the advice to run verify, inside verify's own report


def test_a_flipped_byte_in_a_single_file_is_named_once_too(converted, tmp_path, capsys):
    ds, rec, _ = _copy(converted, "recordio", tmp_path)
    alone = tmp_path / "alone.rec"
    shutil.copyfile(rec, alone)
    shutil.copyfile(rec.with_suffix(".idx"), alone.with_suffix(".idx"))
    shutil.copyfile(Path(f"{rec}.crc"), Path(f"{alone}.crc"))
    k = 3
    offset = _offsets(alone)[k]
    data = bytearray(alone.read_bytes())
    data[offset + 8 + 24 + 40] ^= 0x01
    alone.write_bytes(bytes(data))
    code, out, _ = run_cli(capsys, "verify", alone, "-q")
    assert code == 1
    (line,) = _problems(out)
    assert line == (
        f"fastdata verify: PROBLEM {alone}: record {k}, byte offset {offset}: CRC32C mismatch: the stored bytes "
        "changed since they were written (damaged shard); restore the shard from a good copy or re-convert"
    )


def test_a_format_error_says_each_fact_once_and_survives_pickling():
    err = FormatError("record 7: CRC32C mismatch", path="/d/s.rec", offset=96, key=7, hint="restore it")
    assert str(err) == "/d/s.rec, record 7, byte offset 96: CRC32C mismatch (restore it)"
    assert err.parts(path="/d/s.rec", record=7) == (["byte offset 96"], "CRC32C mismatch", "restore it")
    other = FormatError("record 7: CRC32C mismatch", path="/d/s.rec", offset=96, key=1234)  # an im2rec id
    assert str(other) == "/d/s.rec, record 7, byte offset 96, key 1234: CRC32C mismatch"
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.record == 7


# -- 2. a damaged manifest is damage: exit 1 ---------------------------------------


@pytest.mark.parametrize(
    "damage",
    [lambda b: b[: len(b) // 2], lambda b: b.replace(b'"a"', b'"c"', 1), lambda b: b.replace(b'"format"', b'"formax"')],
    ids=["truncated", "class-renamed", "field-renamed"],
)
def test_a_damaged_manifest_is_a_problem_found_exit_1(converted, tmp_path, capsys, damage):
    ds, _, _ = _copy(converted, "recordio", tmp_path)
    manifest = ds / "manifest.json"
    manifest.write_bytes(damage(manifest.read_bytes()))
    code, out, err = run_cli(capsys, "verify", ds)
    assert code == 1 and err == "", (out, err)
    (line,) = _problems(out)
    assert line.startswith(f"fastdata verify: PROBLEM {manifest}: ") and line.count(str(manifest)) == 1
    assert "restore it" in line or "re-run the conversion" in line or "damaged" in line
    assert "1 problem(s) found" in out and "not read" in out


def test_a_damaged_split_manifest_is_exit_1_and_the_other_split_is_still_verified(tmp_path, capsys):
    make_folder(tmp_path / "src", {"a": 4, "b": 4})
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "out", "--format", "recordio",
                           "--val-fraction", "0.5", "--workers", "1", "-q")
    assert code == 0, err
    manifest = tmp_path / "out" / "train" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:-20])
    code, out, err = run_cli(capsys, "verify", tmp_path / "out", "-q")
    assert code == 1 and err == "", (out, err)
    assert [line.split(": ")[1] for line in _problems(out)] == [f"PROBLEM {manifest}"]
    assert "4 records in 1 shard(s) read" in out  # val's


def test_what_is_not_damage_stays_an_error_exit_2(converted, tmp_path, capsys):
    ds, _, _ = _copy(converted, "recordio", tmp_path)
    code, out, err = run_cli(capsys, "verify", tmp_path / "missing")
    assert code == 2 and out == "" and "no such file or directory" in err
    doc = json.loads((ds / "manifest.json").read_text())
    doc["manifest_version"] = 99  # a newer fastdata's: upgrade, not damage
    (ds / "manifest.json").write_text(json.dumps(doc))
    code, out, err = run_cli(capsys, "verify", ds)
    assert code == 2 and out == "" and "upgrade fastdata" in err and len(err.splitlines()) == 1


def test_manifest_errors_say_whether_they_are_damage():
    with pytest.raises(ManifestError) as info:
        Manifest.from_json(b"{", source="m.json")
    assert info.value.damaged and pickle.loads(pickle.dumps(info.value)).damaged
    with pytest.raises(ManifestError) as info:
        Manifest.from_json(json.dumps({"manifest_version": 99}), source="m.json")
    assert not info.value.damaged


# -- 3. a truncated shard: which records survive -----------------------------------


@pytest.mark.parametrize("cut", [1000, "mid"], ids=["1000-bytes", "half"])
def test_a_truncated_recordio_shard_says_which_records_survive(converted, tmp_path, capsys, cut):
    ds, rec, m = _copy(converted, "recordio", tmp_path)
    offsets = _offsets(rec)
    size = rec.stat().st_size
    keep = size - 1000 if cut == 1000 else offsets[N // 2] + 5
    first_lost = max(i for i, o in enumerate(offsets) if o < keep)  # the record the cut falls in
    rec.write_bytes(rec.read_bytes()[:keep])
    for argv in ((), ("--decode", "--workers", "2")):
        code, out, _ = run_cli(capsys, "verify", ds, "-q", *argv)
        assert code == 1, out
        (line,) = _problems(out)
        assert line == (
            f"fastdata verify: PROBLEM {rec}: size is {keep} bytes, the manifest says {size}: truncated; "
            f"records 0-{first_lost - 1} readable, {first_lost} onwards lost; "
            "restore the shard from a good copy or re-convert the dataset"
        )
        # what was read beside what the manifest lists: "35 records read" alone hides that the shard held 36
        assert f"({first_lost} of the {N} records listed in 1 shard(s) read" in out


def test_a_truncated_tfrecord_shard_says_which_records_survive(converted, tmp_path, capsys):
    ds, shard, _ = _copy(converted, "tfrecord", tmp_path)
    reader = tfrecord.Reader(shard)
    offsets = [int(o) for o in reader.offsets]
    reader.close()
    size = shard.stat().st_size
    keep = offsets[7] + 20
    shard.write_bytes(shard.read_bytes()[:keep])
    code, out, _ = run_cli(capsys, "verify", ds, "-q")
    assert code == 1
    (line,) = _problems(out)
    assert f"size is {keep} bytes, the manifest says {size}: truncated; records 0-6 readable, 7 onwards lost" in line


@pytest.mark.parametrize("with_index", [True, False], ids=["idx", "no-idx"])
def test_a_truncated_single_rec_says_which_records_survive(converted, tmp_path, capsys, with_index):
    _, rec, _ = _copy(converted, "recordio", tmp_path)
    alone = tmp_path / "alone.rec"
    offsets = _offsets(rec)
    alone.write_bytes(rec.read_bytes()[: offsets[9] + 30])
    if with_index:
        shutil.copyfile(rec.with_suffix(".idx"), alone.with_suffix(".idx"))
    code, out, _ = run_cli(capsys, "verify", alone, "-q")
    assert code == 1
    (line,) = _problems(out)
    assert line == (
        f"fastdata verify: PROBLEM {alone}: truncated at byte {offsets[9] + 30}: records 0-8 readable, 9 onwards "
        f"lost (the record at byte offset {offsets[9]} runs past the end of the file); restore the file from a "
        "good copy or re-create it"
    )
    assert "(9 records in 1 shard(s) read" in out


# -- 4. bad magic: the command that rebuilds the index -----------------------------


def test_bad_magic_names_the_fastdata_index_command(converted, tmp_path, capsys):
    ds, rec, _ = _copy(converted, "recordio", tmp_path)
    offset = _offsets(rec)[5]
    data = bytearray(rec.read_bytes())
    data[offset] ^= 0xFF  # the magic word of record 5
    rec.write_bytes(bytes(data))
    code, out, _ = run_cli(capsys, "verify", ds, "-q")
    assert code == 1
    (line,) = [line for line in _problems(out) if "bad magic word" in line]
    assert f"record 5, byte offset {offset}" in line
    assert f"`fastdata index --force {rec}`" in line and "build_index" not in line
    with pytest.raises(FormatError) as info:
        recordio.Reader(rec)[5]
    assert f"`fastdata index --force {rec}`" in str(info.value) and "fastdata.formats" not in str(info.value)


def test_a_malformed_idx_names_the_fastdata_index_command(tmp_path):
    rec = tmp_path / "x.rec"
    with recordio.Writer(rec) as w:
        w.write(b"payload")
    rec.with_suffix(".idx").write_text("0 0 0\n")
    with pytest.raises(FormatError) as info:
        recordio.Reader(rec)
    assert f"`fastdata index --force {rec}`" in str(info.value)


# -- 5. --overwrite on a folder of the user's own files ----------------------------


@pytest.mark.parametrize("overwrite", [True, False], ids=["overwrite", "plain"])
def test_an_output_folder_of_the_users_files_is_refused_saying_why_and_what_to_do(tmp_path, capsys, overwrite):
    make_folder(tmp_path / "src", {"a": 2})
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    (out / "checkpoints").mkdir()
    argv = ["convert", tmp_path / "src", out, "--format", "recordio", "-q", *(["--overwrite"] if overwrite else [])]
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 2 and stdout == "" and len(err.splitlines()) == 1, err
    assert "not written by fastdata" in err and "checkpoints/, notes.md" in err
    assert f"give a new or empty output directory (e.g. {out / 'shards'}) or move those files out" in err
    if overwrite:
        assert "nothing to overwrite: --overwrite replaces only a dataset fastdata wrote" in err
        assert "stay through --overwrite" in err
    assert sorted(p.name for p in out.iterdir()) == ["checkpoints", "notes.md"]
    assert (out / "notes.md").read_text() == "mine"
