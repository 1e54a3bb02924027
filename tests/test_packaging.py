"""The wheel holds every package and every format's spec.md, and no generic
top-level name: setuptools finds the packages itself, so a new folder (a new
format) needs no pyproject edit. Asked of setuptools' own discovery, as a build would."""

import fnmatch
import warnings
from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

from fastdata.formats import registry

ROOT = Path(__file__).resolve().parents[1]


def _distribution(monkeypatch) -> Distribution:
    monkeypatch.chdir(ROOT)  # discovery looks below the current directory, as a build does
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools' deprecation notices about other fields
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
        dist.set_defaults()
    return dist


def test_every_package_is_found_and_nothing_else_at_top_level(monkeypatch):
    dist = _distribution(monkeypatch)
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "fastdata").rglob("__init__.py")}
    found.add("fastdata.converters")
    assert found - set(dist.packages) == set(), "setuptools does not find these packages"
    assert {p.split(".")[0] for p in dist.packages} == {"fastdata"}, "the wheel would add a generic top-level name"
    assert dist.package_dir["fastdata.converters"] == "converters"
    assert {f"fastdata.formats.{name}" for name in registry.names()} <= set(dist.packages)


def test_every_formats_spec_md_ships(monkeypatch):
    patterns = _distribution(monkeypatch).package_data["fastdata"]
    for name in registry.names():
        spec_md = f"formats/{name}/spec.md"
        assert (ROOT / "fastdata" / spec_md).is_file(), f"{name} has no spec.md describing its bytes"
        assert any(fnmatch.fnmatch(spec_md, pattern) for pattern in patterns), f"{spec_md} is not package data"
