"""fastdata.watch in a loop with a step of known length over a loader slowed
by a known per-sample delay: the verdict says input-bound when the loader is
slower than the step and compute-bound when it is faster, and the measured
wait share is within 10 percentage points of the arithmetic expectation."""

from __future__ import annotations

import io
import time

import pytest

import fastdata
from fastdata import Workers, make_loader
from fastdata.loading.stats import LoaderStats
from fastdata.loading.verdict import judge

from ._slow import Slow

BATCH, DELAY, THREADS = 4, 0.005, 2
PERIOD = BATCH * DELAY / THREADS  # seconds between batches the loader can deliver: 10 ms


def _watched(step_s: float, epochs: int = 1):
    loader = make_loader(Slow(BATCH * 40, DELAY), BATCH, workers=Workers(THREADS, kind="threads"), rank=0,
                         world_size=1)
    out = io.StringIO()
    with loader, fastdata.watch(loader, every=10, out=out) as w:
        for _ in range(epochs):
            for _images, _targets in w:
                time.sleep(step_s)
    return w.report(), out.getvalue()


@pytest.mark.parametrize("step_s", [0.002, 0.025], ids=["loader-slower", "loader-faster"])
def test_verdict_and_wait_share_match_the_arithmetic(step_s):
    report, printed = _watched(step_s)
    expected = max(0.0, PERIOD - step_s) / max(PERIOD, step_s)  # steady state: the loop waits what the step leaves
    assert abs(report.wait_share - expected) <= 0.10, (report.wait_share, expected)
    assert report.verdict.verdict == ("input-bound" if PERIOD > step_s else "compute-bound")
    assert report.steps == 40
    assert printed.count("fastdata.watch: steps") == 4  # every 10 steps
    assert "verdict: " + report.verdict.verdict in printed  # the summary at the end of the with block
    if report.verdict.verdict == "input-bound":
        assert report.verdict.dominant == "read+decode+transform"
        assert "busy" in report.verdict.suggestion
    else:
        assert "not the bottleneck" in report.verdict.suggestion


def test_report_is_plain_data_and_startup_is_apart():
    report, _ = _watched(0.0)
    d = report.to_dict()
    assert {"steps", "steps_per_s", "wait_share", "verdict", "dominant", "suggestion", "startup_s", "loader"} <= set(d)
    assert d["loader"]["worker_kind"] == "threads"
    assert report.startup_s > 0 and report.wait_share > 0.8  # 0.87 seen with the 2 cores loaded 5x over


def test_any_iterable_and_the_summary_without_with():
    out = io.StringIO()
    w = fastdata.watch([(1, 2)] * 5, every=0, out=out)
    seen = []
    for x, _ in w:
        time.sleep(0.002)  # a step: a list is never waited for
        seen.append(x)
    assert seen == [1] * 5
    assert "verdict: compute-bound" in out.getvalue()
    assert w.report().loader is None
    with pytest.raises(ValueError, match="every"):
        fastdata.watch([], every=-1)


def test_judge_names_the_lever_for_the_dominant_stage():
    class ImageFolder:  # judged by its type's name
        pass

    decoding = LoaderStats(seconds=10, batches=100, wait_s=6, workers=1, worker_kind="processes",
                           worker_busy_s=9.8, worker_stages={"read+decode+transform": 9.0, "collate": 0.8})
    v = judge(0.6, decoding, dataset=ImageFolder())
    assert v.verdict == "input-bound" and v.dominant == "read+decode+transform"
    assert "restart markers" in v.suggestion and "98% busy" in v.suggestion
    idle = LoaderStats(seconds=10, batches=100, wait_s=6, workers=4, worker_kind="threads", worker_busy_s=8,
                       worker_stages={"decode+collate": 8.0})
    assert "hand-over" in judge(0.6, idle).suggestion
    reading = LoaderStats(seconds=10, batches=100, workers=1, worker_busy_s=9.5,
                          worker_stages={"read+plan": 7.0, "decode+collate": 2.5})
    assert "reading" in judge(0.5, reading).suggestion
    fast = LoaderStats(seconds=10, batches=100, wait_s=0.1, workers=2, worker_busy_s=6.6,
                       worker_stages={"decode+collate": 6.6})
    v = judge(0.01, fast)
    # no "Nx" without a measured ratio: the workers' busy share (33%) is not one
    assert v.verdict == "compute-bound" and "x as fast" not in v.suggestion and "33% busy" in v.suggestion
    assert "2.5x as fast as the step alone" in judge(0.01, fast, loader_ratio=2.5).suggestion


@pytest.mark.parametrize("cuda", [False, True], ids=["no-cuda", "cuda"])
def test_a_gpu_is_suggested_only_where_there_is_one(monkeypatch, cuda):
    import torch

    from fastdata.loading import verdict

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(verdict, "cpus_per_rank", lambda: 2)
    every_cpu = LoaderStats(seconds=10, batches=100, wait_s=6, workers=2, worker_kind="threads", worker_busy_s=19.6,
                            worker_stages={"decode+collate": 18.0, "read+plan": 1.6})
    suggestion = judge(0.6, every_cpu).suggestion
    assert ("decode='cuda'" in suggestion) is cuda, suggestion
    assert ("GPU" in suggestion) is cuda, suggestion
    assert "--resize 256" in suggestion or cuda


class _SlowStart:
    """``n`` items a pass, the first of each pass ``delay`` seconds late (a worker start-up)."""

    def __init__(self, n: int, delay: float) -> None:
        self.n, self.delay = n, delay

    def __iter__(self):
        time.sleep(self.delay)
        yield from ((i, i) for i in range(self.n))


@pytest.mark.parametrize("per_pass", [1, 3, 12])
def test_short_passes_count_their_start_up(per_pass):
    out = io.StringIO()
    w = fastdata.watch(_SlowStart(per_pass, 0.02), every=0, out=out)
    for _ in range(3):
        for _batch in w:
            time.sleep(0.001)
    report = w.report()
    short = per_pass < fastdata.loading.watcher.SHORT_PASS
    assert report.startup_counted is short and report.pass_batches == per_pass
    if short:  # the 20 ms start-ups are most of the loop's time, and counted
        assert report.wait_share > 0.5 and report.verdict.verdict == "input-bound"
        assert "counted" in out.getvalue() and f"a pass is {per_pass} batch(es)" in report.verdict.suggestion
    else:  # a long pass leaves its first batch out: a list is never waited for
        assert report.wait_share < 0.10 and "not counted" in out.getvalue()


def test_a_streams_verdict_does_not_blame_the_only_stage_it_times(tmp_path):
    # a stream's workers time their collate only: the verdict must not name it the slow stage
    from fastdata import open_dataset

    from ._data import StreamPixels, write_records

    stream = open_dataset(write_records(tmp_path / "s", 24), streaming=True, transform=StreamPixels())
    with make_loader(stream, 4, workers=2, seed=0, rank=0, world_size=1) as loader:
        list(loader)
        s = loader.stats()
    assert set(s.worker_stages) == {"collate"} and s.worker_busy_s == 0
    verdict = judge(0.5, s)
    assert verdict.verdict == "input-bound" and verdict.dominant is None
    assert "collate" not in verdict.suggestion and "copying images" not in verdict.suggestion


def test_short_passes_blame_the_start_up_only_when_it_is_most_of_the_wait():
    from fastdata.loading.verdict import ShortPasses

    decoding = LoaderStats(seconds=10, batches=60, wait_s=6, workers=2, worker_kind="threads", worker_busy_s=19.0,
                           worker_stages={"decode+collate": 18.0, "read+plan": 1.0})
    mostly_startup = judge(0.9, decoding, short=ShortPasses(1, 0.95)).suggestion
    assert "mostly for each pass's first batch: a pass is 1 batch(es)" in mostly_startup
    steady = judge(0.9, decoding, short=ShortPasses(7, 0.3)).suggestion  # the loader is slow all along
    assert "first batch" not in steady and "decoding into the batch" in steady
    idle = LoaderStats(seconds=10, batches=60, wait_s=6, workers=2, worker_kind="threads", worker_busy_s=9.0,
                       worker_stages={"decode+collate": 9.0})
    # half-idle workers in short passes are the queue filling and draining, not a slow hand-over
    assert "hand-over" not in judge(0.9, idle, short=ShortPasses(3, 0.3)).suggestion
    assert "hand-over" in judge(0.9, idle).suggestion
