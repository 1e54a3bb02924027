"""Shared fixtures: where the third-party test data lives, and optional peers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (files written by MXNet, TF, Caffe, Pillow)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} not found: the third-party test data sits beside the checkout")
    return SHARED_DATA


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


requires_dali = pytest.mark.skipif(not has_module("nvidia.dali"), reason="NVIDIA DALI not installed (pip install 'fastdata[dali]')")
