"""Every benchmark script README.md names runs from a fresh clone: no
``../shared`` beside it, any current directory (one holding a decoy ``fastdata/``
without ``converters/`` included, as a checkout's root is after a non-editable
install). It makes its own data, or says in one line what is missing and how
to provide it; a process that cannot import ``fastdata.converters`` says so in
one line with the fix, never with a traceback or a child's source."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMED = sorted(set(re.findall(r"benchmarks/([A-Za-z0-9_]+\.(?:py|sh))", (ROOT / "README.md").read_text())))

# A real run, kept short by each script's --quick (a check that it runs, not a measurement).
QUICK = {
    "convert_scaling.py": ["--quick"],
    "restart_marker_cost.py": ["--quick"],
    "bench_stability.py": ["--quick"],
    "resume_cost.py": ["--quick"],
}
NO_CONVERTERS = {"resume_cost.py"}  # the library alone: nothing of fastdata.converters to miss
# Scripts for the GPU machine (gpu_*.py): --help here (a run needs CUDA and minutes).
HELP_ONLY = {n for n in NAMED if n.startswith("gpu_") and n.endswith(".py")}
# Shell scripts (gpu_check.sh runs the cuda-marked tests and the GPU benchmarks under time boxes): syntax checked.
SHELL = {n for n in NAMED if n.endswith(".sh")}


def test_the_readme_names_only_scripts_this_test_knows():
    """A new script named in README.md needs a quick mode here (or is a GPU one: gpu_*.py, --help)."""
    assert NAMED, "README.md names no benchmark script?"
    assert set(NAMED) <= set(QUICK) | HELP_ONLY | SHELL, set(NAMED) - set(QUICK) - HELP_ONLY - SHELL
    for name in NAMED:
        assert (ROOT / "benchmarks" / name).is_file(), name


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


@pytest.mark.parametrize("name", [n for n in NAMED if n in QUICK])
def test_each_named_script_runs_quick_from_a_fresh_clone_in_any_directory(clone, decoy_cwd, tmp_path, name):
    script = clone / "benchmarks" / name
    extra = {"convert_scaling.py": ["--scratch", str(tmp_path / "scratch")],
             "bench_stability.py": ["--out", str(tmp_path / "stability")]}.get(name, [])
    done = _run([sys.executable, str(script), *QUICK[name], *extra], cwd=decoy_cwd)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "decoy" not in done.stderr + done.stdout


@pytest.mark.parametrize("name", [n for n in NAMED if n in HELP_ONLY])
def test_each_gpu_script_answers_help_from_a_fresh_clone(clone, tmp_path, name):
    done = _run([sys.executable, str(clone / "benchmarks" / name), "--help"], cwd=tmp_path)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("name", [n for n in NAMED if n in SHELL])
def test_each_named_shell_script_parses(clone, name):
    done = _run(["bash", "-n", str(clone / "benchmarks" / name)], cwd=clone)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", [n for n in NAMED if n in QUICK and n not in NO_CONVERTERS])
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
    ],
)
def test_a_missing_source_is_one_line_naming_it_and_the_way_out(clone, tmp_path, name, argv, says):
    done = _run([sys.executable, str(clone / "benchmarks" / name), *argv], cwd=tmp_path, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1 and says in lines[0], done.stderr
    assert "leave" in lines[0] and "Traceback" not in done.stderr
