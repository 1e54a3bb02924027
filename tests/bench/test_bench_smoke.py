"""`fastdata bench` end to end in seconds (a smoke run: no timing is asserted)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from fastdata.bench.harness import Variant, run_interleaved
from fastdata.bench.report import headline, ratios, table


def test_quick_bench_from_the_command_line(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "fastdata.converters.cli", "bench", "--quick", "--full", "--groups", "train,eval,read,convert",
           "--formats", "recordio", "--no-dali", "--resized", "0", "--workers", "1", "--out", str(out), "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    assert doc["machine"]["cpu_count"] and doc["machine"]["versions"]["torch"]
    assert doc["machine"]["crop_decode"].startswith(("compiled", "pure Python"))
    rows = {(r["group"], r["name"]): r for r in doc["results"]}
    assert all(r["error"] is None for r in rows.values()), [r["error"] for r in rows.values() if r["error"]]
    assert {g for g, _ in rows} == {"train", "eval", "read", "convert"}
    assert all(r["median"] > 0 for r in rows.values())
    assert rows[("train", "fastdata recordio, decode-aware")]["ratio_to_baseline"] > 0
    from fastdata.decode.native import crop_decoder, native_status

    # decode-aware rows run the defaults (no kind: "auto"), and the other kind is shown beside them
    kind = "threads" if crop_decoder() == "compiled" else "processes"
    other = "processes" if kind == "threads" else "threads"
    assert rows[("train", "fastdata recordio, decode-aware")]["note"] == f"defaults: make_loader(ds, 8, workers=1) -> {kind}"
    assert ("train", f"fastdata recordio, decode-aware, worker {other}") in rows
    # the default conversion writes restart markers where the compiled decoder is built; byte-for-byte
    # (--passthrough) shards are then timed beside it
    assert (("train", "fastdata recordio --passthrough, decode-aware") in rows) == (kind == "threads")
    # the header names the machine, the decode path and the configuration the targets are judged on
    head = proc.stdout.splitlines()[:4]
    assert head[0].startswith("machine: ") and f"torch {doc['machine']['versions']['torch']}" in head[0]
    assert head[1] == f"crop decode: {native_status()}"
    assert head[3].startswith("targets judged on: fastdata recordio, decode-aware (defaults: make_loader(ds, 8, workers=1)")
    assert doc["settings"]["judged_configuration"] == head[3].split(": ", 1)[1]
    assert {t["target"] for t in doc["settings"]["targets"]} == {"train_vs_torchvision", "train_vs_dali_cpu",
                                                                 "eval_vs_torchvision", "decode_limit"}
    assert doc["settings"]["missing_peers"]["DALI"] == "left out (--no-dali)"
    assert "not timed: DALI: left out (--no-dali)" in proc.stdout
    assert "targets (ratios from this run" in proc.stdout
    assert (out / "results.txt").read_text().startswith("machine: ")
    # conversion is timed beyond start-up and says so; the chart is the table
    assert rows[("convert", "plain Python im2rec --pass-through loop")]["ratio_text"] == "base"
    assert "images/s beyond start-up" in doc["settings"]["group_notes"]["convert"]
    assert "convert: images/s beyond start-up" in proc.stdout
    if doc["chart"] is not None:
        assert_chart_is_the_table(doc["chart"], (out / "results.txt").read_text())


def assert_chart_is_the_table(chart: list[dict], text: str) -> None:
    """The chart's bars (read back from the figure into results.json) are the table's rows: same
    rows in the same order, same labels (``!`` included), same medians, units and ratios."""
    from fastdata.bench.report import parse_table, rate_text

    table = parse_table(text)
    assert [(b["group"], b["label"]) for b in chart] == [(r["group"], r["variant"]) for r in table]
    for bar, row in zip(chart, table):
        if row["median"] == "failed":
            assert bar["text"] == "failed" and bar["value"] == 0
            continue
        assert rate_text(bar["value"]) == row["median"], (bar, row)
        assert bar["text"] == f"{row['median']} {row['unit']}  {row['x base']}", (bar, row)


def test_the_default_grid_is_the_comparison_and_takes_minutes_not_more(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "fastdata.converters.cli", "bench", "--quick", "--workers", "1", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    names = [(r["group"], r["name"]) for r in doc["results"]]
    from fastdata.bench import baselines, suite

    base = baselines.recipe_name()
    assert base == ("torchvision's recipe" if baselines.has_torchvision() else "PIL stand-in for torchvision's recipe")
    want = [("train", base), ("train", "fastdata ImageFolder, decode-aware"), ("train", "fastdata recordio, decode-aware"),
            ("train", "fastdata tfrecord, decode-aware")]
    want += [("train", "DALI CPU recordio")] if suite.has_dali() else []
    want += [("eval", base), ("eval", "fastdata ImageFolder, decode-aware"), ("eval", "fastdata recordio, decode-aware"),
             ("eval", "fastdata tfrecord, decode-aware")]
    assert names == want
    assert doc["settings"]["grid"] == "default"
    # said up front: how many variants and roughly how long; then one progress line a step (stderr is not a TTY)
    err = proc.stderr.splitlines()
    (estimate,) = [line for line in err if line.startswith("bench: timing ")]
    assert estimate.startswith(f"bench: timing {len(want)} variants (train {len(want) - 4}, eval 4) x 1 round: roughly ")
    assert "--full" in estimate
    steps = [line for line in err if line.startswith("[")]
    assert len(steps) == len(want) and all(re.search(r"\(about \d+:\d\d left\)$", line) for line in steps), steps
    assert err.index(estimate) < err.index(steps[0])
    (decode_limit,) = [t for t in doc["settings"]["targets"] if t["target"] == "decode_limit"]
    assert "not in the default grid" in decode_limit["not_judged_because"] and "--full" in decode_limit["not_judged_because"]
    if doc["chart"] is not None:
        assert_chart_is_the_table(doc["chart"], (out / "results.txt").read_text())


def test_a_failing_variant_is_reported_and_the_others_go_on():
    calls = []

    def ok():
        calls.append(1)
        return 10

    def broken():
        raise RuntimeError("boom")

    results = run_interleaved([Variant("base", "g", ok), Variant("bad", "g", broken, baseline="base"),
                               Variant("fast", "g", ok, baseline="base")], rounds=2, warmup=1)
    by = {r.name: r for r in results}
    assert by["bad"].error == "RuntimeError: boom" and not by["bad"].rates
    assert len(by["fast"].rates) == 2 and len(calls) == 6  # warm-up + 2 rounds, for each good variant
    assert ratios(results)[("g", "bad")] is None and ratios(results)[("g", "fast")] > 0
    assert "failed" in table(results)
    assert headline(results)[0].startswith("targets")


def test_the_main_job_without_the_tfrecord_package_has_no_failed_row(tmp_path):
    # README's main command installs .[turbo,bench], which leaves the tfrecord package out
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = tmp_path / "results"
    code = ("import sys; sys.modules['tfrecord'] = None\n"  # makes `import tfrecord` raise ImportError
            "from fastdata.converters.cli import main\n"
            f"sys.exit(main(['bench', '--quick', '--groups', 'read', '--formats', 'recordio,tfrecord', '--no-dali',"
            f" '--resized', '0', '--out', {str(out)!r}, '--quiet']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["results"]
    assert rows and all(r["error"] is None for r in rows), [r["error"] for r in rows if r["error"]]
    assert not any("tfrecord package" in r["name"] for r in rows)


def test_a_timed_pass_reads_whole_epochs_until_it_has_enough_images():
    from fastdata.bench.suite import steady

    epochs = []

    class Loader:
        def __iter__(self):
            epochs.append(1)
            return iter([([0] * 4, None)] * 3)  # 12 images an epoch

    for minimum, want in ((0, 12), (12, 12), (13, 24), (30, 36)):
        parts = steady(Loader, minimum)
        parts["setup"]()
        epochs.clear()
        assert parts["run"]() == want and len(epochs) == want // 12
        parts["teardown"]()
