"""``fastdata doctor`` (fastdata.doctor.main): the three measurements, the
verdict flipping with the step's length, its JSON object and its PNG."""

from __future__ import annotations

import json

from fastdata.doctor import main
from fastdata.doctor.timeline import describe

QUICK = ["--seconds", "0.2", "--min-steps", "4", "--batch-size", "4", "--size", "64", "--workers", "1"]


def _doctor(src, out, capsys, *extra: str) -> dict:
    assert main([str(src), *QUICK, "--out", str(out), "--json", *extra]) == 0
    printed = capsys.readouterr().out
    return json.loads(printed)  # one JSON object and nothing else on stdout


def test_step_length_flips_the_verdict_and_files_are_written(photo_tree, tmp_path, capsys):
    slow = _doctor(photo_tree / "train", tmp_path / "slow", capsys, "--step-ms", "100")
    fast = _doctor(photo_tree / "train", tmp_path / "fast", capsys, "--step-ms", "0")
    assert slow["verdict"] == "compute-bound" and slow["wait_share"] < 0.10
    assert fast["verdict"] == "input-bound" and fast["wait_share"] > 0.5
    for result, out in ((slow, tmp_path / "slow"), (fast, tmp_path / "fast")):
        assert set(result["phases"]) == {"loader alone", "step alone", "together"}
        assert json.loads((out / "fastdata-doctor.json").read_text())["verdict"] == result["verdict"]
        png = describe(out / "fastdata-doctor.png")
        assert png["png"] and png["width"] >= 800 and png["height"] >= 300 and png["bytes"] > 10_000
        assert len(result["timeline"]["wait_ms"]) == result["phases"]["together"]["steps"]
    assert abs(slow["phases"]["step alone"]["step_ms"] - 100) < 15


def test_the_table_and_the_cpu_stand_in(small_folder, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main([str(small_folder), *QUICK, "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "no CUDA here: the step is a tiny CNN on the CPU" in text
    for line in ("loader alone", "step alone", "together", "waiting for data:", "verdict: "):
        assert line in text
    assert "fastdata-doctor.png" in text


def test_a_bad_source_is_exit_2_with_the_reason(tmp_path, capsys):
    assert main([str(tmp_path / "missing"), "--step-ms", "1"]) == 2
    assert "fastdata doctor: error:" in capsys.readouterr().err


def test_the_fastdata_command_hands_doctor_its_arguments(tmp_path, capsys):
    from fastdata.converters.cli import main as fastdata_main

    assert fastdata_main(["doctor", str(tmp_path / "missing"), "--step-ms", "1"]) == 2
    err = capsys.readouterr().err
    assert "fastdata doctor: error:" in err and "missing" in err and "Traceback" not in err
