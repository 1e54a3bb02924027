"""benchmarks/gpu_train.py stays alive without a GPU: --help, and its tiny CPU run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_train.py"


def test_help():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--decode-only" in done.stdout and "fastdata-cuda" in done.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the script trains ResNet-50: run it by hand")
def test_tiny_cpu_run_writes_a_table_and_json(tmp_path, shared_data):
    out = tmp_path / "gpu_train.json"
    feeds = "synthetic,fastdata-cpu,fastdata-cuda-threads,dali"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(shared_data / "photos" / "hymenoptera" / "train"), "--feeds", feeds,
         "--steps", "2", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "no CUDA device" in done.stdout and "fastdata-cuda-threads" in done.stdout
    result = json.loads(out.read_text())
    rows = {r["feed"]: r for r in result["rows"]}
    assert result["device"] == "cpu" and result["args"]["model"] == "tiny"
    for name in ("synthetic", "fastdata-cpu", "fastdata-cuda-threads"):
        assert rows[name]["img_s"] > 0
    assert rows["fastdata-cuda-threads"]["cpu_workers"] == 2 and rows["synthetic"]["pct_synthetic"] == 100.0
    assert "skipped" in rows["dali"]
    assert result["versions"]["torch"] == torch.__version__
