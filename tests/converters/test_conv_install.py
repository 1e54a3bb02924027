"""``pip install .`` and ``pip install -e .`` both give a working ``fastdata`` command, and the
converters ship as ``fastdata.converters`` (no top-level ``converters`` package)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "bench-results", ".venv*")


def _run(cmd, cwd, timeout=120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _child_env(env_dir: Path) -> Path:
    """A virtual environment that sees the packages of the interpreter running the tests (pip,
    setuptools, wheel, torch...), and returns its python.

    Not ``venv.create(system_site_packages=True)``: run from a virtual environment, that exposes
    the *base* interpreter's site-packages, which may lack what this one has (a fresh pyenv
    Python has setuptools 65 and no wheel: "invalid command 'bdist_wheel'"). The parent's
    site directories go on the child's path through a ``.pth`` file of plain paths, after the
    child's own site-packages; ``.pth`` files inside them are not run, so the parent's own
    (editable) fastdata stays out of the child.
    """
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=env_dir)
    assert purelib.returncode == 0, purelib.stderr
    parent_sites = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    Path(purelib.stdout.strip(), "_parent_sites.pth").write_text("".join(f"{p}\n" for p in parent_sites))
    return python


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["wheel", "editable"])
def test_pip_install_gives_a_working_command(tmp_path, small_folder, editable):
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=_SKIP, symlinks=True)
    env_dir = tmp_path / "venv"
    python = _child_env(env_dir)
    install = [python, "-m", "pip", "install", "--no-deps", "-q"]
    backend = _run([python, "-c", "import setuptools, wheel"], cwd=tmp_path)
    if backend.returncode == 0:  # asked of the child itself: it is the one that builds
        install += ["--no-build-isolation", "--no-index"]  # offline, with the build backend already here
    proc = _run([*install, *(["-e"] if editable else []), checkout], cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    fastdata = env_dir / "bin" / "fastdata"
    assert fastdata.exists()
    proc = _run([fastdata, "--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for command in ("convert", "inspect", "verify", "index", "merge", "bench"):
        assert command in proc.stdout
    proc = _run([fastdata, "convert", "--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "--val-fraction" in proc.stdout

    where = _run([python, "-c", "import fastdata.converters.cli as c, sys; print(c.__file__); print(sys.prefix)"], cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    module_file = Path(where.stdout.splitlines()[0]).resolve()
    if editable:
        assert module_file == (checkout / "converters" / "cli.py").resolve()
    else:
        assert str(module_file).startswith(str(env_dir.resolve()))
        assert module_file.parent.name == "converters" and module_file.parent.parent.name == "fastdata"
        site = module_file.parents[2]
        assert not (site / "converters").exists(), "the wheel must not add a top-level 'converters' package"

    # the installed command really converts (tiny folder, one format)
    src = tmp_path / "src" / "cls"
    src.mkdir(parents=True)
    shutil.copy(small_folder / "cat" / "cat_00.jpg", src / "a.jpg")  # a generated JPEG: no ../shared needed
    proc = _run([fastdata, "convert", tmp_path / "src", tmp_path / "out", "--format", "recordio", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "manifest.json").is_file()
    proc = _run([fastdata, "verify", tmp_path / "out"], cwd=tmp_path)  # the converters' sub-packages ship too
    assert proc.returncode == 0 and "OK, 1 records in 1 shard(s) read" in proc.stdout, proc.stdout + proc.stderr


def test_module_entry_point_matches_pyproject():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["scripts"]["fastdata"] == "fastdata.converters.cli:main"
    from fastdata.converters import cli

    assert callable(cli.main)
    assert sys.modules["fastdata.converters"].__file__.endswith(os.path.join("converters", "__init__.py"))
