"""``fastdata convert --restart-markers``: stored JPEGs rewritten losslessly
with restart markers; what the transcode declines is stored as before; the
flag is an error naming the fix where the compiled crop decoder is missing."""

from __future__ import annotations

import io

import numpy as np
import pytest
from convkit import make_folder, read_back, rgb, run_cli
from fastdata.converters.conversion.normalize import EncodeOptions, prepare
from fastdata.decode import native
from PIL import Image

needs_native = pytest.mark.skipif(native.cropdecode is None, reason="compiled crop decoder not built")


def has_restart_interval(data: bytes) -> bool:
    i = 2
    while data[i + 1] != 0xDA:
        if data[i + 1] == 0xDD:
            return int.from_bytes(data[i + 4:i + 6], "big") > 0
        i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return False


def noisy_jpeg(seed: int, **save) -> bytes:
    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (60, 90, 3), dtype=np.uint8)).save(out, "JPEG", quality=90, **save)
    return out.getvalue()


@needs_native
def test_convert_writes_restart_marked_jpegs_with_the_same_pixels(tmp_path, capsys):
    src = tmp_path / "src"
    files = make_folder(src, {"a": 3, "b": 2})
    (src / "a" / "noisy.jpg").write_bytes(noisy_jpeg(1))
    (src / "b" / "progressive.jpg").write_bytes(noisy_jpeg(2, progressive=True))
    sources = {data: rgb(data) for data in [*files.values(), noisy_jpeg(1), noisy_jpeg(2, progressive=True)]}
    code, _, err = run_cli(capsys, "convert", src, tmp_path / "out", "--format", "tfrecord", "--workers", "1",
                           "--restart-markers", "-q")
    assert code == 0, err
    _, samples = read_back(tmp_path / "out")
    marked = [data for data, _ in samples if has_restart_interval(data)]
    assert len(samples) == 7 and len(marked) == 6  # every baseline JPEG; the progressive one as it was
    assert noisy_jpeg(2, progressive=True) in [data for data, _ in samples]
    stored = [rgb(data) for data, _ in samples]
    for want in sources.values():  # each source's pixels come back exactly, from one record
        assert sum(np.array_equal(got, want) for got in stored) >= 1


def test_restart_markers_off_stores_bytes_as_they_are():
    data = noisy_jpeg(3)
    assert prepare(data, "x.jpg", EncodeOptions()).data == data


@needs_native
def test_prepare_marks_reencoded_and_passthrough_jpegs_and_keeps_the_rest(edge_images):
    edge = edge_images
    opts = EncodeOptions(restart_markers=True)
    plain = noisy_jpeg(4)
    out = prepare(plain, "plain.jpg", opts)
    assert out.reasons == ("restart-markers",) and has_restart_interval(out.data)
    np.testing.assert_array_equal(rgb(out.data), rgb(plain))
    turned = (edge / "exif_orientation_jpeg" / "orientation_6.jpg").read_bytes()
    out = prepare(turned, "turned.jpg", opts)  # re-encoded upright, then marked
    assert out.reasons == ("exif-orientation", "restart-markers") and has_restart_interval(out.data)
    progressive = (edge / "progressive_jpeg" / "progressive.jpg").read_bytes()
    assert prepare(progressive, "p.jpg", opts).data == progressive


def test_flag_without_the_compiled_decoder_is_an_error_naming_the_fix(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(native, "cropdecode", None)
    monkeypatch.setattr(native, "_IMPORT_ERROR", "the install found no C compiler or no libjpeg headers")
    make_folder(tmp_path / "src", {"a": 2})
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "out", "--format", "tfrecord",
                           "--restart-markers", "-q")
    assert code == 2
    assert "--restart-markers needs the compiled crop decoder" in err and "apt-get install libjpeg-dev" in err
    assert not (tmp_path / "out" / "manifest.json").exists()
