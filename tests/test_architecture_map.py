"""ARCHITECTURE.md names the file of each step of a sample's path: every path
it names exists, so the map cannot drift from the tree unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_path_the_map_names_exists():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`((?:fastdata|converters|tests|benchmarks)/[A-Za-z0-9_./<>-]+)`", text))
    assert len(named) >= 20
    missing = sorted(p for p in named if "<" not in p and not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"
