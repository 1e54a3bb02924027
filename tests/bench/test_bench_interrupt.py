"""Ctrl-C in ``fastdata bench`` gives one line and exit status 130, no traceback (issue #9, item 7a).

A terminal's Ctrl-C reaches the whole foreground process group: the bench and
its DataLoader workers alike. The test sends SIGINT the same way, once the
bench is timing a pipeline whose workers are starting or running.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time

import pytest


def _bench(tmp_path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "fastdata.converters.cli", "bench", "--images", "16", "--batch-size", "4",
           "--warmup", "0", "--rounds", "50", "--formats", "recordio", "--no-dali", "--resized", "0",
           "--workers", "2", "--out", str(tmp_path / "out"), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # its own group, so that killpg hits it and its workers only


def _interrupt_after(proc: subprocess.Popen, marker: str, delay: float, timeout: float = 240) -> tuple[int, str]:
    """Read stderr until a line containing ``marker``, wait ``delay`` s, send SIGINT to the group; return (rc, stderr)."""
    seen: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=1):
                continue
            line = proc.stderr.readline()
            if not line:
                pytest.fail("the bench ended before the point to interrupt it:\n" + "".join(seen)[-3000:])
            seen.append(line)
            if marker in line:
                break
        else:
            pytest.fail(f"no {marker!r} line within {timeout} s:\n" + "".join(seen)[-3000:])
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "".join(seen) + rest


@pytest.mark.slow
@pytest.mark.parametrize(
    ("marker", "delay"),
    [
        ("fastdata ImageFolder, decode-aware", 0.0),  # make_loader starting its workers
        ("torchvision's recipe", 0.3),  # a plain DataLoader (the baseline, or its PIL stand-in) mid-epoch
    ],
    ids=["workers-starting", "mid-epoch"],
)
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, marker, delay):
    rc, err = _interrupt_after(_bench(tmp_path, "--groups", "train"), marker, delay)
    assert "Traceback" not in err, err[-4000:]
    assert rc == 130, (rc, err[-3000:])
    tail = [line for line in err.splitlines() if line.strip() and not line.startswith("[")]
    assert tail[-1] == "fastdata bench: interrupted", err[-3000:]
    assert sum("interrupted" in line for line in err.splitlines()) == 1, err[-3000:]
