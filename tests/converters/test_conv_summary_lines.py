"""What ``fastdata convert``'s summary says of a small folder: a run's length
with two significant figures (not "0.0 s"), and a re-encoded PNG counted as
re-encoded, not among the JPEGs rewritten losslessly."""

from __future__ import annotations

import io
import re

import pytest
from convkit import make_folder, run_cli
from PIL import Image

from fastdata.decode import native

needs_native = pytest.mark.skipif(not native.native_available(), reason="the compiled crop decoder is not built")


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (20, 12), (10, 200, 30)).save(out, format="PNG")
    return out.getvalue()


@needs_native
def test_a_re_encoded_png_is_not_counted_as_a_lossless_rewrite(tmp_path, capsys):
    make_folder(tmp_path / "src", {"a": 3, "b": 2})
    (tmp_path / "src" / "b" / "drawing.png").write_bytes(_png())
    code, out, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio",
                             "--workers", "1")
    assert code == 0, err
    assert "fastdata convert: 6 images" in out
    assert "normalised: 1 image(s) re-encoded as RGB JPEG" in out and "then given restart markers" in out
    assert "restart markers: 5 JPEG(s) rewritten losslessly (same pixels); 1 re-encoded (above)" in out
    assert "stored as they are" not in out  # 5 + 1 is every image


def test_a_short_run_gives_its_seconds_with_two_significant_figures(tmp_path, capsys):
    from fastdata.converters.conversion.report import _seconds

    assert [_seconds(s) for s in (0.0493, 0.0101, 0.5, 1.234, 9.96, 12.3)] == \
        ["0.049 s", "0.010 s", "0.50 s", "1.2 s", "10 s", "12 s"]
    make_folder(tmp_path / "src", {"a": 4})
    code, out, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "tfrecord",
                             "--passthrough")
    assert code == 0, err
    seconds = re.search(r"this run: 4 images in ([\d.e-]+) s \(([\d.]+) images/s", out)
    assert seconds, out
    assert float(seconds.group(1)) > 0  # never "0.0 s" beside a rate
    assert abs(4 / float(seconds.group(1)) / float(seconds.group(2)) - 1) < 0.06  # the rate is the seconds shown
