"""Issue 27, part 2: what a new user's ``fastdata bench`` says and how far it can be trusted.

The chart is the table (same rows, labels and numbers, ``!`` included); every
option is described; the noise and busy-machine judgements follow the
rounds and the measured load, not the clock's tick; the duration is said up
front and the progress shows the time left; conversion is timed beyond
start-up."""

from __future__ import annotations

import io
import json
import time

import pytest

from fastdata.bench import busy, report, verdicts
from fastdata.bench.harness import Result, Variant, run_interleaved

STAND_IN = "PIL stand-in for torchvision's recipe"


def _row(name, group, rates, baseline=None, unit="img", others=None, seconds=None, error=None):
    r = Result(name, group, unit, list(rates), 100.0, baseline, "", None, error=error)
    if others is not None:
        r.others, r.seconds = list(others), list(seconds or [1.0] * len(others))
    return r


def _results() -> list[Result]:
    plain = "plain Python im2rec --pass-through loop"
    return [
        _row(STAND_IN, "train", [400, 500, 600]),  # 40 %: noisy
        _row("fastdata recordio, decode-aware", "train", [1000, 1100, 1150], STAND_IN),
        _row("DALI CPU recordio", "train", [450, 460, 470], STAND_IN),  # slower than the base
        _row("fastdata lmdb, decode-aware", "train", [], STAND_IN, error="RuntimeError: boom"),
        _row(STAND_IN, "eval", [300, 310, 320]),
        _row("fastdata recordio, decode-aware", "eval", [700, 720, 740], STAND_IN),
        _row(plain, "convert", [4000, 4100, 4200]),
        _row("fastdata convert recordio --passthrough, 2 workers", "convert", [6000, 6100, 6150], plain),
        _row("fastdata recordio random (dataset images)", "read", [85_000, 86_000, 87_000], unit="rec"),  # no baseline
    ]


def assert_chart_is_the_table(chart: list[dict], text: str) -> None:
    table = report.parse_table(text)
    assert len(chart) == len(table)
    assert [(b["group"], b["label"]) for b in chart] == [(r["group"], r["variant"]) for r in table]
    for bar, row in zip(chart, table):
        if row["median"] == "failed":
            assert bar["text"] == "failed" and bar["value"] == 0
            continue
        assert report.rate_text(bar["value"]) == row["median"], (bar, row)
        assert bar["text"] == f"{row['median']} {row['unit']}  {row['x base']}", (bar, row)


def test_the_chart_draws_exactly_the_table_rows():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from fastdata.bench.chart import plotted

    results = _results()
    text = report.table(results, {"convert": "images/s beyond start-up"})
    fig = report.figure(results, {"convert": "images/s beyond start-up"})
    try:
        chart = plotted(fig)
        assert_chart_is_the_table(chart, text)
        by = {(b["group"], b["label"]): b for b in chart}
        # the stand-in is labelled as one, the noisy row keeps its mark, the row with no baseline is drawn too
        assert by[("train", f"{STAND_IN} !")]["text"] == "500 img/s  base"
        assert by[("train", "DALI CPU recordio")]["text"] == "460 img/s  0.92x"
        assert by[("train", "fastdata lmdb, decode-aware")]["text"] == "failed"
        assert by[("read", "fastdata recordio random (dataset images)")]["text"] == "86,000 rec/s  -"
        titles = {ax.get_gid(): ax.get_title(loc="left") for ax in fig.axes if ax.get_gid()}
        assert f"ratio to {STAND_IN}" in titles["train"] and "apex" not in " ".join(titles.values())
        assert "images/s beyond start-up" in titles["convert"]
        marked = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() if t.get_text().endswith(" !")]
        assert marked == [f"{STAND_IN} !"]
    finally:
        plt.close(fig)


def test_whiskers_have_caps_and_end_before_their_value_labels():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    fig = report.figure(_results())
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        checked = 0
        for ax in (a for a in fig.axes if a.get_gid()):
            from matplotlib.container import ErrorbarContainer

            (whiskers,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]  # the bars' min-max
            assert whiskers.has_xerr
            _, caps, (lines,) = whiskers.lines
            assert len(caps) == 2  # the min and the max end
            for segment, text in zip(lines.get_segments(), ax.texts):
                right = ax.transData.transform(segment[1])[0]  # the whisker's max end, in pixels
                label = text.get_window_extent(renderer)
                assert label.x0 > right + 2, (text.get_text(), label.x0, right)  # a gap: the cap is not under the text
                checked += 1
        assert checked == len(report.rows(_results()))
    finally:
        plt.close(fig)


def test_the_chart_fails_the_check_when_it_leaves_a_row_out(monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from fastdata.bench import chart

    results = _results()
    text = report.table(results)
    real_rows = report.rows
    monkeypatch.setattr(report, "rows", lambda rs: [r for r in real_rows(rs) if r.median is not None])  # a filter
    fig = chart.figure(report.rows(results))
    try:
        with pytest.raises(AssertionError):
            assert_chart_is_the_table(chart.plotted(fig), text)
    finally:
        plt.close(fig)


def test_results_json_keeps_what_the_png_plots_and_it_equals_results_txt(tmp_path):
    pytest.importorskip("matplotlib")
    results = _results()
    paths = report.write_all(results, {"group_notes": {"convert": "beyond start-up"}}, tmp_path)
    assert paths["png"].exists() and paths["png"].stat().st_size > 10_000
    doc = json.loads(paths["json"].read_text())
    assert_chart_is_the_table(doc["chart"], paths["table"].read_text())
    assert [r["label"] for r in doc["results"]] == [b["label"] for b in doc["chart"]]


def test_every_option_is_described_and_the_default_grid_is_said():
    from fastdata.bench.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        assert action.help and action.help.strip(), action.option_strings or action.dest
    text = parser.format_help()
    for flag in ("--batch-size", "--warmup", "--formats", "--quiet", "--full", "--pass-seconds", "--groups"):
        assert flag in text
    full = next(a for a in parser._actions if "--full" in a.option_strings)
    assert "instead of the default grid" in full.help
    assert "default grid" in parser.description and "--full" in parser.description


def test_a_row_is_noisy_when_its_rounds_spread_over_the_limit_of_their_median():
    steady = _row("a", "g", [950, 1000, 1050])  # 10 %
    noisy = _row("b", "g", [800, 1000, 1100])  # 30 %
    assert steady.spread == pytest.approx(0.1) and not verdicts.is_noisy(steady)
    assert noisy.spread == pytest.approx(0.3) and verdicts.is_noisy(noisy)
    assert verdicts.row_warnings(noisy) == [f"noisy: rounds spread 30% of the median (over {busy.NOISE_LIMIT:.0%})"]
    assert _row("c", "g", [1000]).spread is None  # one round: nothing to judge


def test_busy_is_weighted_by_time_and_ignores_windows_too_short_to_tell():
    # 20 ms windows read 50-100 % "others" from one clock tick; they must neither mark a row nor the run busy
    idle = _row("pipeline", "g", [1000, 1000, 1000], others=[0.0, 0.02, 0.0], seconds=[1.2, 1.1, 1.2])
    ticks = _row("reads", "g", [9e5, 9e5, 9e5], others=[1.0, 0.5, 1.0], seconds=[0.02, 0.02, 0.02])
    assert ticks.busy is None and verdicts.row_warnings(ticks) == []
    assert verdicts.machine_busy([idle, ticks]) == pytest.approx(0.022 / 3.5)
    assert not any("busy" in w for w in verdicts.run_warnings([idle, ticks]))
    # a real load: long windows where others took 40 %
    loaded = _row("loaded", "g", [1000, 1000, 1000], others=[0.4, 0.4, 0.4], seconds=[1.0, 1.0, 1.0])
    assert loaded.busy == pytest.approx(0.4) and any(w.startswith("busy") for w in verdicts.row_warnings(loaded))
    assert any(w.startswith("WARNING: the machine was busy") for w in verdicts.run_warnings([idle, loaded]))
    # weighted by time: a short busy second does not outweigh long idle ones
    assert busy.weighted([0.9, 0.0], [1.0, 9.0]) == pytest.approx(0.09)


def test_the_harness_records_each_rounds_window():
    def sleepy() -> int:
        time.sleep(0.05)
        return 5

    (r,) = run_interleaved([Variant("s", "g", sleepy)], rounds=2, warmup=1)
    assert len(r.rates) == 2 and len(r.seconds) == len(r.others) and all(0.04 < s < 1 for s in r.seconds)


def test_progress_lines_name_the_group_so_train_and_eval_rows_differ():
    lines: list[str] = []
    same = [Variant("fastdata recordio, decode-aware", group, lambda: 1) for group in ("train", "eval")]
    run_interleaved(same, rounds=1, warmup=0, progress=lines.append)
    assert lines == ["[1/2] round 1/1, train: fastdata recordio, decode-aware",
                     "[2/2] round 1/1, eval: fastdata recordio, decode-aware"]

    class Recorder:
        def __init__(self) -> None:
            self.labels: list[str] = []

        def begin(self, step, total, label, variant, warm) -> None:
            self.labels.append(label)

        def end(self, variant, warm, seconds) -> None:
            pass

    bar = Recorder()
    run_interleaved(same, rounds=1, warmup=1, progress=bar)
    assert bar.labels == ["warm-up, train", "warm-up, eval", "round 1/1, train", "round 1/1, eval"]


def test_progress_says_the_time_left_on_a_log_and_redraws_a_bar_on_a_terminal():
    from fastdata.bench.progress import Progress, duration, estimate

    now = [0.0]
    variants = [Variant("a", "g", lambda: 1, expect=2.0, expect_warm=1.0), Variant("b", "g", lambda: 1, expect=4.0)]
    assert estimate(variants, rounds=3, warmup=1) == pytest.approx(3 * 6.0 + 1.0 + 4.0)
    assert duration(23) == "23 s" and duration(95) == "1 min 40 s" and duration(61) == "1 min"

    def run(tty: bool) -> str:
        out = io.StringIO()
        p = Progress(variants, rounds=1, warmup=0, stream=out, tty=tty, clock_fn=lambda: now[0])
        p.begin(1, 2, "round 1/1", variants[0], False)
        p.end(variants[0], False, 4.0)  # took twice the guess: the next guess doubles
        assert p.left() == pytest.approx(4.0 + 8.0)  # until the next step begins, the step just done counts as measured
        p.begin(2, 2, "round 1/1", variants[1], False)
        p.end(variants[1], False, 8.0)
        p.close()
        return out.getvalue()

    log = run(False).splitlines()
    assert log == ["[1/2] round 1/1: a (about 0:06 left)", "[2/2] round 1/1: b (about 0:08 left)"]
    bar = run(True)
    # redrawn in place (a ticker may redraw the same line meanwhile), one newline at the end
    assert bar.count("\r") >= 2 and bar.count("\n") == 1 and bar.endswith("\n") and "\x1b[K" in bar
    assert "bench [" in bar and "1/2 ~0:06 left  round 1/1: a" in bar and "2/2 ~0:08 left  round 1/1: b" in bar


def test_conversion_is_timed_beyond_start_up(tmp_path):
    """A converter with 0.3 s of start-up and 1 ms an image: the row says ~1,000 img/s, not the
    whole command's (n / (0.3 + n ms)), however small the set."""
    from PIL import Image

    from fastdata.bench import suite

    src = tmp_path / "src"
    for c in ("a", "b"):
        (src / c).mkdir(parents=True)
        for i in range(10):
            Image.new("RGB", (8, 8)).save(src / c / f"{i}.jpg")
    calls = []

    def fake_convert(src_dir, out, fmt, workers, restart_markers=None, **_):
        n = sum(1 for p in __import__("pathlib").Path(src_dir).rglob("*.jpg"))
        calls.append((fmt, workers, restart_markers, n))
        time.sleep(0.3 + n * 0.001)

    s = suite.Settings(src=str(src), shards={}, workers=2, groups=("convert",), convert=fake_convert,
                       scratch=str(tmp_path / "scratch"), convert_images=200)
    variants = suite.build(s)
    assert s.converted_files == 200
    names = [v.name for v in variants]
    assert names[0] == "plain Python im2rec --pass-through loop"
    assert "fastdata convert recordio --passthrough, 1 worker" in names
    row = next(v for v in variants if v.name == "fastdata convert recordio --passthrough, 2 workers")
    got = row.run()
    assert got.items == 200 - suite.CONVERT_TINY  # pass_seconds 0: one pair of runs
    assert 700 < got.items / got.seconds < 1100  # the whole command would say under 400
    assert {c[3] for c in calls} == {200, suite.CONVERT_TINY} and all(c[2] is False for c in calls)
    plain = variants[0].run()
    assert plain.items == 200 - suite.CONVERT_TINY and plain.seconds > 0
    s.pass_seconds = 1.5  # pairs of runs repeated until the pass has lasted that long
    calls.clear()
    got = next(v for v in suite.build(s) if v.name == row.name).run()
    assert len(calls) == 2 * (got.items // (200 - suite.CONVERT_TINY)) >= 4
    assert 700 < got.items / got.seconds < 1100


def test_a_target_judged_on_the_stand_in_says_so():
    from fastdata.bench.harness import Result
    from fastdata.bench.verdicts import judge

    def row(group, name, rates, baseline="PIL stand-in for torchvision's recipe"):
        return Result(name=name, group=group, unit="img", rates=rates, peak_rss_mb=0.0, baseline=baseline, note="",
                      bytes_per_item=None)

    results = [
        row("train", "PIL stand-in for torchvision's recipe", [100.0, 100.0], baseline=None),
        row("train", "fastdata recordio, decode-aware", [300.0, 300.0]),
    ]
    [train] = [v for v in judge(results, ("recordio",)) if v.key == "train_vs_torchvision"]
    assert "PIL stand-in for torchvision's recipe" in train.label and "(apex)" not in train.label
    assert abs(train.ratio - 3.0) < 1e-9
    results[0] = row("train", "torchvision's recipe", [100.0, 100.0], baseline=None)
    results[1] = row("train", "fastdata recordio, decode-aware", [300.0, 300.0], baseline="torchvision's recipe")
    [train] = [v for v in judge(results, ("recordio",)) if v.key == "train_vs_torchvision"]
    assert "torchvision (apex) recipe" in train.label
