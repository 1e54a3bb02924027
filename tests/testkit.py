"""Helpers test modules import by name (``from testkit import ...``).

Not in conftest.py: several conftest modules exist (tests/, tests/remote/), and
a spawned DataLoader worker that re-imports a test module resolves a bare
``import conftest`` to whichever comes first on sys.path.
"""

from __future__ import annotations

import importlib.util

import pytest


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


requires_dali = pytest.mark.skipif(not has_module("nvidia.dali"), reason="NVIDIA DALI not installed (pip install 'fastdata[dali]')")
