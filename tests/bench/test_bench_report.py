"""What ``fastdata bench`` shows a person (issue #9, item 8): held-back DALI warnings,
a chart of ratios with one panel per group, and the project's targets from one place."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fastdata.bench import report
from fastdata.bench.harness import Result
from fastdata.bench.quiet import held_back_warnings
from fastdata.bench.targets import TARGETS

from testkit import requires_dali

ROOT = Path(__file__).resolve().parents[2]
DALI_RESET = ("DALI iterator does not support resetting while epoch is not finished.                              "
              "Ignoring...")  # as DALI 2.4 words it, run of spaces included


def _row(name, group, rates, baseline=None, unit="img"):
    return Result(name, group, unit, list(rates), 100.0, baseline, "", None)


def _results() -> list[Result]:
    tv, ev, plain = ("apex recipe: ImageFolder+PIL, uint8 collate", "torchvision recipe: ImageFolder+PIL, uint8 collate",
                     "plain Python im2rec --pass-through loop")
    return [
        _row(tv, "train", [400, 500, 600]),
        _row("fastdata recordio, decode-aware", "train", [1000, 1100, 1200], tv),
        _row("full decode only, recordio (the decode limit)", "train", [900, 1000, 1100], tv),
        _row("DALI CPU recordio", "train", [500, 600, 700], tv),
        _row(ev, "eval", [300, 400, 500]),
        _row("fastdata recordio, decode-aware", "eval", [700, 800, 900], ev),
        _row(plain, "convert", [8000, 9000, 10000]),
        _row("fastdata convert recordio, 2 workers", "convert", [2000, 2500, 3000], plain),
        _row("tfrecord package reader, sequential (small)", "read", [80_000], unit="rec"),
        _row("fastdata recordio random (10k x 200 B)", "read", [800_000], "tfrecord package reader, sequential (small)", unit="rec"),
    ]


def test_expected_dali_warnings_are_counted_not_printed(caplog):
    caplog.set_level(logging.WARNING)
    with held_back_warnings() as held:
        for _ in range(32):
            logging.warning(DALI_RESET)  # as DALI logs it: through the root logger
        logging.getLogger("fastdata.test").warning("an unrelated warning")  # still shown
    assert [r.getMessage() for r in caplog.records] == ["an unrelated warning"]
    assert held.total == 32
    (line,) = held.summary()
    assert line.startswith("bench: 32 DALI warnings held back (iterator reset before the end of an epoch") and "warm-up" in line
    logging.warning(DALI_RESET)  # outside the block it is shown again
    assert caplog.records[-1].getMessage() == DALI_RESET


@requires_dali
@pytest.mark.slow
def test_a_bench_run_prints_no_dali_warning_lines(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "fastdata.converters.cli", "bench", "--quick", "--groups", "train", "--formats", "recordio",
           "--resized", "0", "--no-restart-markers", "--workers", "1", "--out", str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WARNING:root:DALI" not in proc.stderr, proc.stderr[-3000:]
    held = [line for line in proc.stderr.splitlines() if "DALI warnings held back" in line]
    assert len(held) == 1 and held[0].startswith("bench: 1 DALI warnings held back"), proc.stderr[-3000:]


def test_chart_has_one_panel_per_group_showing_ratios_to_its_baseline():
    pytest.importorskip("matplotlib")
    fig = report.figure(_results())
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert [t.split(":")[0] for t in titles] == ["train", "eval", "convert", "read"]
    for ax in fig.axes:
        widths = {t.get_text(): p.get_width() for t, p in zip(ax.get_yticklabels(), ax.patches)}
        assert widths  # every panel has bars
        if ax.get_title(loc="left").startswith("train"):
            assert widths["apex recipe: ImageFolder+PIL, uint8 collate"] == pytest.approx(1.0)
            assert widths["fastdata recordio, decode-aware"] == pytest.approx(1100 / 500)
        if ax.get_title(loc="left").startswith("convert"):
            assert widths["fastdata convert recordio, 2 workers"] == pytest.approx(2500 / 9000)
        assert max(widths.values()) < 20  # ratios, not img/s
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_headline_checks_the_targets_of_the_one_table():
    lines = report.headline(_results())
    assert lines[0].startswith("targets")
    stated = {float(m) for line in lines[1:] for m in re.findall(r"target >= ([\d.]+)x", line)}
    assert stated == {t.minimum for t in TARGETS} == {2.2, 1.8, 2.0, 1.1}
    text = "\n".join(lines)
    # medians: train 1100 vs 500 (apex), 600 (DALI), 1000 (decode limit); eval 800 vs 400
    assert re.search(r"MET    train: fastdata recordio, decode-aware vs apex recipe.*: 2\.20x \(target >= 2\.2x\)", text)
    assert re.search(r"MET    train: fastdata recordio decode-aware vs DALI CPU recordio: 1\.83x \(target >= 1\.8x\)", text)
    assert re.search(r"MET    eval: fastdata recordio, decode-aware vs torchvision recipe.*: 2\.00x \(target >= 2\.0x\)", text)
    assert re.search(r"MET    decode limit: fastdata recordio, decode-aware vs full decode only.*: 1\.10x \(target >= 1\.1x\)", text)
    slower = [r if r.name != "fastdata recordio, decode-aware" or r.group != "train" else
              _row(r.name, r.group, [1000], r.baseline) for r in _results()]
    assert re.search(r"MISSED train: fastdata recordio, decode-aware vs apex.*: 2\.00x", "\n".join(report.headline(slower)))


def test_targets_against_the_baseline_compare_the_same_images():
    # shards stored smaller (--resize) read fewer pixels than the baseline: faster, but not the target's pipeline
    resized = _row("fastdata recordio --resize 256, decode-aware", "train", [3000], "apex recipe: ImageFolder+PIL, uint8 collate")
    text = "\n".join(report.headline([*_results(), resized]))
    assert re.search(r"train: fastdata recordio, decode-aware vs apex recipe.*: 2\.20x", text)
    assert "--resize 256, decode-aware vs apex" not in text


def test_results_md_states_the_same_targets():
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    section = text.split("## Targets", 1)[1].split("\n## ", 1)[0]
    for t in TARGETS:
        assert f"- {t.label}: >= {t.minimum}x" in section, t
    assert len(re.findall(r">= [\d.]+x", section)) == len(TARGETS)


def test_decode_limit_is_the_best_same_images_pipeline_vs_a_full_decode():
    tv = "apex recipe: ImageFolder+PIL, uint8 collate"
    resized = _row("fastdata recordio --resize 256, decode-aware", "train", [3000], tv)
    text = "\n".join(report.headline([*_results(), resized]))
    assert re.search(r"decode limit: fastdata recordio, decode-aware vs full decode only.*: 1\.10x", text)
    marked = _row("fastdata recordio --restart-markers, decode-aware", "train", [1300], tv)
    text = "\n".join(report.headline([*_results(), resized, marked]))
    assert re.search(r"MET    decode limit: fastdata recordio --restart-markers, decode-aware vs full decode only, "
                     r"recordio.*: 1\.30x", text)
