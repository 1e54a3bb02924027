"""setup.py's optional build: with the libjpeg headers the extension builds and
decodes; without them (simulated: a jpeglib.h that fails to compile comes
first on the include path) the build still succeeds, prints the one-line hint
and leaves no extension. Builds go to temp dirs, never into the checkout."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]


def build(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
    out = tmp_path / "lib"
    cmd = [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(out), "--build-temp", str(tmp_path / "tmp")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    return done, sorted(out.rglob("_cropdecode*"))


def compiler() -> bool:
    return bool(os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc"))


def test_build_without_headers_succeeds_with_a_hint(tmp_path):
    fake = tmp_path / "include"
    fake.mkdir()
    (fake / "jpeglib.h").write_text('#error "simulated: libjpeg headers missing"\n')
    done, built = build(tmp_path, CFLAGS=f"-I{fake}")
    assert done.returncode == 0, done.stderr[-2000:]
    hints = [line for line in done.stderr.splitlines() if line.startswith("fastdata: the compiled crop decoder was not built")]
    assert len(hints) == 1 and "apt-get install libjpeg-dev" in hints[0], done.stderr[-2000:]
    assert built == []


def test_build_can_be_skipped_on_purpose(tmp_path):
    done, built = build(tmp_path, FASTDATA_NO_NATIVE="1")
    assert done.returncode == 0 and "FASTDATA_NO_NATIVE is set" in done.stderr and built == []


@pytest.mark.skipif(not compiler(), reason="no C compiler")
def test_build_with_headers_gives_a_working_extension(tmp_path):
    done, built = build(tmp_path)
    if not built:
        pytest.skip(f"this machine cannot build it (libjpeg headers missing?): {done.stderr[-300:]}")
    spec = importlib.util.spec_from_file_location("_cropdecode", built[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 100, 50)).save(buf, "JPEG", quality=95)
    out = np.zeros((12, 16, 3), np.uint8)
    assert module.decode_resized(buf.getvalue(), out, 1, (0, 0, 24, 32), (0.0, 0.0, 24.0, 32.0), 1, False, 0) is None
    assert np.abs(out.astype(int) - (200, 100, 50)).max() <= 3
