"""Outside ``fastdata/formats/`` no module of the library or the command line
imports a format's package (``fastdata.formats.recordio`` and the like, however
spelled: absolute, relative, ``importlib``): the format registry is the only door."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fastdata.formats import registry

ROOT = Path(__file__).resolve().parents[2]
# source folder -> the package it is installed as
PACKAGES = {ROOT / "fastdata": "fastdata", ROOT / "converters": "fastdata.converters"}
FORMATS_DIR = ROOT / "fastdata" / "formats"
FORMAT_PACKAGES = tuple(sorted({package for package, *_ in registry._TABLE.values()}))


def _module_of(path: Path) -> str:
    for folder, package in PACKAGES.items():
        if path.is_relative_to(folder):
            parts = path.relative_to(folder).with_suffix("").parts
            return ".".join((package, *parts[:-1], *([] if parts[-1] == "__init__" else parts[-1:])))
    raise AssertionError(path)


def _is_format(name: str) -> bool:
    return any(name == package or name.startswith(package + ".") for package in FORMAT_PACKAGES)


def format_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """``line: name`` of each import of a format package in ``source``, the
    code of ``module`` (relative imports are resolved against it)."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1]) if node.level else ""
            target = ".".join(filter(None, [base, node.module]))
            names = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]  # importlib.import_module("fastdata.formats.x"), __import__(...)
        found += [f"{node.lineno}: {name}" for name in names if _is_format(name)]
    return found


def _modules() -> list[Path]:
    files = [p for folder in PACKAGES for p in sorted(folder.rglob("*.py"))]
    return [p for p in files if not p.is_relative_to(FORMATS_DIR)]


def test_no_module_outside_the_formats_imports_a_format_package():
    modules = _modules()
    assert len(modules) > 50 and FORMAT_PACKAGES  # the walk found the code
    offenders = {
        str(p.relative_to(ROOT)): hits
        for p in modules
        if (hits := format_imports(p.read_text(encoding="utf-8"), _module_of(p), p.name == "__init__.py"))
    }
    assert not offenders, f"ask fastdata.formats.registry instead: {offenders}"


@pytest.mark.parametrize(
    "source, module",
    [
        ("from fastdata.formats import recordio", "fastdata.bench.suite"),
        ("import fastdata.formats.lmdb.shards as s", "fastdata.converters.cli"),
        ("from ..formats import tfrecord", "fastdata.bench.suite"),
        ("from ..formats.recordio.lst import read_lst", "fastdata.datasets.open"),
        ("def f():\n    from .recordio import Reader", "fastdata.formats"),  # __init__ of fastdata.formats
        ("importlib.import_module('fastdata.formats.tfrecord')", "fastdata.dali.sources"),
    ],
)
def test_each_spelling_of_such_an_import_is_caught(source, module):
    assert format_imports(source, module, is_package=module == "fastdata.formats")


def test_the_registry_and_shared_modules_are_not_format_packages():
    assert not format_imports("from ..formats import registry, lst\nfrom ..formats.hooks import Detected", "fastdata.bench.suite")
