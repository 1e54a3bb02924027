"""CI's reduced form of the compiled crop decoder's fuzz run (tests/native/fuzz.py):
300 mutated JPEGs under AddressSanitizer/LeakSanitizer/UBSan, SIMD and plain C
kernels agreeing. Skipped where gcc, the sanitizer runtimes or the libjpeg
headers are missing. The full run: python tests/native/fuzz.py --iterations 10000."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "native" / "fuzz.py"


def load_fuzz():
    spec = importlib.util.spec_from_file_location("fastdata_native_fuzz", FUZZ)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_300_mutations_under_asan(tmp_path):
    fuzz = load_fuzz()
    try:
        lines = fuzz.run(300, seed=12, workdir=tmp_path)
    except fuzz.Unavailable as exc:
        pytest.skip(str(exc))
    counts = dict(zip(*[iter(lines["simd"].split())] * 2))
    assert int(counts["iterations"]) == 300
    # The mutations reach both the decoded and the rejected paths.
    assert int(counts["ok"]) > 20 and int(counts["error"]) > 20, lines
    # ... and the restart-segment decoder and the restart-marker transcode,
    # by both of its paths (cutting the data into segments, libjpeg's re-encode).
    assert int(counts["segmented"]) > 5 and int(counts["transcoded"]) > 3, lines
    assert 3 < int(counts["resegmented"]) < int(counts["transcoded"]), lines
