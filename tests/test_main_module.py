"""``python -m fastdata`` is the ``fastdata`` command."""

from __future__ import annotations

import subprocess
import sys

from fastdata import __version__


def _module(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fastdata", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_python_m_fastdata_runs_the_command_line(tmp_path):
    done = _module("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == f"fastdata {__version__}", done.stderr
    done = _module("--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: fastdata ") and "convert" in done.stdout
    done = _module("inspect", str(tmp_path / "missing"), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("fastdata: error: ") and "Traceback" not in done.stderr
