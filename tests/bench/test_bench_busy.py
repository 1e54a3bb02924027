"""The harness measures how much of its CPUs other processes took while a row
was timed (the machine is busy), not counting its own worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from fastdata.bench import busy
from fastdata.bench.harness import Variant, run_interleaved

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs Linux /proc")

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {cpu}: pass\ntime.sleep({rest})"


def _sleep_pass() -> int:
    time.sleep(1.5)
    return 1


def test_a_process_that_is_not_ours_spinning_makes_the_machine_busy():
    # started through a shell that exits at once: the spinner is re-parented, not our descendant
    started = subprocess.run(["sh", "-c", f"{sys.executable} -c '{SPIN.format(cpu=30, rest=0)}' >/dev/null 2>&1 & echo $!"],
                             check=True, capture_output=True, text=True)
    spinner = int(started.stdout.strip())
    try:
        time.sleep(0.2)
        (result,) = run_interleaved([Variant("idle", "g", _sleep_pass)], rounds=1, warmup=0)
    finally:
        os.kill(spinner, signal.SIGKILL)
    # one spinning core of this machine's CPUs (whatever else runs, at least that much)
    assert result.busy is not None and result.busy >= 0.8 / len(os.sched_getaffinity(0)) - 0.15, result.others


def test_our_own_worker_processes_are_not_counted_as_others():
    before = busy.snapshot(children=[])
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(cpu=0.5, rest=30)])
    try:
        deadline = time.monotonic() + 60
        while busy._process_ticks(child.pid) < 0.45 * busy._TICK and time.monotonic() < deadline:
            time.sleep(0.05)
        live = busy.snapshot(children=[child.pid])
        assert ticks(live.own - before.own) >= 0.45 * busy._TICK  # the live child's CPU is ours
    finally:
        child.kill()
        child.wait()
    reaped = busy.snapshot(children=[])
    assert ticks(reaped.own - before.own) >= 0.45 * busy._TICK  # and stays ours once it has exited and been waited for


def ticks(seconds: float) -> int:
    # the counters are whole clock ticks: 11.53 - 11.08 is 0.4499999... in floating point, 45 ticks in fact
    return round(seconds * busy._TICK)


def test_shares_are_clamped_and_missing_counters_give_none():
    a, b = busy.CpuSnapshot(10.0, 1.0, 2), busy.CpuSnapshot(12.0, 2.0, 2)
    assert busy.others_share(a, b, 1.0) == pytest.approx(0.5)  # 2 s busy, 1 s ours, over 2 CPUs x 1 s
    assert busy.others_share(a, busy.CpuSnapshot(10.5, 2.0, 2), 1.0) == 0.0
    assert busy.others_share(None, b, 1.0) is None and busy.others_share(a, b, 0) is None
