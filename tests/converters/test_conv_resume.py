"""Crash safety: kill -9 mid-run then --resume gives the uninterrupted bytes; several nodes share one OUT."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from convkit import jpeg, make_folder, run_cli, tree
from fastdata.converters.conversion.work import TEST_DELAY_VARIABLE
from fastdata.converters.output import state as conv_state
from fastdata.converters.output.state import STATE_DIR
from fastdata.converters.planning.layout import Plan, PlanOptions, make_plan
from fastdata.converters.planning.scan import ScanResult, SourceItem
from fastdata.formats import registry

FORMATS = registry.names()


def _convert_args(src, out, fmt):
    return ["convert", str(src), str(out), "--format", fmt, "--shards", "8", "--val-fraction", "0.15", "-q"]


def _tagged_env(tag: str, *, delay: float = 0.0) -> dict[str, str]:
    # Every process the converter starts (forkserver, workers) inherits these variables;
    # ``delay``: seconds each image takes (the converter's test hook, work.TEST_DELAY_VARIABLE).
    env = {**os.environ, "FASTDATA_TEST_TAG": tag}
    if delay:
        env[TEST_DELAY_VARIABLE] = str(delay)
    return env


def _processes_tagged(tag: str) -> list[int]:
    """Live processes whose environment carries ``FASTDATA_TEST_TAG=tag``."""
    needle = f"FASTDATA_TEST_TAG={tag}".encode() + b"\0"
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes() + b"\0"
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if needle in environ and state != "Z":
                found.append(int(pid))
    return found


def _wait_gone(tag: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := _processes_tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and SIGKILL")
@pytest.mark.parametrize("fmt", FORMATS)
def test_sigkill_then_resume_is_byte_identical(edge_images, tmp_path, capsys, fmt):
    src = edge_images
    out = tmp_path / f"killed-{fmt}"
    cmd = [sys.executable, "-m", "fastdata.converters.cli", *_convert_args(src, out, fmt), "--workers", "2",
           "--test-min-piece", "1"]  # the last shards are cut into pieces: the kill may land in one
    tag = f"kill-{fmt}-{os.getpid()}-{time.monotonic_ns()}"
    # each image slowed (work.TEST_DELAY_VARIABLE) so that the kill lands mid-run
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_tagged_env(tag, delay=0.06))
    deadline = time.monotonic() + 60
    state = out / STATE_DIR
    while not (state.is_dir() and len(list(state.glob("*.json"))) >= 3):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the conversion never got going"
        time.sleep(0.01)
    assert len(_processes_tagged(tag)) >= 3  # converter, forkserver, workers: the check below can see them
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    assert _wait_gone(tag) == []  # the forkserver and the workers died with the converter
    assert not list(out.rglob("manifest.json"))
    done = len(list(state.glob("*.json")))
    assert 3 <= done < 16
    # leftovers of a crash: a stale partial of a shard not yet finished, a torn record
    (out / "train").mkdir(exist_ok=True)
    suffix = {"recordio": ".rec", "tfrecord": ".tfrecord", "lmdb": ".lmdb"}[fmt]
    (out / "train" / f"shard-00007{suffix}.partial").write_bytes(b"garbage from a crash")
    piece = out / STATE_DIR / "pieces" / "train-00007" / "1" / f"shard-00007{suffix}"
    piece.parent.mkdir(parents=True, exist_ok=True)
    piece.write_bytes(b"a piece a killed worker left")

    code, _, err = run_cli(capsys, *_convert_args(src, out, fmt))
    assert code == 2 and "--resume" in err  # an unfinished OUT is not silently restarted
    code, _, err = run_cli(capsys, *_convert_args(src, out, fmt), "--resume", "--workers", "1")
    assert code == 0, err
    reference = tmp_path / "reference"
    assert run_cli(capsys, *_convert_args(src, reference, fmt), "--workers", "1")[0] == 0
    assert tree(out) == tree(reference)
    assert not any(".partial" in name or name.startswith(".fastdata") for name in tree(out))


def test_resume_refuses_other_settings(small_folder, tmp_path, capsys):
    src = small_folder
    out = tmp_path / "o"
    args = ["convert", src, out, "--format", "recordio", "--shards", "3", "-q"]
    code, _, _ = run_cli(capsys, *args, "--num-nodes", "2", "--node-rank", "0")
    assert code == 0 and not (out / "manifest.json").exists()
    code, _, err = run_cli(capsys, *args[:-2], "4", "-q", "--resume")
    assert code == 2 and "shards: saved 3, now 4" in err
    code, _, err = run_cli(capsys, "convert", src, out, "--format", "lmdb", "--shards", "3", "--resume")
    assert code == 2 and "format: saved 'recordio', now 'lmdb'" in err
    assert run_cli(capsys, *args, "--resume")[0] == 0
    assert (out / "manifest.json").exists()
    code, _, err = run_cli(capsys, *args, "--resume")
    assert code == 2 and "nothing to resume" in err


def test_resume_says_which_source_changes_it_ignores(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "o"
    make_folder(src, {"a": 4, "b": 4})
    args = ["convert", src, out, "--format", "recordio", "--shards", "4", "-q"]
    assert run_cli(capsys, *args, "--num-nodes", "2", "--node-rank", "0")[0] == 0  # shards 0 and 2 written
    (src / "a" / "new_1.jpg").write_bytes(jpeg(100))
    (src / "b" / "new_2.png").write_bytes(jpeg(101))
    written = Plan.load(out).shards[0].items[0].path  # already in a finished shard: its removal changes nothing
    os.remove(written)
    code, _, err = run_cli(capsys, *args, "--resume")
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1, err
    assert "2 new and 1 removed image file(s)" in warning[0] and "--overwrite" in warning[0]
    assert json.loads((out / "manifest.json").read_text())["num_samples"] == 8
    # a fresh conversion picks the changes up
    assert run_cli(capsys, *args, "--overwrite")[0] == 0
    assert json.loads((out / "manifest.json").read_text())["num_samples"] == 9


def test_nodes_share_one_output(edge_images, tmp_path, capsys, monkeypatch):
    src = edge_images
    reference, out = tmp_path / "ref", tmp_path / "nodes"
    assert run_cli(capsys, "convert", src, reference, "--format", "tfrecord", "--shards", "5", "-q")[0] == 0
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")  # the defaults come from the environment torchrun sets
    code, stdout, _ = run_cli(capsys, "convert", src, out, "--format", "tfrecord", "--shards", "5")
    assert code == 0 and "node 1 of 2" in stdout and "fastdata merge" in stdout
    assert not (out / "manifest.json").exists()
    code, _, err = run_cli(capsys, "merge", out)
    assert code == 2 and "3 of 5 shards are not finished" in err  # node 0 has shards 0, 2, 4
    monkeypatch.setenv("RANK", "0")
    (out / ".fastdata-finalize.lock").write_text("another node\n")  # as if node 1 were finalizing right now
    code, stdout, _ = run_cli(capsys, "convert", src, out, "--format", "tfrecord", "--shards", "5")
    assert code == 0 and "another node is writing the manifest" in stdout
    assert not (out / "manifest.json").exists()
    code, stdout, _ = run_cli(capsys, "merge", out)  # e.g. after that node was killed
    assert code == 0 and "25 images" in stdout
    assert tree(out) == tree(reference)
    code, stdout, err = run_cli(capsys, "merge", out)
    assert code == 0 and err == "" and "already finished" in stdout


def test_merge_after_the_last_node_wrote_the_manifest(edge_images, tmp_path, capsys):
    """The README's recipe: every node converts, then `fastdata merge OUT` (a no-op here) succeeds."""
    src, out = edge_images, tmp_path / "nodes"
    for rank in ("0", "1"):
        args = ["convert", src, out, "--format", "recordio", "--shards", "4", "--val-fraction", "0.2"]
        assert run_cli(capsys, *args, "--num-nodes", "2", "--node-rank", rank, "-q")[0] == 0
    assert (out / "train" / "manifest.json").exists()  # node 1 finished last and wrote it
    code, stdout, err = run_cli(capsys, "merge", out)
    assert code == 0, err
    assert stdout.count("\n") == 1 and f"{out}: already finished" in stdout and "25 images" in stdout
    counts = [json.loads((out / split / "manifest.json").read_text())["num_samples"] for split in ("train", "val")]
    assert f"splits train {counts[0]}, val {counts[1]}" in stdout
    assert run_cli(capsys, "merge", out, "-q") == (0, "", "")


@contextlib.contextmanager
def _sigint_not_ignored():
    """Processes started in the body do not inherit an ignored SIGINT. A suite run in the
    background of a script (``python -m pytest &``, nohup) has SIGINT ignored, exec keeps it
    ignored, and the converter rightly keeps ignoring it: it finished and exited 0 (a fresh
    clone's run, twice). A handler set here is reset to the default by exec instead."""
    previous = signal.getsignal(signal.SIGINT)
    if previous != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and signals")
def test_ctrl_c_stops_cleanly_and_resume_finishes(small_folder, tmp_path, capsys):
    src = small_folder
    out = tmp_path / "interrupted"
    args = ["convert", str(src), str(out), "--format", "recordio", "--shards", "13", "-q"]
    tag = f"sigint-{os.getpid()}-{time.monotonic_ns()}"
    with _sigint_not_ignored():
        proc = subprocess.Popen(
            [sys.executable, "-m", "fastdata.converters.cli", *args, "--workers", "2"],
            # 1 s an image: the run lasts about 7 s unless interrupted, so a test process held off
            # the CPU between seeing the state folder and signalling still interrupts it (at 0.25 s
            # an image, a 3 s hold there signalled a finished run: exit 0); the test takes 6 s
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_tagged_env(tag, delay=1.0),
        )
    deadline = time.monotonic() + 60
    while not (out / STATE_DIR).is_dir():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    assert _wait_gone(tag) == []
    assert not list(out.glob("*.partial")) and not (out / "manifest.json").exists()
    assert run_cli(capsys, *args, "--resume")[0] == 0
    assert run_cli(capsys, *args[:2], str(tmp_path / "ref"), *args[3:])[0] == 0
    assert tree(out) == tree(tmp_path / "ref")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("damage", ["truncated", "zeroed", "index gone"])
def test_resume_rewrites_a_done_shard_whose_bytes_did_not_survive(edge_images, tmp_path, capsys, fmt, damage):
    """Without --fsync a done record may reach the disk before its shard's bytes (a power cut): the
    run that would skip the shard checks its size and digests first, and writes it again."""
    src = edge_images
    out, reference = tmp_path / "o", tmp_path / "ref"
    args = ["convert", src, out, "--format", fmt, "--shards", "4", "-q"]
    assert run_cli(capsys, *args, "--num-nodes", "2", "--node-rank", "0")[0] == 0  # shards 0 and 2 done
    plan = Plan.load(out)
    data = out / plan.shards[0].file
    if fmt == "lmdb":
        data = data / "data.mdb"
    if damage == "truncated":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    elif damage == "zeroed":
        data.write_bytes(bytes(data.stat().st_size))
    else:
        record = json.loads((out / STATE_DIR / f"{plan.shards[0].key}.json").read_text())
        index = record["info"]["index"] or record["info"]["checksums"]
        (out / index).unlink()
    assert run_cli(capsys, *args, "--resume")[0] == 0
    assert run_cli(capsys, "convert", src, reference, "--format", fmt, "--shards", "4", "-q")[0] == 0
    assert tree(out) == tree(reference)


def test_fsync_is_asked_for(edge_images, tmp_path, capsys, monkeypatch):
    """By default nothing waits for the disk; --fsync syncs every shard file and the manifest."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if sys.platform.startswith("linux") else str(fd))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    src = edge_images
    args = ["convert", src, None, "--format", "recordio", "--shards", "2", "--workers", "1", "-q"]
    args[2] = tmp_path / "plain"
    assert run_cli(capsys, *args)[0] == 0
    assert synced == []
    args[2] = tmp_path / "durable"
    assert run_cli(capsys, *args, "--fsync")[0] == 0
    assert tree(tmp_path / "plain") == tree(tmp_path / "durable")
    if sys.platform.startswith("linux"):
        names = {Path(p).name for p in synced}
        for name in ("shard-00000.rec", "shard-00001.rec", "shard-00000.idx", "shard-00000.rec.crc", "manifest.json"):
            assert any(n == name or n == name + ".partial" for n in names), (name, sorted(names))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names synced files through /proc/self/fd")
def test_merge_with_fsync_syncs_shards_the_nodes_did_not(edge_images, tmp_path, capsys, monkeypatch):
    synced: list[str] = []
    real = os.fsync
    src, out = edge_images, tmp_path / "o"
    args = ["convert", src, out, "--format", "recordio", "--shards", "2", "--num-nodes", "2", "-q"]
    assert run_cli(capsys, *args, "--node-rank", "0")[0] == 0
    (out / ".fastdata-finalize.lock").write_text("a node that died while finishing\n")  # so node 1 leaves it
    assert run_cli(capsys, *args, "--node-rank", "1")[0] == 0
    assert not (out / "manifest.json").exists()
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real(fd))
    assert run_cli(capsys, "merge", out, "--fsync", "-q")[0] == 0
    names = [Path(p).name for p in synced]
    for name in ("shard-00000.rec", "shard-00001.rec", "shard-00001.idx", "shard-00001.rec.crc", "manifest.json"):
        assert name in names or name + ".partial" in names, (name, names)


def test_a_conversion_started_with_the_version_1_plan_file_resumes_byte_identically(edge_images, tmp_path, capsys):
    """A conversion interrupted under a release that wrote plan version 1 is finished by this one."""
    from test_conv_plan import v1_plan_json

    src = edge_images
    out, reference = tmp_path / "o", tmp_path / "ref"
    args = ["convert", src, out, "--format", "recordio", "--shards", "4", "--val-fraction", "0.2", "-q"]
    assert run_cli(capsys, *args, "--num-nodes", "2", "--node-rank", "0")[0] == 0  # shards 0 and 2 done
    plan_file = out / ".fastdata-plan.json"
    plan_file.write_text(v1_plan_json(Plan.load(out)))
    assert json.loads(plan_file.read_text())["plan_version"] == 1
    assert run_cli(capsys, *args, "--resume")[0] == 0
    assert run_cli(capsys, "convert", src, reference, *args[3:])[0] == 0
    assert tree(out) == tree(reference)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_pending_shard_loses_every_leftover_that_one_listing_finds(tmp_path, fmt):
    """What write_shards clears before a shard's first task: the names present_names listed, all of them."""
    items = [SourceItem(f"/src/c{k % 2}/{k}.jpg", f"c{k % 2}/{k}.jpg", k % 2, 100) for k in range(12)]
    plan = make_plan(ScanResult(root="/src", classes=["c0", "c1"], items=items),
                     PlanOptions(format=fmt, shards=3, val_fraction=0.25), {})
    out = tmp_path / "out"
    assert conv_state.present_names(out, plan, plan.shards) == set()  # a fresh output: no lstat at all
    target, other = plan.shards[0], plan.shards[-1]
    leftovers = [conv_state.record_path(out, target), conv_state.piece_dir(out, target, 1) / target.file,
                 *conv_state.shard_files(plan.split_dir(out, target.split), target.file)]
    kept = [conv_state.record_path(out, other), *conv_state.shard_files(plan.split_dir(out, other.split), other.file)]
    for path in leftovers + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left by a killed run")
    present = conv_state.present_names(out, plan, plan.shards)
    conv_state.clear_shard(out, plan, target, present)
    assert [p for p in leftovers if p.exists()] == []
    assert not conv_state.pieces_of(out, target).exists()
    assert all(p.exists() for p in kept)
