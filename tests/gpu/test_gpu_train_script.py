"""The GPU machine's scripts stay alive without a GPU: benchmarks/gpu_train.py
(feed specs, its tiny CPU runs, a feed that fails), benchmarks/gpu_check_summary.py
on fabricated part files, and benchmarks/gpu_check.sh, which skips its GPU parts."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_train.py"
SUMMARY = ROOT / "benchmarks" / "gpu_check_summary.py"
CHECK = ROOT / "benchmarks" / "gpu_check.sh"
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the scripts run the real thing: run them by hand")


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_train():
    return load(SCRIPT)


@pytest.fixture(scope="module")
def summary():
    return load(SUMMARY)


def test_help():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--decode-only" in done.stdout and "--memory-epochs" in done.stdout
    assert "fastdata-cuda" in done.stdout


@pytest.mark.parametrize("text, expected", [
    ("synthetic", ("synthetic", None, 0, None)),
    ("torchvision:15", ("torchvision", None, 15, None)),
    ("torchvision", ("torchvision", None, 3, None)),
    ("fastdata-cpu:8", ("fastdata-cpu", "auto", 8, "cpu")),
    ("fastdata-cpu-threads:8", ("fastdata-cpu", "threads", 8, "cpu")),
    ("fastdata-cpu-processes", ("fastdata-cpu", "processes", 3, "cpu")),
    ("fastdata-cuda", ("fastdata-cuda", "auto", 3, "auto")),
    ("fastdata-cuda-processes:4", ("fastdata-cuda", "processes", 4, "auto")),
    ("fastdata-cuda-processes:2:nvimgcodec", ("fastdata-cuda", "processes", 2, "nvimgcodec")),
    ("fastdata-cuda-threads:0:torchvision", ("fastdata-cuda", "threads", 0, "torchvision")),
    ("fastdata-cuda::cpu", ("fastdata-cuda", "auto", 3, "cpu")),
    ("fastdata-hybrid", ("fastdata-hybrid", "auto", 3, "auto")),
    ("fastdata-hybrid-processes:7:torchvision", ("fastdata-hybrid", "processes", 7, "torchvision")),
    (" dali:6 ", ("dali", None, 6, None)),
])
def test_feed_specs_parse(gpu_train, text, expected):
    spec = gpu_train.parse_feed(text, 3)
    assert (spec.family, spec.kind, spec.workers, spec.backend) == expected
    assert spec.spec == text.strip()


@pytest.mark.parametrize("text, message", [
    ("synthetic:4", "takes no workers"),
    ("fastdata-cpu:x", "must be an integer"),
    ("fastdata-cpu:-1", ">= 0"),
    ("fastdata-cpu:1:nvimgcodec", "only fastdata-cuda and fastdata-hybrid take a backend"),
    ("torchvision:4:torchvision", "only fastdata-cuda and fastdata-hybrid take a backend"),
    ("fastdata-hybrid:2:nvjpeg", "backend must be one of"),
    ("fastdata-cuda:2:nvjpeg", "backend must be one of"),
    ("fastdata-cuda-fibers:2", "worker kind must be one of"),
    ("pillow:2", "unknown name"),
    ("fastdata-cuda:1:auto:x", "expected name[:workers[:backend]]"),
    (":4", "expected name"),
])
def test_bad_feed_specs_say_why(gpu_train, text, message):
    with pytest.raises(ValueError) as info:
        gpu_train.parse_feed(text, 3)
    assert message in str(info.value)


@no_cuda
def test_tiny_cpu_run_writes_a_table_and_json(tmp_path, shared_data):
    out = tmp_path / "gpu_train.json"
    feeds = "synthetic,fastdata-cpu:1,fastdata-cuda-threads,fastdata-cuda-processes:1:nvimgcodec,fastdata-hybrid-threads:2,dali"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(shared_data / "photos" / "hymenoptera" / "train"), "--feeds", feeds,
         "--steps", "2", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "no CUDA device" in done.stdout and "fastdata-cuda-processes:1:nvimgcodec" in done.stdout
    result = json.loads(out.read_text())
    rows = {r["feed"]: r for r in result["rows"]}
    assert result["device"] == "cpu" and result["args"]["model"] == "tiny"
    for name in ("synthetic", "fastdata-cpu:1", "fastdata-cuda-threads", "fastdata-cuda-processes:1:nvimgcodec"):
        assert rows[name]["img_s"] > 0 and "error" not in rows[name]
    assert rows["fastdata-cpu:1"]["workers"] == 1 and rows["fastdata-cpu:1"]["backend"] == "cpu"
    assert rows["fastdata-cuda-threads"]["workers"] == 2 and rows["fastdata-cuda-threads"]["kind"] == "threads"
    assert rows["fastdata-cuda-threads"]["workers_chosen"].startswith("2 threads")
    # without CUDA, backend="nvimgcodec" falls back to the CPU decoder, and says so
    cuda = rows["fastdata-cuda-processes:1:nvimgcodec"]
    assert (cuda["backend"], cuda["decoder"], cuda["workers"]) == ("nvimgcodec", "cpu", 1)
    assert rows["synthetic"]["pct_synthetic"] == 100.0 and rows["synthetic"]["workers"] == 0
    assert rows["fastdata-cpu:1"]["pct_synthetic"] == round(100 * rows["fastdata-cpu:1"]["img_s"] / rows["synthetic"]["img_s"], 1)
    assert "skipped" in rows["dali"]
    assert result["versions"]["torch"] == torch.__version__
    # every row says its core budget (unpinned here) and the share the CPU took, where one applies
    assert result["core_budget"] is None and all(r["core_budget"] is None for r in result["rows"])
    shares = {name: rows[name]["cpu_share"] for name in rows}
    assert shares["synthetic"] is None and shares["fastdata-cpu:1"] == 1.0 and shares["fastdata-cuda-threads"] == 0.0
    assert 0.05 <= shares["fastdata-hybrid-threads:2"] <= 0.95 and rows["fastdata-hybrid-threads:2"]["img_s"] > 0


@no_cuda
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity")
def test_cores_pins_the_process_and_its_workers_and_every_row_says_so(gpu_train, tmp_path, shared_data, monkeypatch):
    pinned: list = []
    monkeypatch.setattr(gpu_train.os, "sched_setaffinity", lambda pid, cores: pinned.append(list(cores)))
    monkeypatch.setattr(gpu_train.torch, "set_num_threads", lambda n: pinned.append(n))
    allowed = sorted(os.sched_getaffinity(0))
    out = tmp_path / "pinned.json"
    rc = gpu_train.main([str(shared_data / "photos" / "hymenoptera" / "train"), "--cores", "1", "--steps", "2",
                         "--json", str(out), "--feeds", "synthetic,fastdata-hybrid-threads:1"])
    assert rc == 0 and pinned == [allowed[:1], 1]  # before anything started: workers inherit the mask
    result = json.loads(out.read_text())
    assert result["core_budget"] == 1 and result["cores"] == allowed[:1]
    assert [r["core_budget"] for r in result["rows"]] == [1, 1]
    assert gpu_train.pin_cores(len(allowed) + 1) is None  # more cores than there are: unpinned, said on stderr


@no_cuda
def test_a_failing_feed_is_recorded_and_the_others_still_run(gpu_train, tmp_path, shared_data, monkeypatch):
    real, closed = gpu_train.feed, []

    def feed(spec, *args):
        if spec.spec == "fastdata-cpu:1":
            raise RuntimeError("boom")
        return real(spec, *args)

    def close(self):
        closed.append(self.loader is not None)
        real_close(self)

    real_close = gpu_train.Feed.close
    monkeypatch.setattr(gpu_train, "feed", feed)
    monkeypatch.setattr(gpu_train.Feed, "close", close)
    out = tmp_path / "rows.json"
    rc = gpu_train.main([str(shared_data / "photos" / "hymenoptera" / "train"), "--decode-only", "--steps", "2", "--json",
                         str(out), "--feeds", "fastdata-cpu-threads:1,fastdata-cpu:1,nonsense:2,fastdata-cuda-threads:1"])
    assert rc == 1
    rows = {r["feed"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["fastdata-cpu:1"]["error"] == "RuntimeError: boom" and rows["fastdata-cpu:1"]["img_s"] is None
    assert rows["nonsense:2"]["error"].startswith("ValueError: feed 'nonsense:2': unknown name")
    assert rows["fastdata-cpu-threads:1"]["img_s"] > 0 and rows["fastdata-cuda-threads:1"]["img_s"] > 0
    assert closed == [True, True]  # both loaders that ran were closed


@no_cuda
def test_memory_epochs_on_the_cpu_write_null_memory(tmp_path, shared_data):
    out = tmp_path / "memory.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(shared_data / "photos" / "hymenoptera" / "train"), "--memory-epochs", "5",
         "--feeds", "fastdata-cuda-processes:4", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["mode"] == "memory" and result["feed"] == "fastdata-cuda-processes:4"
    assert [e["epoch"] for e in result["epochs"]] == [1, 2, 3]  # capped to 3 without CUDA
    assert all(e["batches"] == 2 for e in result["epochs"])  # --epoch-batches capped to 2
    assert result["epochs_reserved_mib"] == [None] * 3 and len(result["epochs_process_mib"]) == 3


# fabricated parts of one gpu_check.sh run
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.gpu.test_gpu_cuda" name="test_a[torchvision]" time="1"/>
<testcase classname="tests.gpu.test_gpu_cuda" name="test_stream[torchvision]" time="1"/>
<testcase classname="tests.gpu.test_gpu_cuda" name="test_b[nvimgcodec]" time="1"><failure message="x">boom</failure></testcase>
<testcase classname="tests.loading.test_prefetch" name="test_c" time="1"/>
<testcase classname="tests.dali.test_gpu" name="test_d" time="0"><skipped message="no DALI"/></testcase>
</testsuite></testsuites>"""
STREAM_JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="1">
<testcase classname="tests.gpu.test_gpu_cuda" name="test_stream[torchvision]" time="1"><failure message="y">overwritten</failure></testcase>
</testsuite></testsuites>"""
PARTS = [
    "tests\tfailed\t61.2\t1\t150\texited 1",
    "stream_test\tok\t14.0\t1\t60\t",
    "decode_only\tok\t30.5\t0\t90\t",
    "train\tfailed\t80.0\t1\t180\texited 1",
    "memory\ttimeout\t60.1\t124\t60\tkilled after its 60 s time box",
]


def fabricate(tmp: Path, decode_best: float, reserved: list, process: list) -> tuple[Path, Path]:
    work, out = tmp / "work", tmp / "out"
    work.mkdir()
    out.mkdir()
    (work / "parts.tsv").write_text("\n".join(PARTS) + "\n")
    (work / "probe.json").write_text(json.dumps({"cuda": True, "device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0",
                                                 "cuda_version": "13.0"}))
    (work / "nvidia_smi.txt").write_text("NVIDIA H100 80GB HBM3, 81559 MiB, 580.1\n")
    (out / "pytest_cuda.xml").write_text(JUNIT)
    (out / "pytest_cuda.log").write_text("...\n1 failed, 3 passed, 1 skipped in 60.0s\n")
    (work / "pytest_stream.xml").write_text(STREAM_JUNIT)
    versions = {"python": "3.12.3", "torch": "2.11.0", "torchvision": "0.26.0", "gpu": "NVIDIA H100 80GB HBM3"}
    decode = [
        {"feed": "fastdata-cuda-processes:2:torchvision", "family": "fastdata-cuda", "kind": "processes", "workers": 2,
         "backend": "torchvision", "img_s": 7000.0, "pct_synthetic": None, "decoder": "torchvision"},
        {"feed": "fastdata-cuda-processes:4:torchvision", "family": "fastdata-cuda", "kind": "processes", "workers": 4,
         "backend": "torchvision", "img_s": decode_best, "pct_synthetic": None, "decoder": "torchvision"},
        {"feed": "fastdata-cuda-processes:2:nvimgcodec", "family": "fastdata-cuda", "kind": "processes", "workers": 2,
         "backend": "nvimgcodec", "img_s": None, "pct_synthetic": None, "error": "MissingDependencyError: no nvimgcodec"},
        {"feed": "fastdata-cpu:4", "family": "fastdata-cpu", "kind": "auto", "workers": 4, "backend": "cpu",
         "img_s": 2100.0, "pct_synthetic": None},
    ]
    train = [
        {"feed": "synthetic", "family": "synthetic", "workers": 0, "backend": None, "img_s": 3000.0, "pct_synthetic": 100.0},
        {"feed": "torchvision:15", "family": "torchvision", "workers": 15, "backend": None, "img_s": 2400.0,
         "pct_synthetic": 80.0},
        {"feed": "fastdata-cpu:8", "family": "fastdata-cpu", "kind": "auto", "workers": 8, "backend": "cpu",
         "img_s": None, "pct_synthetic": None, "error": "RuntimeError: worker died"},
        {"feed": "fastdata-cuda-processes:2", "family": "fastdata-cuda", "kind": "processes", "workers": 2,
         "backend": "auto", "img_s": 2550.0, "pct_synthetic": 85.0},
        {"feed": "fastdata-cuda-processes:4", "family": "fastdata-cuda", "kind": "processes", "workers": 4,
         "backend": "auto", "img_s": 2670.0, "pct_synthetic": 89.0},
        {"feed": "fastdata-cuda-processes:8", "family": "fastdata-cuda", "kind": "processes", "workers": 8,
         "backend": "auto", "img_s": 2970.0, "pct_synthetic": 99.0},  # more than 4 workers: not the target's
        {"feed": "dali", "family": "dali", "workers": 4, "backend": None, "img_s": 2990.0, "pct_synthetic": 99.7},
    ]
    (work / "gpu_decode.json").write_text(json.dumps({"mode": "decode-only", "versions": versions, "rows": decode}))
    (work / "gpu_train.json").write_text(json.dumps({"mode": "train", "versions": versions, "rows": train}))
    (work / "gpu_memory.json").write_text(json.dumps({
        "mode": "memory", "feed": "fastdata-cuda-processes:4", "versions": versions, "epochs_reserved_mib": reserved,
        "epochs_process_mib": process, "epochs_device_used_mib": process, "process_mib_source": "nvidia-smi"}))
    return work, out


def run_summary(work: Path, out: Path) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, str(SUMMARY), "--parts", str(work), "--out", str(out), "--wall", "250",
                           "--budget", "330"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    summary = (out / "summary.txt").read_text()
    assert done.stdout == summary
    return json.loads((out / "gpu_check.json").read_text()), summary


def test_summary_of_fabricated_parts_computes_the_targets(tmp_path):
    # reserved: epochs 3-5 within 1 % of epoch 2's 2048 (2068 is +0.98 %); process: 1530 is +2 % of 1500
    work, out = fabricate(tmp_path, 9999.9, [1024, 2048, 2050, 2068, 2060], [1200, 1500, 1500, 1510, 1530])
    result, summary = run_summary(work, out)
    assert result["device"] == "NVIDIA H100 80GB HBM3" and result["date"].endswith("Z")
    assert result["versions"]["torchvision"] == "0.26.0" and result["versions"]["cuda"] == "13.0"
    t = result["tests"]
    assert (t["passed"], t["failed"], t["errors"], t["skipped"]) == (3, 1, 0, 1)
    assert t["failures"] == ["tests.gpu.test_gpu_cuda::test_b[nvimgcodec]"]
    assert t["stream_test_fails_without_guard"] is True
    assert t["stream_run"]["tests"] == {"tests.gpu.test_gpu_cuda::test_stream[torchvision]":
                                        {"unguarded": "failed", "guarded": "passed"}}
    assert [(r["feed"], r["backend"], r["workers"], r["img_s"]) for r in result["decode_only"]] == [
        ("fastdata-cuda", "torchvision", 2, 7000.0), ("fastdata-cuda", "torchvision", 4, 9999.9),
        ("fastdata-cuda", "nvimgcodec", 2, None), ("fastdata-cpu", "cpu", 4, 2100.0)]
    assert [r["feed"] for r in result["train"]] == ["synthetic", "torchvision", "fastdata-cpu", "fastdata-cuda",
                                                    "fastdata-cuda", "fastdata-cuda"]  # no dali
    # rows of a gpu_train.py from before core budgets: the new keys are there, null
    assert result["train"][4] == {"feed": "fastdata-cuda", "spec": "fastdata-cuda-processes:4", "workers": 4,
                                  "backend": "auto", "img_s": 2670.0, "pct_synthetic": 89.0, "core_budget": None,
                                  "cpu_share": None}
    assert result["memory"]["epochs_reserved_mib"] == [1024, 2048, 2050, 2068, 2060]
    g = result["targets"]
    assert g["cuda_train_ge_90pct_synthetic_le_4_workers"] is False  # 89 % with 4; the 99 % took 8 workers
    assert g["cuda_train_best_le_4_workers"]["spec"] == "fastdata-cuda-processes:4"
    assert g["decode_only_best_ge_10000"] is False and g["decode_only_best"]["img_s"] == 9999.9
    assert g["memory_reserved_flat_after_epoch_2"] is True and g["memory_process_flat_after_epoch_2"] is False
    assert g["memory_flat_after_epoch_2"] is False and g["stream_test_can_fail"] is True
    p = result["parts"]
    assert [p[n]["status"] for n in ("tests", "stream_test", "decode_only", "train", "memory")] == [
        "failed", "ok", "ok", "failed", "timeout"]
    assert p["tests"]["reason"].startswith("1 failed, 0 errors: tests.gpu.test_gpu_cuda::test_b")
    assert "fastdata-cpu:8 (RuntimeError: worker died)" in p["train"]["reason"]
    assert "it should" in p["stream_test"]["reason"]
    assert (p["memory"]["seconds"], p["memory"]["rc"], p["memory"]["limit_s"]) == (60.1, 124, 60)
    assert result["raw"]["train"]["rows"][-1]["feed"] == "dali"
    assert "best decode-only >= 10,000 img/s: NO (9,999.9, fastdata-cuda-processes:4:torchvision)" in summary
    assert "MissingDependencyError: no nvimgcodec" in summary and "1 failed, 3 passed, 1 skipped" in summary


def add_hybrid(work: Path) -> None:
    """Fabricated hybrid rows and the two core budgets' runs, beside fabricate()'s parts
    (the figures are made up to exercise the summariser, not measured)."""
    train = json.loads((work / "gpu_train.json").read_text())
    train["rows"] += [
        {"feed": "fastdata-hybrid-processes:4", "family": "fastdata-hybrid", "kind": "processes", "workers": 4,
         "backend": "auto", "img_s": 2940.0, "pct_synthetic": 98.0, "core_budget": None, "cpu_share": 0.41},
        {"feed": "fastdata-hybrid-processes:8", "family": "fastdata-hybrid", "kind": "processes", "workers": 8,
         "backend": "auto", "img_s": 2990.0, "pct_synthetic": 99.7, "core_budget": None, "cpu_share": 0.55}]
    (work / "gpu_train.json").write_text(json.dumps(train))
    decode = json.loads((work / "gpu_decode.json").read_text())
    decode["rows"].append({"feed": "fastdata-hybrid-processes:8", "family": "fastdata-hybrid", "kind": "processes",
                           "workers": 8, "backend": "auto", "img_s": 19000.0, "pct_synthetic": None, "cpu_share": 0.5})
    (work / "gpu_decode.json").write_text(json.dumps(decode))
    for n, (cpu, hybrid, share) in {8: (2100.0, 2830.0, 0.33), 4: (1200.0, 2500.0, 0.12)}.items():
        rows = [
            {"feed": "synthetic", "family": "synthetic", "workers": 0, "img_s": 2980.0, "pct_synthetic": 100.0,
             "core_budget": n, "cpu_share": None},
            {"feed": f"fastdata-cpu:{n - 1}", "family": "fastdata-cpu", "kind": "auto", "workers": n - 1, "backend": "cpu",
             "img_s": cpu, "pct_synthetic": round(100 * cpu / 2980.0, 1), "core_budget": n, "cpu_share": 1.0},
            {"feed": f"fastdata-hybrid-processes:{n - 1}", "family": "fastdata-hybrid", "kind": "processes",
             "workers": n - 1, "backend": "auto", "img_s": hybrid, "pct_synthetic": round(100 * hybrid / 2980.0, 1),
             "core_budget": n, "cpu_share": share}]
        (work / f"gpu_train_cores{n}.json").write_text(json.dumps({"mode": "train", "core_budget": n, "rows": rows}))
    (work / "parts.tsv").write_text((work / "parts.tsv").read_text() + "core_budget\tok\t70.2\t0\t130\t\n")


def test_summary_of_fabricated_hybrid_and_core_budget_rows(tmp_path):
    work, out = fabricate(tmp_path, 9999.9, [1024, 2048, 2048, 2048, 2048], [1200, 1500, 1500, 1500, 1500])
    add_hybrid(work)
    result, summary = run_summary(work, out)
    budgets = [(r["spec"], r["core_budget"], r["cpu_share"]) for r in result["train"] if r["core_budget"] is not None]
    assert budgets == [("synthetic", 8, None), ("fastdata-cpu:7", 8, 1.0), ("fastdata-hybrid-processes:7", 8, 0.33),
                       ("synthetic", 4, None), ("fastdata-cpu:3", 4, 1.0), ("fastdata-hybrid-processes:3", 4, 0.12)]
    g = result["targets"]
    assert g["hybrid_train_ge_97pct_synthetic_le_4_workers"] is True  # 98.0 % with 4; the 99.7 % took 8
    assert g["hybrid_train_best_le_4_workers"] == {"spec": "fastdata-hybrid-processes:4", "pct_synthetic": 98.0,
                                                   "img_s": 2940.0, "cpu_share": 0.41}
    assert g["hybrid_train_ge_95pct_synthetic_8_cores"] is True and g["hybrid_train_best_8_cores"]["pct_synthetic"] == 95.0
    assert g["cpu_train_best_8_cores"]["spec"] == "fastdata-cpu:7" and g["cuda_train_best_8_cores"] is None
    assert g["hybrid_decode_only_ge_20000"] is False and g["hybrid_decode_only_best"]["img_s"] == 19000.0
    assert g["cuda_train_ge_90pct_synthetic_le_4_workers"] is False  # the older targets are kept as they were
    assert result["parts"]["core_budget"]["status"] == "ok" and set(result["raw"]["core_budget"]) == {"8", "4"}
    assert "pinned to 8 cores: yes (95.0 %, fastdata-hybrid-processes:7, share 0.33); decode='cpu' there (70.5 %" in summary
    assert "decode-only >= 20,000 img/s: NO (19,000.0 img/s, fastdata-hybrid-processes:8, share 0.50)" in summary


def test_summary_targets_met(tmp_path):
    work, out = fabricate(tmp_path, 12500.0, [1024, 2048, 2048, 2048, 2048], [1200, 1500, 1501, 1500, 1502])
    data = json.loads((work / "gpu_train.json").read_text())
    data["rows"][4]["pct_synthetic"] = 90.0
    (work / "gpu_train.json").write_text(json.dumps(data))
    (work / "pytest_stream.xml").write_text(STREAM_JUNIT.replace('<failure message="y">overwritten</failure>', ""))
    g = run_summary(work, out)[0]["targets"]
    assert g["cuda_train_ge_90pct_synthetic_le_4_workers"] is True
    assert g["decode_only_best_ge_10000"] is True and g["memory_flat_after_epoch_2"] is True
    assert g["stream_test_can_fail"] is False  # the unguarded test passed: it cannot catch the hazard


def test_summary_of_nothing_gives_nulls(tmp_path, summary):
    result = summary.summarise(str(tmp_path / "none"), str(tmp_path / "none-either"))
    assert result["device"] is None and result["decode_only"] == [] and result["train"] == []
    assert result["memory"]["epochs_reserved_mib"] == [] and result["tests"]["passed"] is None
    assert set(result["targets"].values()) == {None}
    assert {p["status"] for p in result["parts"].values()} == {"skipped"}
    assert "(none)" in summary.text(result)
    # a memory run cut short: too few epochs to judge; a null process series is unknown, not flat
    assert summary.flat([1, 2]) is None and summary.flat([1, 2, None]) is None
    assert summary.flat([0, 0, 0]) is True and summary.flat([5, 100, 101, 99]) is True
    assert summary.flat([5, 100, 101.5]) is False


@no_cuda
def test_gpu_check_without_cuda_skips_the_gpu_parts_and_exits_0(tmp_path):
    out = tmp_path / "out"
    start = time.monotonic()
    done = subprocess.run(["bash", str(CHECK)], cwd=ROOT, env={**os.environ, "OUT": str(out)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - start < 60
    result = json.loads((out / "gpu_check.json").read_text())
    parts = result["parts"]
    assert parts["tests"]["status"] == "ok" and parts["tests"]["limit_s"] == 150
    for name in ("stream_test", "decode_only", "train", "core_budget", "memory"):
        assert parts[name]["status"] == "skipped" and "no CUDA device" in parts[name]["reason"]
        assert f"gpu_check: {name}: skipped: no CUDA device" in done.stdout
    assert result["tests"]["passed"] == 0 and result["tests"]["skipped"] > 0 and result["tests"]["failed"] == 0
    assert result["device"] is None and result["train"] == [] and result["targets"]["decode_only_best_ge_10000"] is None
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json", "pytest_cuda.log", "pytest_cuda.xml", "summary.txt"]
    assert "targets" in done.stdout and "SKIPPED" in (out / "pytest_cuda.log").read_text()


@no_cuda
@pytest.mark.slow
def test_gpu_check_forced_runs_every_part_on_the_cpu(tmp_path, shared_data):
    # GPU_CHECK_FORCE=1: the GPU parts' command lines (feed specs included) run as gpu_train.py's tiny CPU runs
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "GPU_CHECK_FORCE": "1",
           "FASTDATA_PHOTOS": str(shared_data / "photos" / "hymenoptera")}
    done = subprocess.run(["bash", str(CHECK)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr + (out / "bench.log").read_text()
    result = json.loads((out / "gpu_check.json").read_text())
    assert {p["status"] for p in result["parts"].values()} == {"ok"}
    assert [(r["backend"], r["spec"]) for r in result["decode_only"]] == [
        ("torchvision", "fastdata-cuda-processes:2:torchvision"), ("torchvision", "fastdata-cuda-processes:4:torchvision"),
        ("torchvision", "fastdata-cuda-processes:8:torchvision"), ("nvimgcodec", "fastdata-cuda-processes:2:nvimgcodec"), ("nvimgcodec", "fastdata-cuda-processes:4:nvimgcodec"),
        ("auto", "fastdata-hybrid-processes:4"), ("auto", "fastdata-hybrid-processes:8"),
        ("torchvision", "fastdata-hybrid-processes:8:torchvision"), ("cpu", "fastdata-cpu:4")]
    assert all(r["img_s"] > 0 for r in result["decode_only"])
    assert [r["spec"] for r in result["train"]] == [
        "synthetic", "torchvision:15", "fastdata-cpu:4", "fastdata-cpu:8", "fastdata-cpu:15",
        "fastdata-cuda-processes:2", "fastdata-cuda-processes:4", "fastdata-hybrid-processes:2",
        "fastdata-hybrid-processes:4",
        # the core budgets' runs, 8 then 4 (on this machine's cores, where it has them)
        "synthetic", "fastdata-cpu:7", "fastdata-cuda-processes:4", "fastdata-hybrid-processes:7",
        "synthetic", "fastdata-cpu:3", "fastdata-cuda-processes:3", "fastdata-hybrid-processes:3"]
    assert all(r["img_s"] > 0 for r in result["train"] if r["feed"] != "torchvision" or "skipped" not in r)
    assert len(result["memory"]["epochs_reserved_mib"]) == 3  # 5 epochs, capped to 3 on the CPU
    assert result["tests"]["stream_test_fails_without_guard"] is None  # the stream test skips without CUDA


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity")
def test_pin_cores_really_pins_the_process_and_the_workers_it_starts_later():
    code = (
        "import multiprocessing as mp, os, sys; sys.path.insert(0, sys.argv[1]); import gpu_train\n"
        "cores = gpu_train.pin_cores(1)\n"
        "print(cores, sorted(os.sched_getaffinity(0)))\n"
        "with mp.get_context('spawn').Pool(1) as pool: print(sorted(pool.apply(os.sched_getaffinity, (0,))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks")], capture_output=True, text=True,
                          timeout=300, cwd="/tmp")
    assert done.returncode == 0, done.stderr
    first = sorted(os.sched_getaffinity(0))[:1]
    assert done.stdout.splitlines() == [f"{first} {first}", f"{first}"]
