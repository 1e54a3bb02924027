"""Restart markers by default, ``--passthrough``, the fallback without the compiled
decoder, what the manifest records, ``--resume`` refusing the other kind, and the summary."""

from __future__ import annotations

import pytest
from convkit import make_folder, manifest_json, read_back, rgb, run_cli

from fastdata.decode import native

needs_native = pytest.mark.skipif(not native.native_available(), reason="the compiled crop decoder is not built")


def _has_dri(data: bytes) -> bool:
    return b"\xff\xdd" in data[: data.find(b"\xff\xda")]


@needs_native
def test_default_writes_restart_markers_and_the_manifest_says_so(tmp_path, capsys):
    files = make_folder(tmp_path / "src", {"a": 3, "b": 2})
    code, out, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio", "--workers", "1")
    assert code == 0, err
    _, samples = read_back(tmp_path / "o")
    assert samples and all(_has_dri(data) for data, _ in samples)
    originals = sorted(rgb(d).tobytes() for d in files.values())
    assert sorted(rgb(d).tobytes() for d, _ in samples) == originals  # lossless: the same pixels
    assert manifest_json(tmp_path / "o")["extra"]["converter"]["options"]["restart_markers"] is True
    assert "re-encoded" not in out and "restart markers: 5 JPEG(s) rewritten losslessly" in out


def test_passthrough_stores_the_files_byte_for_byte(tmp_path, capsys):
    files = make_folder(tmp_path / "src", {"a": 3, "b": 2})
    code, out, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "tfrecord", "--passthrough")
    assert code == 0, err
    assert sorted(d for d, _ in read_back(tmp_path / "o")[1]) == sorted(files.values())
    assert manifest_json(tmp_path / "o")["extra"]["converter"]["options"]["restart_markers"] is False
    assert "every image stored byte for byte" in out and "restart markers" not in out


def test_without_the_compiled_decoder_the_default_passes_through_with_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(native, "cropdecode", None)
    monkeypatch.setattr(native, "_IMPORT_ERROR", "the install found no C compiler or no libjpeg headers")
    files = make_folder(tmp_path / "src", {"a": 2})
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "lmdb")
    assert code == 0, err
    assert err.count("\n") == 1 and "note: JPEGs are stored byte for byte" in err and "no C compiler" in err
    assert sorted(d for d, _ in read_back(tmp_path / "o")[1]) == sorted(files.values())


@needs_native
@pytest.mark.parametrize("first, then", [([], ["--passthrough"]), (["--passthrough"], []), (["--passthrough"], ["--restart-markers"])])
def test_resume_refuses_the_other_kind_of_jpeg_storage(tmp_path, capsys, first, then):
    make_folder(tmp_path / "src", {"a": 4})
    out = tmp_path / "o"
    args = ["convert", tmp_path / "src", out, "--format", "recordio", "--shards", "2", "-q"]
    # a plan with no finished shard: as if interrupted before the first shard ended
    assert run_cli(capsys, *args, *first, "--num-nodes", "2", "--node-rank", "1")[0] == 0
    code, _, err = run_cli(capsys, *args, *then, "--resume")
    assert code == 2
    wanted = "--passthrough" if first else "--restart-markers"
    assert f"pass {wanted} to resume" in err
    assert run_cli(capsys, *args, *first, "--resume")[0] == 0


def test_summary_counts_agree_when_files_are_skipped(tmp_path, capsys):
    make_folder(tmp_path / "src", {"a": 4})
    (tmp_path / "src" / "a" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    code, out, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio",
                             "--allow-skips", "--passthrough")
    assert code == 0, err
    assert "fastdata convert: 4 images" in out and "this run: 4 images" in out and "skipped: 1 file(s)" in out
