"""The remote tests never skip unnoticed: without nginx, a plain ``pytest -q``
ends with the reason and the fix; under CI=true they fail instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from servers import HIDE_ENV

ROOT = Path(__file__).resolve().parents[2]


def _pytest(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/remote/test_http.py"],
        cwd=ROOT, env={**base, HIDE_ENV: "nginx", **env}, capture_output=True, text=True, timeout=240,
    )


def test_without_nginx_the_http_tests_skip_with_the_reason_printed():
    done = _pytest()
    assert done.returncode == 0, done.stdout[-2000:]
    assert "6 skipped" in done.stdout
    assert "remote tests: 6 skipped: nginx not found: apt-get install nginx" in done.stdout, done.stdout[-2000:]


def test_under_ci_a_missing_nginx_fails():
    done = _pytest(CI="true")
    assert done.returncode == 1 and "nginx not found" in done.stdout and "CI must run the remote tests" in done.stdout
