"""The wheel's package list must name every package in the tree (setuptools is given an explicit list)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "fastdata").rglob("__init__.py")}
    found |= {"fastdata.converters"} if (ROOT / "converters" / "__init__.py").exists() else set()
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - found == set(), "these listed packages do not exist"
    assert config["package-dir"] == {"fastdata.converters": "converters"}
