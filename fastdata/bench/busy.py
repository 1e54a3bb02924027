"""How much of this process's CPUs other processes used while a variant was timed.

A ratio of two pipelines measured minutes apart means little when something
else took a share of the cores meanwhile: on a shared 2-core machine the same
``fastdata bench`` printed 6.86x one time and 2.12x the next. So the harness
reads the kernel's per-CPU counters (``/proc/stat``, steal time included:
another VM's share is lost to us too) and this process tree's own CPU time
(``/proc/PID/stat``) around each timed pass; what the CPUs did beyond our own
work is other processes' load. Linux only; elsewhere nothing is measured.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

BUSY_LIMIT = 0.10
"""Other processes' share of this process's CPUs (weighted by the time timed) above which a row or run is called busy."""

NOISE_LIMIT = 0.20
"""A row whose rounds' relative spread, (fastest - slowest) / median, is over this is called noisy."""

MIN_WINDOW_S = 0.5
"""Counters are whole clock ticks (10 ms): a window shorter than this says little about other
processes (one tick over 20 ms of 2 CPUs is 25 %), so such windows are not used to judge a machine busy."""

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclasses.dataclass(frozen=True)
class CpuSnapshot:
    """Busy CPU seconds of the CPUs this process may run on, and this process tree's own."""

    busy: float
    own: float
    cpus: int


def snapshot(pid: int | None = None, children: Iterable[int] = ()) -> CpuSnapshot | None:
    """The counters now (``children``: the tree's other live processes), or None without /proc."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    try:
        with open("/proc/stat") as f:
            lines = {line.split(maxsplit=1)[0]: line.split() for line in f if line.startswith("cpu")}
    except OSError:
        return None
    found = [lines.get(f"cpu{c}") for c in cpus] or [lines.get("cpu")]
    wanted = [row for row in found if row is not None]
    if len(wanted) != len(found):
        return None
    # user nice system idle iowait irq softirq steal: everything but idle and iowait is busy
    busy = sum(sum(int(v) for v in (row[1:4] + row[6:9])) for row in wanted)
    own = _process_ticks(pid or os.getpid(), reaped=True) + sum(_process_ticks(c) for c in children)
    return CpuSnapshot(busy / _TICK, own / _TICK, len(wanted) if cpus else (os.cpu_count() or 1))


def weighted(shares: list[float], seconds: list[float]) -> float | None:
    """Other processes' share over several windows, each weighted by its length
    (windows shorter than :data:`MIN_WINDOW_S` left out); None when none is left."""
    pairs = [(x, s) for x, s in zip(shares, seconds) if s >= MIN_WINDOW_S]
    total = sum(s for _, s in pairs)
    return sum(x * s for x, s in pairs) / total if total > 0 else None


def others_share(before: CpuSnapshot | None, after: CpuSnapshot | None, seconds: float) -> float | None:
    """Other processes' share of our CPUs between two snapshots (0 = idle, 1 = all of them)."""
    if before is None or after is None or seconds <= 0:
        return None
    others = (after.busy - before.busy) - (after.own - before.own)
    return min(1.0, max(0.0, others / (seconds * after.cpus)))


def _process_ticks(pid: int, *, reaped: bool = False) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    # fields[11:15] are utime stime cutime cstime (the 14th-17th of the line)
    ticks = int(fields[11]) + int(fields[12])
    return ticks + int(fields[13]) + int(fields[14]) if reaped else ticks
