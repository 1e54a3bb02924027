"""A shard's done record: saved as it always was, read back the same, and a damaged one means the shard is redone."""

from __future__ import annotations

import json
from collections import Counter

from convkit import make_folder
from fastdata.converters.output import state
from fastdata.converters.output.record import ShardRecord
from fastdata.converters.planning.layout import PlanOptions, make_plan
from fastdata.converters.planning.scan import scan_folder

from fastdata.formats.sample import ShardInfo

INFO = ShardInfo(file="shard-00000.rec", records=2, bytes=300, index="shard-00000.idx",
                 digests={"shard-00000.rec": "crc32c:00000001", "shard-00000.idx": "crc32c:00000002"})
#: A record as state files have held it since restart markers were added (the keys as saved, sorted).
SAVED = {
    "bytes_in": 250, "bytes_out": 300,
    "info": {"bytes": 300, "checksums": None, "digests": {"shard-00000.idx": "crc32c:00000002",
                                                          "shard-00000.rec": "crc32c:00000001"},
             "file": "shard-00000.rec", "index": "shard-00000.idx", "records": 2, "sha256": None},
    "normalised": {"cmyk-jpeg": 1, "png-to-jpeg": 2}, "normalised_images": 2,
    "per_label": {"2": 1, "10": 1}, "restart_marked": 1,
    "skipped": [["/src/a/bad.jpg", "empty file (0 bytes)"]], "written": 2,
}


def _record() -> ShardRecord:
    return ShardRecord(info=INFO, written=2, bytes_in=250, bytes_out=300, normalised_images=2, restart_marked=1,
                       per_label=Counter({10: 1, 2: 1}), normalised=Counter({"png-to-jpeg": 2, "cmyk-jpeg": 1}),
                       skipped=[("/src/a/bad.jpg", "empty file (0 bytes)")])


def test_a_record_is_saved_as_before_and_read_back_the_same():
    assert json.dumps(_record().to_json(), sort_keys=True) == json.dumps(SAVED, sort_keys=True)
    assert ShardRecord.from_json(json.loads(json.dumps(SAVED))) == _record()
    everything_skipped = ShardRecord(skipped=[("/src/a/x.jpg", "not a JPEG")])
    assert ShardRecord.from_json(json.loads(json.dumps(everything_skipped.to_json()))) == everything_skipped


def test_a_record_from_before_restart_markers_reads_as_none_marked():
    old = {k: v for k, v in SAVED.items() if k != "restart_marked"}
    assert ShardRecord.from_json(old).restart_marked == 0


def test_pieces_join_into_one_record():
    first = ShardRecord(written=1, bytes_in=100, per_label=Counter({0: 1}), normalised=Counter({"png-to-jpeg": 1}),
                        normalised_images=1, skipped=[("/s/a", "x")])
    second = ShardRecord(written=2, bytes_in=50, per_label=Counter({0: 1, 1: 1}), restart_marked=2,
                         skipped=[("/s/b", "y")])
    joined = ShardRecord.joined([first, second], INFO)
    assert joined == ShardRecord(info=INFO, written=3, bytes_in=150, per_label=Counter({0: 2, 1: 1}),
                                 normalised=Counter({"png-to-jpeg": 1}), normalised_images=1, restart_marked=2,
                                 skipped=[("/s/a", "x"), ("/s/b", "y")])


def test_a_damaged_record_means_the_shard_is_redone(tmp_path):
    make_folder(tmp_path / "src", {"a": 2})
    plan = make_plan(scan_folder(tmp_path / "src"), PlanOptions(format="recordio"), {"root": str(tmp_path / "src")})
    shard, out = plan.shards[0], tmp_path / "out"
    out.mkdir()
    state.write_record(out, shard, ShardRecord(skipped=[("/s/a", "x"), ("/s/b", "y")]))
    assert state.read_record(out, plan, shard) == ShardRecord(skipped=[("/s/a", "x"), ("/s/b", "y")])
    for damaged in ('{"info": null}', "[1, 2]", '{"info": {"file": 3}, "written": 1}', '{"info": nul'):
        state.record_path(out, shard).write_text(damaged)
        assert state.read_record(out, plan, shard) is None, damaged
