"""The plan fixes order, split and shard boundaries from the scan alone, deterministically."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fastdata.converters.planning.layout import PLAN_VERSION, Plan, PlanOptions, make_plan
from fastdata.converters.planning.scan import ScanResult, SourceItem

from fastdata.errors import ConfigError, ManifestError


def _scan(counts=(30, 20, 10), size=100) -> ScanResult:
    items = []
    for label, n in enumerate(counts):
        items += [SourceItem(f"/src/c{label}/{k}.jpg", f"c{label}/{k}.jpg", label, size + k) for k in range(n)]
    return ScanResult(root="/src", classes=[f"c{i}" for i in range(len(counts))], items=items)


def _paths(plan: Plan, split: str | None = None) -> list[str]:
    return [it.path for s in plan.shards if split is None or s.split == split for it in s.items]


def test_shuffle_is_a_seeded_permutation():
    scan = _scan()
    a = make_plan(scan, PlanOptions(format="recordio", seed=1), {})
    b = make_plan(scan, PlanOptions(format="recordio", seed=1), {})
    c = make_plan(scan, PlanOptions(format="recordio", seed=2), {})
    plain = make_plan(scan, PlanOptions(format="recordio", shuffle=False), {})
    assert _paths(a) == _paths(b) != _paths(c)
    assert sorted(_paths(a)) == sorted(it.path for it in scan.items)
    assert _paths(plain) == [it.path for it in scan.items]
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_val_split_is_disjoint_stratified_and_stable():
    scan = _scan()
    plan = make_plan(scan, PlanOptions(format="tfrecord", val_fraction=0.2, seed=3), {})
    train, val = _paths(plan, "train"), _paths(plan, "val")
    assert plan.splits == ["train", "val"]
    assert not set(train) & set(val) and len(train) + len(val) == 60
    per_class = [sum(p.startswith(f"/src/c{c}/") for p in val) for c in range(3)]
    assert per_class == [6, 4, 2]
    again = make_plan(scan, PlanOptions(format="tfrecord", val_fraction=0.2, seed=3, shuffle=False), {})
    assert sorted(_paths(again, "val")) == sorted(val)  # the split does not depend on --shuffle
    single = make_plan(_scan((1, 5)), PlanOptions(format="tfrecord", val_fraction=0.5), {})
    assert not any(p.startswith("/src/c0/") for p in _paths(single, "val"))  # a class keeps its last image
    with pytest.raises(ConfigError, match="selects no validation"):
        make_plan(_scan((3,)), PlanOptions(format="tfrecord", val_fraction=0.01), {})


def test_shard_boundaries_from_sizes_or_counts():
    scan = _scan((10,), size=100)  # sizes 100..109
    by_bytes = make_plan(scan, PlanOptions(format="recordio", shuffle=False, shard_bytes=250), {})
    assert [len(s.items) for s in by_bytes.shards] == [3, 3, 3, 1]
    assert [s.file for s in by_bytes.shards] == [f"shard-0000{i}.rec" for i in range(4)]
    assert [s.ids for s in by_bytes.shards][1] == [3, 4, 5]
    by_count = make_plan(scan, PlanOptions(format="lmdb", shuffle=False, shards=4), {})
    assert [len(s.items) for s in by_count.shards] == [2, 3, 2, 3]
    assert by_count.shards[0].file == "shard-00000.lmdb"
    too_many = make_plan(scan, PlanOptions(format="lmdb", shards=50), {})
    assert len(too_many.shards) == 10


def test_nodes_take_disjoint_shards():
    plan = make_plan(_scan(), PlanOptions(format="recordio", shards=5, val_fraction=0.1), {})
    taken = [g for r in range(3) for g, _ in plan.shards_for_node(r, 3)]
    assert sorted(taken) == list(range(len(plan.shards)))


def test_json_round_trip(tmp_path):
    scan = _scan((4, 4))
    scan.items.append(SourceItem("/src/c1/ü ñ.jpg", "c1/ü ñ.jpg", 1, 5))
    scan.skipped.append(("/src/c0/bad.jpg", "empty file (0 bytes)"))
    plan = make_plan(scan, PlanOptions(format="tfrecord", shards=2, val_fraction=0.25), {"kind": "folder"})
    plan.save(tmp_path)
    back = Plan.load(tmp_path)
    assert back.to_json() == plan.to_json() and back.fingerprint() == plan.fingerprint()
    assert back.skipped == [("/src/c0/bad.jpg", "empty file (0 bytes)")]
    vec = ScanResult(root="/r", classes=[], items=[SourceItem("/r/a.jpg", "a.jpg", (0.5, 1.0), 3)])
    vplan = make_plan(vec, PlanOptions(format="recordio"), {})
    assert Plan.from_json(vplan.to_json(), "x").shards[0].items[0].label == (0.5, 1.0)


def v1_plan_json(plan: Plan) -> str:
    """The plan file as fastdata wrote it before plan version 2 (one list per item), verbatim."""
    doc = {
        "plan_version": 1,
        "options": dataclasses.asdict(plan.options),
        "source": plan.source,
        "classes": plan.classes,
        "splits": plan.splits,
        "skipped": [list(p) for p in plan.skipped],
        "ignored": [list(p) for p in plan.ignored],
        "shards": [
            {
                "split": s.split,
                "index": s.index,
                "file": s.file,
                "ids": s.ids,
                "items": [[i.path, i.rel, list(i.label) if isinstance(i.label, tuple) else i.label, i.size] for i in s.items],
            }
            for s in plan.shards
        ],
    }
    return json.dumps(doc, separators=(",", ":")) + "\n"


def _same(a: Plan, b: Plan) -> bool:
    return (a.options, a.source, a.classes, a.splits, a.skipped, a.ignored) == (
        b.options, b.source, b.classes, b.splits, b.skipped, b.ignored) and [
        (s.split, s.index, s.file, s.ids, s.items) for s in a.shards] == [
        (s.split, s.index, s.file, s.ids, s.items) for s in b.shards]


def test_a_version_1_plan_reads_as_the_same_plan():
    scan = _scan((5, 7))
    scan.items.append(SourceItem("/src/c1/ü \udcff.jpg", "c1/ü \udcff.jpg", 1, 5))  # an undecodable name
    scan.skipped.append(("/src/c0/bad.jpg", "empty file (0 bytes)"))
    plan = make_plan(scan, PlanOptions(format="tfrecord", shards=3, val_fraction=0.25), {"kind": "folder"})
    old = Plan.from_json(v1_plan_json(plan), "old")
    assert _same(old, plan) and old.fingerprint() == plan.fingerprint()
    vec = make_plan(ScanResult(root="/r", classes=[], items=[SourceItem("/r/a.jpg", "a.jpg", (0.5, 1.0), 3)]),
                    PlanOptions(format="recordio"), {})
    assert Plan.from_json(v1_plan_json(vec), "old").shards[0].items[0].label == (0.5, 1.0)


def test_plan_file_holds_columns_and_reads_back_what_it_cannot_shorten():
    scan = _scan((4, 4))
    plan = make_plan(scan, PlanOptions(format="recordio", shards=2), {})
    doc = json.loads(plan.to_json())
    assert doc["plan_version"] == PLAN_VERSION == 2
    first = doc["shards"][0]
    assert first["path_prefix"] == "/src/" and "paths" not in first and first["id_range"] == [0, 4]
    assert first["rels"] == [it.rel for it in plan.shards[0].items]
    assert first["sizes"] == [it.size for it in plan.shards[0].items]
    # a path that is not prefix + rel (an absolute name in an im2rec list), and ids that are not a range
    odd = ScanResult(root="/r", classes=["0"], items=[SourceItem("/r/a.jpg", "a.jpg", 0, 3),
                                                      SourceItem("/elsewhere/b.jpg", "/elsewhere/b.jpg", 0, 4)])
    oplan = make_plan(odd, PlanOptions(format="recordio", shuffle=False), {})
    oplan.shards[0].ids = [5, 3]
    odoc = json.loads(oplan.to_json())["shards"][0]
    assert odoc["paths"] == ["/r/a.jpg", "/elsewhere/b.jpg"] and odoc["ids"] == [5, 3]
    assert _same(Plan.from_json(oplan.to_json(), "x"), oplan)
    assert all(type(it) is SourceItem for s in Plan.from_json(plan.to_json(), "x").shards for it in s.items)
    first["sizes"].pop()
    with pytest.raises(ManifestError, match="start over with --overwrite"):
        Plan.from_json(json.dumps(doc), "x")
    first["sizes"].append(1)
    first["path_prefix"] = 5
    with pytest.raises(ManifestError, match="path_prefix 5 is not a string"):
        Plan.from_json(json.dumps(doc), "x")


def test_a_plan_of_an_unknown_version_names_the_fix():
    doc = json.loads(make_plan(_scan(), PlanOptions(format="recordio"), {}).to_json())
    doc["plan_version"] = 99
    with pytest.raises(ManifestError, match=r"plan version 99 .*release that started it.*--overwrite"):
        Plan.from_json(json.dumps(doc), "OUT/.fastdata-plan.json")

    with pytest.raises(ManifestError, match=r"unreadable conversion plan .*start over with --overwrite"):
        Plan.from_json("{}", "OUT/.fastdata-plan.json")
    with pytest.raises(ManifestError, match=r"unreadable conversion plan"):
        Plan.from_json("[1]", "OUT/.fastdata-plan.json")
