"""Shared fixtures: where the third-party test data lives, and optional peers."""

from __future__ import annotations

from collections.abc import Iterator
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




# Every transforms test runs on both crop-decode paths: the compiled crop
# decoder (skipped where it is not built) and the pure-Python one. Declared
# here, not in a tests/transforms/conftest.py: a second conftest module makes
# `from testkit import ...` in spawned DataLoader workers find the wrong one.
TRANSFORMS_TESTS = ROOT / "tests" / "transforms"


# Every RecordIO test in tests/formats, and the conformance kit, runs on both
# write paths: the compiled helpers (fastdata.formats._speedups, skipped where
# not built) and the portable one. Processes the test starts inherit nothing.
WRITE_PATH_TESTS = ROOT / "tests" / "formats"


def _write_path_test(path: Path) -> bool:
    return path.parent == WRITE_PATH_TESTS and ("recordio" in path.name or path.name == "test_conformance.py")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "crop_decoder" in metafunc.fixturenames and TRANSFORMS_TESTS in Path(metafunc.definition.path).parents:
        metafunc.parametrize("crop_decoder", ["compiled", "python"], indirect=True)
    if "write_path" in metafunc.fixturenames and _write_path_test(Path(metafunc.definition.path)):
        metafunc.parametrize("write_path", ["compiled", "portable"], indirect=True)


@pytest.fixture(autouse=True)
def write_path(request: pytest.FixtureRequest) -> Iterator[str | None]:
    mode = getattr(request, "param", None)
    if mode is None:  # elsewhere: the default path, untouched
        yield None
        return
    from fastdata.formats import speedups

    if mode == "compiled" and not speedups.available():
        pytest.skip(f"compiled write helpers not built: {speedups.status()}")
    with speedups.using(mode == "compiled"):
        yield mode


@pytest.fixture(autouse=True)
def crop_decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    mode = getattr(request, "param", None)
    if mode is None:  # outside tests/transforms: the default path, untouched
        return None
    from fastdata.decode import native

    if mode == "compiled" and not native.native_available():
        pytest.skip(f"compiled crop decoder not built: {native.native_status()}")
    monkeypatch.setattr(native, "_disabled", mode == "python")
    return mode
