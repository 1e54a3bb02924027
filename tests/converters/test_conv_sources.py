"""A damaged record is named with the source file it was converted from, not only shard and record."""

from __future__ import annotations

import io
import json
import os

import pytest
from convkit import jpeg, make_folder, manifest_json, run_cli
from fastdata.converters.conversion.convert import SOURCES_FILE, _write_sources
from fastdata.converters.output.record import ShardRecord
from fastdata.converters.planning.layout import PlanOptions, make_plan
from fastdata.converters.planning.scan import ScanResult, SourceItem
from PIL import Image

from fastdata.datasets import open_dataset
from fastdata.errors import FormatError
from fastdata.formats import tfrecord


def _damaged_jpeg() -> bytes:
    """Framing intact (so the converter stores it as is), but it does not decode:
    the second scan of a progressive JPEG names a component the frame lacks."""
    out = io.BytesIO()
    Image.open(io.BytesIO(jpeg(7, size=(64, 64)))).save(out, "JPEG", progressive=True)
    data = bytearray(out.getvalue())
    second = data.index(b"\xff\xda", data.index(b"\xff\xda") + 2)
    data[second + 5] = 0x77
    return bytes(data)


@pytest.mark.parametrize("fmt", ["recordio", "lmdb"])
def test_verify_decode_names_the_source_file(tmp_path, capsys, fmt):
    src, out = tmp_path / "src", tmp_path / "out"
    make_folder(src, {"a": 3, "b": 2})
    (src / "b" / "zz.jpg").write_bytes(_damaged_jpeg())
    code, _, err = run_cli(capsys, "convert", src, out, "--format", fmt, "--shards", "2", "--workers", "1", "-q")
    assert code == 0, err
    code, text, _ = run_cli(capsys, "verify", out, "--decode", "--workers", "1")
    problems = [line for line in text.splitlines() if "PROBLEM" in line]
    assert code == 1 and len(problems) == 1
    assert "image does not decode" in problems[0] and f"source file {src / 'b' / 'zz.jpg'}" in problems[0]


def test_a_damaged_record_read_by_a_dataset_names_the_source_file(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    make_folder(src, {"a": 3, "b": 3})
    assert run_cli(capsys, "convert", src, out, "--format", "tfrecord", "--val-fraction", "0.34", "-q")[0] == 0
    shard = out / "train" / manifest_json(out / "train")["shards"][0]["file"]
    first = tfrecord.parse_example(next(iter(tfrecord.Reader(shard))))["image/filename"][0].decode()
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF  # inside the first record: its CRC no longer matches (the size does)
    shard.write_bytes(bytes(data))
    with pytest.raises(FormatError) as info:
        open_dataset(out / "train")[0]
    assert f"source file {src / first}" in str(info.value) and str(shard) in str(info.value)


def test_the_source_list_is_part_of_the_dataset(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    make_folder(src, {"a": 2, "b": 2})
    assert run_cli(capsys, "convert", src, out, "--format", "recordio", "--no-shuffle", "-q")[0] == 0
    m = manifest_json(out)
    lines = (out / m["extra"]["sources"]).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [str(src / c / f"img_{k:03d}.jpg") for c in "ab" for k in range(2)]


def test_sources_hold_non_ascii_and_undecodable_names(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    make_folder(src, {"a": 1})
    (src / "a" / "épreuve ü.jpg").write_bytes(jpeg(3))
    os_name = b"bad-\xff-name.jpg"  # not UTF-8: Python sees a surrogate escape
    (src / "a").joinpath(os_name.decode("utf-8", "surrogateescape")).write_bytes(jpeg(4))
    assert run_cli(capsys, "convert", src, out, "--format", "recordio", "--no-shuffle", "-q")[0] == 0
    lines = [json.loads(line) for line in (out / "sources.jsonl").read_text(encoding="utf-8").splitlines()]
    names = sorted(p.rsplit("/", 1)[1] for p in lines)
    assert names == sorted([p.name for p in (src / "a").iterdir() if p.name.isascii() and "bad" not in p.name]
                           + ["bad-\ufffd-name.jpg", "épreuve ü.jpg"])
    assert all(p.startswith(str(src)) for p in lines)


def _sources_one_line_at_a_time(root: str, plan, split: str, records: dict) -> str:
    """sources.jsonl as the converter wrote it before it built the lines in one pass, verbatim."""
    dumps = json.JSONEncoder().encode
    lines = []
    for shard in plan.shards:
        if shard.split != split:
            continue
        skipped = {path for path, _ in records[shard.key].skipped}
        for item in shard.items:
            if item.path not in skipped:
                path = os.path.join(root, item.rel.replace("/", os.sep))
                if not path.isascii():
                    path = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                lines.append(dumps(path) + "\n")
    return "".join(lines)


@pytest.mark.parametrize("root", ["/data/src", "/data/src/", "/"])
def test_sources_file_matches_the_line_by_line_rule(tmp_path, root):
    rels = ["a/x.jpg", 'a/quote" back\\slash.jpg', "a/épreuve ü.jpg", "a/bad-\udcff.jpg", "b/tab\there.jpg",
            "b/ctrl\x01.jpg", "b/emoji \U0001f600.jpg", "b/gone.jpg", "b/ok.jpg"]
    items = [SourceItem(os.path.join(root, r), r, k % 2, 10 + k) for k, r in enumerate(rels)]
    scan = ScanResult(root=root, classes=["a", "b"], items=items)
    plan = make_plan(scan, PlanOptions(format="recordio", shards=3, val_fraction=0.3), {"root": root})
    records = {s.key: ShardRecord() for s in plan.shards}
    gone = next(s for s in plan.shards if any(it.rel == "b/gone.jpg" for it in s.items))
    records[gone.key].skipped = [(os.path.join(root, "b/gone.jpg"), "not a JPEG")]
    for split in plan.splits:
        directory = tmp_path / (split or "all") / root.strip("/").replace("/", "_")
        directory.mkdir(parents=True)
        _write_sources(directory, plan, split, records)
        assert (directory / SOURCES_FILE).read_text() == _sources_one_line_at_a_time(root, plan, split, records)
    # an absolute name from an im2rec list: os.path.join keeps it as it is
    lst = make_plan(ScanResult(root=root, classes=["0"], items=[SourceItem("/abs/y.jpg", "/abs/y.jpg", 0, 3),
                                                               SourceItem(root + "/z.jpg", "z.jpg", 0, 3)]),
                    PlanOptions(format="recordio", shuffle=False), {"root": root})
    recs = {s.key: ShardRecord() for s in lst.shards}
    _write_sources(tmp_path, lst, "", recs)
    assert (tmp_path / SOURCES_FILE).read_text() == _sources_one_line_at_a_time(root, lst, "", recs)
    everything_skipped = {s.key: ShardRecord(skipped=[(it.path, "x") for it in s.items]) for s in lst.shards}
    _write_sources(tmp_path, lst, "", everything_skipped)
    assert (tmp_path / SOURCES_FILE).read_text() == "" == _sources_one_line_at_a_time(root, lst, "", everything_skipped)


@pytest.mark.parametrize("workers", [["1"], ["2"], ["3", "--test-min-piece", "1"]], ids=["1", "2", "3-pieces"])
def test_each_shards_sources_are_made_as_it_is_recorded(tmp_path, capsys, monkeypatch, workers):
    """The finish only joins the shards' lines, made by the workers that wrote them (a shard
    written in pieces: its pieces' lines in order), and they are the lines the finish would
    have made itself."""
    from fastdata.converters.conversion import convert

    made = {}
    real = convert._write_sources

    def spy(directory, plan, split, records, ready=None):
        made.update(ready or {})
        name = real(directory, plan, split, records, ready)
        alone = tmp_path / "alone"
        alone.mkdir(exist_ok=True)
        real(alone, plan, split, records)
        assert (alone / name).read_bytes() == (directory / name).read_bytes()
        return name

    monkeypatch.setattr(convert, "_write_sources", spy)
    src = tmp_path / "src"
    make_folder(src, {"a": 5, "b": 4})
    (src / "b" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")  # skipped: no line
    code = run_cli(capsys, "convert", src, tmp_path / "out", "--format", "recordio", "--shards", "3", "--allow-skips",
                   "--workers", *workers, "-q")[0]
    assert code == 0 and len(made) == 3
    lines = (tmp_path / "out" / SOURCES_FILE).read_text().splitlines()
    assert len(lines) == 9 and not any("broken" in line for line in lines)
