"""The slow path never passes unnoticed: native_status() names a source tree
that shadows an installed, built fastdata (and the fix), and the first
decode-aware sample on the pure path logs one line per process tree.

The subprocesses run with ``python -S`` over site-packages, so that an
editable install's import hook cannot hand them the checkout's extension."""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fastdata.decode import EncodedImage, build_status, native
from fastdata.transforms import RandomResizedCrop

ROOT = Path(__file__).resolve().parents[2]
HINT_LINE = "fastdata: decode-aware transforms decode in pure Python"


def _package(dest: Path, *, built: bool) -> Path:
    """A copy of the fastdata package under ``dest``, with or without the extension."""
    shutil.copytree(ROOT / "fastdata", dest / "fastdata", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    if built:
        for suffix in build_status.EXTENSION_SUFFIXES:  # whatever this Python loads
            (dest / "fastdata" / "decode" / f"_cropdecode{suffix}").write_bytes(b"")
    return dest


def _checkout(dest: Path) -> Path:
    _package(dest, built=False)
    shutil.copy(ROOT / "setup.py", dest / "setup.py")
    return dest


def _python(code: str, cwd: Path, *extra_path: Path) -> subprocess.CompletedProcess:
    deps = [p for p in sys.path if p.endswith("site-packages")]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", build_status.NOTED_ENV, "FASTDATA_NATIVE")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, extra_path), *deps])
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


STATUS = "import fastdata.decode as d; print(d.native_status())"


def test_a_checkout_shadowing_a_built_install_is_named_with_the_fix(tmp_path):
    checkout, site = _checkout(tmp_path / "checkout"), _package(tmp_path / "site", built=True)
    done = _python(STATUS, checkout, site)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("pure Python") and f"source checkout {checkout}" in out
    assert f"shadows the installed fastdata in {site}" in out and "run from another directory" in out
    assert "pip install -e ." in out and "no C compiler" not in out


def test_a_checkout_without_the_build_says_to_build_it_in_place(tmp_path):
    checkout = _checkout(tmp_path / "checkout")
    out = _python(STATUS, checkout).stdout
    assert f"source checkout {checkout}, where it is not built" in out and "pip install -e ." in out


def test_an_install_without_the_build_keeps_the_headers_hint(tmp_path):
    site = _package(tmp_path / "site", built=False)
    out = _python(STATUS, tmp_path, site).stdout
    assert "the install found no C compiler or no libjpeg headers" in out and "apt-get install libjpeg-dev" in out


TRAIN = """
import io, sys
from pathlib import Path
from PIL import Image
from fastdata import make_loader, transforms
from fastdata.datasets import ImageFolder
root = Path(sys.argv[1])
for c in ("a", "b"):
    (root / c).mkdir(parents=True)
    for i in range(4):
        Image.new("RGB", (40, 30), (60 * i, 90, 20)).save(root / c / f"{i}.jpg", quality=90)
ds = ImageFolder(root, transform=transforms.Compose([transforms.RandomResizedCrop(16), transforms.RandomHorizontalFlip()]))
workers = int(sys.argv[2])
for epoch in range(2):
    with make_loader(ds, 2, workers=workers) as loader:
        for x, y in loader:
            pass
print(repr(loader))
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_the_first_training_batch_on_the_pure_path_prints_the_hint_once(tmp_path, workers):
    site = _package(tmp_path / "site", built=False)  # as `CC=/bin/false pip install .` leaves it
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    done = subprocess.run(
        [sys.executable, "-S", str(script), str(tmp_path / "images"), str(workers)], cwd=tmp_path,
        env={**{k: v for k, v in os.environ.items() if k != build_status.NOTED_ENV},
             "PYTHONPATH": os.pathsep.join([str(site), *(p for p in sys.path if p.endswith("site-packages"))])},
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if HINT_LINE in line]
    assert len(lines) == 1, done.stderr[-3000:]
    assert "no C compiler or no libjpeg headers" in lines[0] and "apt-get install libjpeg-dev" in lines[0]


def _jpeg() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((24, 32, 3), 120, np.uint8)).save(buf, "JPEG")
    return buf.getvalue()


def test_the_hint_is_logged_once_per_process_and_not_when_chosen(monkeypatch, caplog):
    monkeypatch.setattr(build_status, "_noted", False)
    monkeypatch.delenv(build_status.NOTED_ENV, raising=False)
    crop = RandomResizedCrop(8)
    monkeypatch.setattr(native, "_disabled", True)  # FASTDATA_NATIVE=0: a choice, not a problem
    with caplog.at_level(logging.WARNING, logger="fastdata.decode"):
        crop(EncodedImage(_jpeg(), "a.jpg"))
    assert not [r for r in caplog.records if HINT_LINE in r.getMessage()]
    monkeypatch.setattr(native, "cropdecode", None)
    monkeypatch.setattr(native, "_IMPORT_ERROR", "the install found no C compiler or no libjpeg headers")
    with caplog.at_level(logging.WARNING, logger="fastdata.decode"):
        for _ in range(3):
            crop(EncodedImage(_jpeg(), "a.jpg"))
        crop(np.zeros((20, 20, 3), np.uint8))
    hints = [r.getMessage() for r in caplog.records if HINT_LINE in r.getMessage()]
    assert len(hints) == 1 and "\n" not in hints[0] and os.environ[build_status.NOTED_ENV] == "1"


def test_unit_diagnosis_of_a_file_built_for_another_python(tmp_path):
    checkout = _checkout(tmp_path / "checkout")
    decode = checkout / "fastdata" / "decode"
    (decode / "_cropdecode.cpython-39-x86_64-linux-gnu.so").write_bytes(b"")
    cause, fix = build_status.import_failure(ModuleNotFoundError("x"), decode, path=[])
    assert "built for another Python (_cropdecode.cpython-39-x86_64-linux-gnu.so)" in cause and "pip install -e ." in fix
    cause, fix = build_status.import_failure(ImportError("libjpeg.so.62: cannot open"), decode, path=[])
    assert cause == "it does not load: libjpeg.so.62: cannot open" and "reinstall fastdata" in fix


def test_an_install_in_site_packages_is_not_called_shadowed_by_a_later_built_copy(tmp_path):
    # a venv's own (unbuilt) install, with a built fastdata further down sys.path (e.g. the system's)
    site, other = _package(tmp_path / "site", built=False), _package(tmp_path / "other", built=True)
    decode = site / "fastdata" / "decode"
    cause, fix = build_status.import_failure(ModuleNotFoundError("x"), decode, path=[str(tmp_path), str(site), str(other)])
    assert cause == "the install found no C compiler or no libjpeg headers" and "apt-get install" in fix
    # the same copy first on sys.path because Python was started there (the script's directory): shadowing
    cause, fix = build_status.import_failure(ModuleNotFoundError("x"), decode, path=[str(site), str(other)])
    assert f"shadows the installed fastdata in {other}" in cause and fix == "run from another directory"


def test_an_editable_install_whose_build_failed_says_to_install_the_headers_then_reinstall(tmp_path):
    checkout, site = _checkout(tmp_path / "checkout"), tmp_path / "site"
    info = site / "fastdata-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fastdata\nVersion: 0.1.0\n")
    (info / "direct_url.json").write_text(f'{{"dir_info": {{"editable": true}}, "url": "{checkout.as_uri()}"}}')
    cause, fix = build_status.import_failure(ModuleNotFoundError("x"), checkout / "fastdata" / "decode", path=[str(site)])
    assert cause.endswith("installed editable, whose build did not make it (pip hides why: pip install -v -e . shows it)")
    assert fix.startswith("install the libjpeg headers") and fix.endswith("then pip install -e . again")
