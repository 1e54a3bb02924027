"""The package layers and the acyclic packages hold: ``lint-imports`` keeps
every contract in pyproject.toml's ``[tool.importlinter]`` (CONTRIBUTING.md, "Layers, checked").

Function-level imports count, so a cycle hidden behind a lazy import fails
here like one at the top of a module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# import-linter has no ``python -m`` entry; its console script is this function
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_every_import_contract_is_kept():
    pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e '.[test]')")
    # run from the checkout: lint-imports reads ./pyproject.toml and analyses ./fastdata
    proc = subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    if proc.returncode != 0:
        report = proc.stdout[proc.stdout.find("Contracts"):] + proc.stderr  # from the contracts on: no logo
        pytest.fail(f"lint-imports exited {proc.returncode}:\n{report}", pytrace=False)
