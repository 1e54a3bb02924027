"""Bad input: every case gives a message naming the file and the reason, the documented
exit code (1 = files skipped, 2 = error), and no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from convkit import jpeg, make_folder, read_back, run_cli, tree
from fastdata.converters.conversion import work

from fastdata.formats import tfrecord


def test_missing_and_empty_sources(tmp_path, capsys):
    code, _, err = run_cli(capsys, "convert", tmp_path / "nope", tmp_path / "o", "--format", "lmdb")
    assert code == 2 and "fastdata: error:" in err and "nope: source folder does not exist" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "convert", tmp_path / "empty", tmp_path / "o", "--format", "lmdb")
    assert code == 2 and "no class folders" in err
    assert not (tmp_path / "o").exists()


def test_class_folder_without_images(tmp_path, capsys):
    make_folder(tmp_path / "src", {"cat": 2})
    (tmp_path / "src" / "dog").mkdir()
    (tmp_path / "src" / "dog" / "notes.txt").write_text("no images here")
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio")
    assert code == 2 and "no images" in err and "dog" in err and "--allow-empty-classes" in err
    code, _, _ = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio", "--allow-empty-classes", "-q")
    assert code == 0 and read_back(tmp_path / "o")[0].classes == ["cat", "dog"]


@pytest.fixture
def bad_folder(tmp_path, corrupt_images):
    """A folder with one good image per class and every kind of bad file."""
    src = tmp_path / "src"
    make_folder(src, {"good": 3, "bad": 1})
    shutil.copy(corrupt_images / "truncated_jpeg.jpg", src / "bad" / "truncated_jpeg.jpg")
    shutil.copy(corrupt_images / "broken.png", src / "bad" / "broken.png")
    (src / "bad" / "zero.jpg").write_bytes(b"")
    (src / "bad" / "text.jpg").write_text("I am not a JPEG\n")
    os.symlink(tmp_path / "does-not-exist.jpg", src / "bad" / "dangling.jpg")
    return src


EXPECTED_REASONS = {
    "truncated_jpeg.jpg": "truncated",
    "broken.png": "not an image",
    "zero.jpg": "empty file (0 bytes)",
    "text.jpg": "not an image",
    "dangling.jpg": "broken symlink",
}


def test_skipped_files_are_listed_and_fail_the_run(bad_folder, tmp_path, capsys):
    out_dir = tmp_path / "o"
    code, out, err = run_cli(capsys, "convert", bad_folder, out_dir, "--format", "tfrecord", "--workers", "2")
    assert code == 1
    assert "skipped: 5 file(s)" in out
    for name, reason in EXPECTED_REASONS.items():
        line = next(line for line in err.splitlines() if name in line)
        assert reason in line, line
    assert "--allow-skips" in err
    assert not (out_dir / "manifest.json").exists()  # nothing looks finished
    # accepting the skips finishes the same conversion without redoing it
    code, _, err = run_cli(capsys, "convert", bad_folder, out_dir, "--format", "tfrecord", "--resume", "--allow-skips", "-q")
    assert code == 0
    m, samples = read_back(out_dir)
    assert len(samples) == 4 and m.extra["converter"]["skipped"] == 5
    assert "truncated_jpeg.jpg" in err  # still reported


def test_on_error_raise_stops_at_the_first_bad_file(bad_folder, tmp_path, capsys):
    (bad_folder / "bad" / "zero.jpg").unlink()
    (bad_folder / "bad" / "dangling.jpg").unlink()
    code, _, err = run_cli(capsys, "convert", bad_folder, tmp_path / "o", "--format", "recordio", "--on-error", "raise", "--no-shuffle")
    assert code == 2 and err.startswith("fastdata: error: ")
    assert "broken.png: not an image" in err
    assert not list((tmp_path / "o").glob("*.partial"))
    code, _, err = run_cli(capsys, "convert", bad_folder, tmp_path / "o2", "--format", "recordio", "--on-error", "raise")
    assert code == 2


def test_unreadable_file(tmp_path, capsys, monkeypatch):
    # Tests run as root, where chmod 000 does not stop reads: make opening it fail instead.
    files = make_folder(tmp_path / "src", {"a": 3})
    victim = str(tmp_path / "src" / "a" / "img_001.jpg")
    real_open = os.open

    def fake_open(path, *args, **kwargs):
        if str(path) == victim:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(work.os, "open", fake_open)
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "lmdb", "--workers", "1")
    assert code == 1 and f"{victim}: cannot read: Permission denied" in err
    assert len(files) == 3


def test_unicode_space_and_symlinked_names(tmp_path, capsys):
    src = tmp_path / "src"
    (src / "café au lait").mkdir(parents=True)
    (src / "café au lait" / "naïve photo ü.jpg").write_bytes(jpeg(1))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "target.jpg").write_bytes(jpeg(2))
    (src / "日本").mkdir()
    os.symlink(tmp_path / "elsewhere" / "target.jpg", src / "日本" / "link name.jpg")
    code, _, err = run_cli(capsys, "convert", src, tmp_path / "o", "--passthrough", "--format", "tfrecord", "--no-shuffle")
    assert code == 0, err
    m, samples = read_back(tmp_path / "o")
    assert m.classes == ["café au lait", "日本"]
    assert [d for d, _ in samples] == [jpeg(1), jpeg(2)]
    names = [tfrecord.parse_example(r)["image/filename"][0].decode() for r in tfrecord.Reader(tmp_path / "o" / m.shards[0].file)]
    assert names == ["café au lait/naïve photo ü.jpg", "日本/link name.jpg"]


def test_output_directory_rules(tmp_path, capsys):
    make_folder(tmp_path / "src", {"a": 2})
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "src" / "out", "--format", "lmdb")
    assert code == 2 and "inside the source folder" in err
    assert not (tmp_path / "src" / "out").exists()
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path, "--format", "lmdb")
    assert code == 2 and "contains the source folder" in err
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "thesis.tex").write_text("precious")
    for extra in ([], ["--overwrite"]):
        code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "foreign", "--format", "lmdb", *extra)
        assert code == 2 and "not written by fastdata" in err
    assert (tmp_path / "foreign" / "thesis.tex").read_text() == "precious"
    out_dir = tmp_path / "o"
    assert run_cli(capsys, "convert", tmp_path / "src", out_dir, "--format", "lmdb", "-q")[0] == 0
    before = tree(out_dir)
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", out_dir, "--format", "lmdb")
    assert code == 2 and "already holds a finished dataset" in err and "--overwrite" in err
    assert run_cli(capsys, "convert", tmp_path / "src", out_dir, "--format", "lmdb", "--overwrite", "-q")[0] == 0
    assert tree(out_dir) == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["--shard-size", "12X"], "cannot read '12X' as a size"),
        (["--shards", "0"], "--shards must be at least 1"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--quality", "0"], "--quality must be in 1..100"),
        (["--val-fraction", "1.5"], "--val-fraction must be in [0, 1)"),
        (["--node-rank", "2", "--num-nodes", "2"], "--node-rank must be in [0, 2)"),
        (["--shards", "2", "--shard-size", "1M"], "pass one of them"),
        (["--resume", "--overwrite"], "pass one of them"),
    ],
)
def test_bad_options(tmp_path, capsys, args, message):
    make_folder(tmp_path / "src", {"a": 1})
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio", *args)
    assert code == 2 and message in err, err


def test_bad_environment_rank(tmp_path, capsys, monkeypatch):
    make_folder(tmp_path / "src", {"a": 1})
    monkeypatch.setenv("WORLD_SIZE", "two")
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "o", "--format", "recordio")
    assert code == 2 and "WORLD_SIZE='two' is not an integer" in err


def test_as_a_real_process_no_traceback(tmp_path):
    # the console script path: argv parsing, error printing and the exit status of the process itself
    proc = subprocess.run(
        [sys.executable, "-m", "fastdata.converters.cli", "convert", str(tmp_path / "missing"), str(tmp_path / "o"), "--format", "lmdb"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"fastdata: error: {tmp_path / 'missing'}: source folder does not exist"
    assert proc.stdout == ""


def test_bench_slot(capsys, monkeypatch):
    import fastdata.bench

    # as if the module did not exist: also off the package, where an earlier import (another test) left it
    monkeypatch.delattr(fastdata.bench, "cli", raising=False)
    monkeypatch.setitem(sys.modules, "fastdata.bench.cli", None)
    code, _, err = run_cli(capsys, "bench", "--help")
    assert code == 2 and "fastdata bench" in err and "not available" in err
    seen = []
    fake = type(sys)("fastdata.bench.cli")
    fake.main = lambda argv, convert: seen.append((argv, convert.__name__)) or 0
    monkeypatch.setitem(sys.modules, "fastdata.bench.cli", fake)
    assert run_cli(capsys, "bench", "--rounds", "3", "x")[0] == 0
    assert seen == [(["--rounds", "3", "x"], "bench_convert")]  # the CLI injects the converter
