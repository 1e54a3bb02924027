"""ruff and mypy keep fastdata/ and converters/ clean: both run with the
project's configuration (pyproject.toml's ``[tool.ruff]`` and ``[tool.mypy]``)
and must report nothing. CONTRIBUTING.md says how to run them by hand.

A rule is silenced on one line only, with its reason beside it
(``# noqa: BLE001 -- why``, ``# type: ignore[code]  # why``). The last two
tests prove each check can fail: a copy of a real module passes both, then an
unused import fails ruff and a type error fails mypy.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"
TREES = ["fastdata", "converters"]
PROBE = ROOT / "fastdata" / "errors.py"  # a real module with no relative imports: it type-checks on its own
# mypy's cache outlives the test session (a whole-tree check takes ~40 s cold, a few seconds warm);
# one per checkout, outside it
MYPY_CACHE = Path(tempfile.gettempdir()) / f"fastdata-mypy-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]}"


def _run(tool: str, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(tool) is None:
        pytest.fail(f"{tool} is not installed: pip install -e '.[test]' (the test extra has it)", pytrace=False)
    return subprocess.run([sys.executable, "-m", tool, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=280)


def _ruff(*paths: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return _run("ruff", "check", "--no-cache", "--config", CONFIG, *paths, cwd=cwd)


def _mypy(*paths: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # no paths: the files pyproject.toml lists (fastdata, converters)
    return _run("mypy", "--config-file", CONFIG, "--cache-dir", MYPY_CACHE, *paths, cwd=cwd)


# a reason after the codes: noqa's "CODE -- why" (or "- why"), type-ignore's "[code]  # why"
_NOQA = re.compile(r"#\s*noqa\b(?::\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?(?P<rest>.*)$")
_IGNORE = re.compile(r"#\s*type:\s*ignore\b(?:\[[^\]]*\])?(?P<rest>.*)$")


def _unexplained(line: str) -> bool:
    """Whether ``line`` silences ruff or mypy without saying why on the line."""
    noqa, ignore = _NOQA.search(line), _IGNORE.search(line)
    return bool(
        (noqa and not re.match(r"\s*-{1,2}\s*\S", noqa["rest"]))
        or (ignore and not re.match(r"\s*#\s*\S", ignore["rest"]))
    )


def _report(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}:\n{proc.stdout}{proc.stderr}"


def test_ruff_finds_nothing():
    proc = _ruff(*TREES)
    if proc.returncode != 0:
        pytest.fail(f"ruff check {' '.join(TREES)} -- fix these (or say why in a noqa): {_report(proc)}", pytrace=False)


def test_mypy_finds_nothing():
    proc = _mypy()
    if proc.returncode != 0 or "Success: no issues found" not in proc.stdout:
        pytest.fail(f"mypy over {', '.join(TREES)} -- fix these (or say why in the ignore): {_report(proc)}", pytrace=False)


def test_every_silenced_rule_says_why():
    bare = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for tree in TREES
        for path in sorted((ROOT / tree).rglob("*.py*"))
        if path.suffix in (".py", ".pyi")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _unexplained(line)
    ]
    assert not bare, "say why on the line (# noqa: CODE -- why, # type: ignore[code]  # why):\n" + "\n".join(bare)


@pytest.mark.parametrize(("line", "bare"), [
    ("import x  # noqa: F401", True),
    ("import x  # noqa: F401 -- re-exported", False),
    ("except Exception:  # noqa: BLE001 - any failure is the answer", False),
    ("x = f()  # type: ignore[misc]", True),
    ("x = f()  # type: ignore[misc]  # Pillow types one band only", False),
    ("x = f()  # type: ignore", True),
    ("x = f()  # a plain comment", False),
])
def test_a_silenced_rule_without_reason_is_found(line: str, bare: bool):
    assert _unexplained(line) is bare


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """A package holding a copy of a real module, which both checks pass as it is."""
    package = tmp_path / "lint_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copyfile(PROBE, package / "module.py")
    for proc in (_ruff(package, cwd=tmp_path), _mypy(package, cwd=tmp_path)):
        assert proc.returncode == 0, f"the unchanged copy of {PROBE.name} should pass: {_report(proc)}"
    return package / "module.py"


def test_an_unused_import_fails_ruff(probe: Path):
    text = probe.read_text()
    probe.write_text(text.replace("import re\n", "import re\nimport json\n", 1))
    proc = _ruff(probe.parent, cwd=probe.parent.parent)
    assert proc.returncode == 1, _report(proc)
    assert "F401" in proc.stdout and "json" in proc.stdout, _report(proc)


def test_a_type_error_fails_mypy(probe: Path):
    with probe.open("a") as f:
        f.write('\n\ndef _count() -> int:\n    return "three"\n')
    proc = _mypy(probe.parent, cwd=probe.parent.parent)
    assert proc.returncode == 1, _report(proc)
    assert "[return-value]" in proc.stdout and "module.py" in proc.stdout, _report(proc)
