"""The doctor on the real photos (shared/data's hymenoptera set): the quick
start's own output of a 40-photo folder (36 training images, one batch of 32 a
pass) is not called compute-bound, and on the 244 photos a 1 ms and a 200 ms
step still get opposite verdicts."""

from __future__ import annotations

import json
import shutil

import pytest

from fastdata.doctor import main

pytestmark = pytest.mark.slow
RUN = ["--seconds", "2", "--min-steps", "14", "--json"]  # two passes of the 244 photos: a load spike averages out


def _verdict(src, out, capsys, step_ms: str) -> dict:
    assert main([str(src), *RUN, "--step-ms", step_ms, "--out", str(out)]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_quick_starts_small_output_is_not_called_compute_bound(shared_data, tmp_path, capsys, monkeypatch):
    from fastdata.converters.cli import main as fastdata

    train = tmp_path / "train"
    for cls in ("ants", "bees"):  # a new user's small folder: 20 photos a class
        (train / cls).mkdir(parents=True)
        photos = sorted(p for p in (shared_data / "photos/hymenoptera/train" / cls).iterdir() if p.suffix == ".jpg")
        for photo in photos[:20]:
            shutil.copy(photo, train / cls / photo.name)
    monkeypatch.chdir(tmp_path)  # the quick start's command, as written
    assert fastdata(["convert", "train/", "quick/", "--format", "recordio", "--val-fraction", "0.1", "-q"]) == 0
    result = _verdict("quick/train", tmp_path / "doctor", capsys, "1")
    assert result["images"] == 36 and result["phases"]["together"]["pass_batches"] == 1
    assert result["verdict"] == "input-bound", result["suggestion"]
    assert result["phases"]["together"]["startup_counted"] and "every batch counted" in result["wait_share_counts"]


def test_on_the_244_photos_the_step_length_still_flips_the_verdict(shared_data, tmp_path, capsys):
    photos = shared_data / "photos/hymenoptera/train"
    fast = _verdict(photos, tmp_path / "fast", capsys, "1")
    slow = _verdict(photos, tmp_path / "slow", capsys, "200")
    assert fast["images"] == slow["images"] == 244
    assert fast["verdict"] == "input-bound" and slow["verdict"] == "compute-bound", (fast["wait_share"], slow["wait_share"])
    assert slow["loader_step_ratio"] > 1 > fast["loader_step_ratio"]  # the one ratio agrees with the verdicts
