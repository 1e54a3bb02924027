"""gpu_check.json and summary.txt from the parts of benchmarks/gpu_check.sh.

Reads, from --parts (then --out) where present:

  parts.tsv         one line per part: name, status, seconds, rc, time box, reason
  probe.json        {"cuda", "device", "torch", "cuda_version"} (python3 on the machine)
  nvidia_smi.txt    nvidia-smi --query-gpu=name,memory.total,driver_version
  pytest_cuda.xml   junit XML of the cuda-marked tests
  pytest_stream.xml junit XML of the stream test run without its guard
  gpu_decode.json   benchmarks/gpu_train.py --decode-only --json
  gpu_train.json    benchmarks/gpu_train.py --json
  gpu_train_cores8.json, gpu_train_cores4.json
                    the same, pinned to 8 and 4 cores (--cores N): rows with core_budget N
  gpu_memory.json   benchmarks/gpu_train.py --memory-epochs N --json
  pytest_cuda.log   its last lines go into summary.txt

and writes --out/gpu_check.json (device, date, versions, tests, decode_only,
train, memory, parts, targets, raw) and --out/summary.txt, also printed.
``train`` holds the unpinned rows, then each core budget's; every row has
``core_budget`` (null: unpinned) and ``cpu_share``. A
missing or unreadable file gives nulls and empty lists, never an error.
Standard library only.

    python benchmarks/gpu_check_summary.py --parts WORK_DIR --out OUT_DIR [--wall S] [--budget S]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import sys
import xml.etree.ElementTree as ET
from typing import Any

PARTS = ("tests", "stream_test", "decode_only", "train", "core_budget", "memory", "profile")
TRAIN_FEEDS = ("synthetic", "torchvision", "fastdata-cpu", "fastdata-cuda", "fastdata-hybrid")
CORE_BUDGETS = (8, 4)
PCT_TARGET, DECODE_TARGET, FLAT_WITHIN = 90.0, 10_000.0, 0.01
HYBRID_PCT, HYBRID_PINNED_PCT, HYBRID_DECODE = 97.0, 95.0, 20_000.0  # issue 37: <= 4 workers; 8 cores; decode-only


def find(name: str, dirs: list[str]) -> str | None:
    for d in dirs:
        path = os.path.join(d, name)
        if d and os.path.isfile(path):
            return path
    return None


def read_json(path: str | None) -> Any:
    if not path:
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_parts(path: str | None) -> dict[str, dict[str, Any]]:
    """parts.tsv as {name: {status, reason, seconds, rc, limit_s}}; parts never recorded are skipped."""
    parts: dict[str, dict[str, Any]] = {}
    if path:
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            fields = (line.split("\t") + [""] * 6)[:6]
            name, status, seconds, rc, limit, reason = fields
            if not name:
                continue
            parts[name] = {"status": status if status in ("ok", "failed", "timeout", "skipped") else "failed",
                           "reason": reason or None, "seconds": number(seconds), "rc": integer(rc),
                           "limit_s": integer(limit)}
    for name in PARTS:
        parts.setdefault(name, {"status": "skipped", "reason": "not run (no record of it)", "seconds": None,
                                "rc": None, "limit_s": None})
    return parts


def number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def integer(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def junit(path: str | None) -> dict[str, Any] | None:
    """passed, failed, errors, skipped and the names of failures, from a junit XML; None when unreadable."""
    if not path:
        return None
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures: list[str] = []
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None:
            outcome = "failed"
            failures.append(name)
        elif case.find("error") is not None:
            outcome = "errors"
            failures.append(name + " (error)")
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        counts[outcome] += 1
        outcomes.setdefault(name, outcome)  # a teardown error repeats the case: its first outcome
    return {**counts, "failures": failures, "outcomes": outcomes}


def stream_outcome(result: dict[str, Any] | None) -> bool | None:
    """Whether the unguarded stream test failed: True when one failed, False
    when they ran and passed, None when none ran (skipped, errors, no XML)."""
    if result is None:
        return None
    if result["failed"]:
        return True
    if result["passed"]:
        return False
    return None


def rows_of(raw: Any) -> list[dict[str, Any]]:
    rows = raw.get("rows") if isinstance(raw, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def family(row: dict[str, Any]) -> str:
    if row.get("family"):
        return str(row["family"])
    name = str(row.get("feed", "")).split(":")[0]
    for base in ("fastdata-cpu", "fastdata-cuda", "fastdata-hybrid"):
        if name.startswith(base):
            return base
    return name


def row_out(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {"feed": family(row), "spec": row.get("feed"), "workers": row.get("workers"),
           "backend": row.get("backend"), "img_s": row.get("img_s")}
    for key in keys:
        out[key] = row.get(key)
    for key in ("decoder", "workers_chosen", "error", "skipped"):
        if row.get(key) is not None:
            out[key] = row[key]
    return out


def flat(series: list[Any], within: float = FLAT_WITHIN) -> bool | None:
    """Whether each value after epoch 2 is within ``within`` of epoch 2's;
    None without at least 3 epochs of numbers."""
    if len(series) < 3 or any(not isinstance(v, (int, float)) for v in series[1:]):
        return None
    ref = float(series[1])
    return all(abs(float(v) - ref) <= within * abs(ref) for v in series[2:])


def both(*values: bool | None) -> bool | None:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def best(rows: list[dict[str, Any]], feed: str, key: str = "pct_synthetic", workers: int | None = None,
         budget: int | None = None) -> dict[str, Any] | None:
    """The row of ``feed`` with the highest ``key`` in core budget ``budget``
    (None: unpinned), with at most ``workers`` workers where given."""
    fits = [r for r in rows if r["feed"] == feed and r.get("core_budget") == budget
            and isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)
            and (workers is None or (isinstance(r.get("workers"), int) and r["workers"] <= workers))]
    return max(fits, key=lambda r: r[key], default=None)


def brief(row: dict[str, Any] | None, key: str = "pct_synthetic") -> dict[str, Any] | None:
    if row is None:
        return None
    out = {"spec": row["spec"], key: row[key], "img_s": row["img_s"]}
    if row.get("cpu_share") is not None:
        out["cpu_share"] = row["cpu_share"]
    return out


def hybrid_targets(train: list[dict[str, Any]], decode: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 37's figures: the hybrid unpinned with <= 4 workers, pinned to 8
    cores (the CPU path's figure in the same budget beside it), decode-only."""
    unpinned = best(train, "fastdata-hybrid", workers=4)
    pinned = best(train, "fastdata-hybrid", budget=8)
    decode_best = best(decode, "fastdata-hybrid", key="img_s")
    return {
        "hybrid_train_ge_97pct_synthetic_le_4_workers": None if unpinned is None else unpinned["pct_synthetic"] >= HYBRID_PCT,
        "hybrid_train_best_le_4_workers": brief(unpinned),
        "hybrid_train_ge_95pct_synthetic_8_cores": None if pinned is None else pinned["pct_synthetic"] >= HYBRID_PINNED_PCT,
        "hybrid_train_best_8_cores": brief(pinned),
        "cpu_train_best_8_cores": brief(best(train, "fastdata-cpu", budget=8)),
        "cuda_train_best_8_cores": brief(best(train, "fastdata-cuda", budget=8)),
        "hybrid_decode_only_ge_20000": None if decode_best is None else decode_best["img_s"] >= HYBRID_DECODE,
        "hybrid_decode_only_best": brief(decode_best, "img_s"),
    }


def targets(train: list[dict[str, Any]], decode: list[dict[str, Any]], memory: dict[str, Any],
            tests: dict[str, Any]) -> dict[str, Any]:
    best_cuda = best(train, "fastdata-cuda", workers=4)
    timed = [r for r in decode if isinstance(r.get("img_s"), (int, float))]
    best_decode = max(timed, key=lambda r: r["img_s"], default=None)
    reserved = flat(memory["epochs_reserved_mib"])
    process = flat(memory["epochs_process_mib"])
    return {
        "cuda_train_ge_90pct_synthetic_le_4_workers": None if best_cuda is None else best_cuda["pct_synthetic"] >= PCT_TARGET,
        "cuda_train_best_le_4_workers": None if best_cuda is None else
        {"spec": best_cuda["spec"], "pct_synthetic": best_cuda["pct_synthetic"], "img_s": best_cuda["img_s"]},
        "decode_only_best_ge_10000": None if best_decode is None else best_decode["img_s"] >= DECODE_TARGET,
        "decode_only_best": None if best_decode is None else {"spec": best_decode["spec"], "img_s": best_decode["img_s"]},
        "memory_reserved_flat_after_epoch_2": reserved,
        "memory_process_flat_after_epoch_2": process,
        "memory_flat_after_epoch_2": both(reserved, process),
        "stream_test_can_fail": tests["stream_test_fails_without_guard"],
        **hybrid_targets(train, decode),
    }


def versions(raws: list[Any], probe: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw in raws:
        if isinstance(raw, dict) and isinstance(raw.get("versions"), dict):
            for key, value in raw["versions"].items():
                out.setdefault(key, value)
    if isinstance(probe, dict):
        out.setdefault("torch", probe.get("torch"))
        if probe.get("cuda_version"):
            out.setdefault("cuda", probe["cuda_version"])
    out.setdefault("python", platform.python_version())
    for dist in ("torch", "torchvision", "fastdata", "nvidia-nvimgcodec-cu13", "nvidia-nvimgcodec-cu12", "nvidia-dali-cuda120",
                 "pytest", "pytest-timeout"):
        key = {"nvidia-nvimgcodec-cu13": "nvidia.nvimgcodec", "nvidia-nvimgcodec-cu12": "nvidia.nvimgcodec",
               "nvidia-dali-cuda120": "nvidia.dali"}.get(dist, dist)
        if key in out:
            continue
        try:
            out[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def refine(parts: dict[str, dict[str, Any]], tests: dict[str, Any], stream: dict[str, Any] | None,
           raws: dict[str, Any]) -> None:
    """Better reasons than "exited N": the failed tests, the feeds that raised, the stream test's verdict."""
    p = parts["tests"]
    if p["status"] == "failed" and tests["failed"] is not None:
        names = tests["failures"][:5]
        p["reason"] = (f"{tests['failed']} failed, {tests['errors']} errors: " + ", ".join(names)
                       + (" ..." if len(tests["failures"]) > 5 else ""))
    for name in ("tests", "stream_test"):
        if parts[name]["rc"] == 5:
            parts[name]["reason"] = "pytest collected no test (exit 5)" + (
                ": the -k expression matched none; was the stream test renamed? (GPU_CHECK_STREAM_K)"
                if name == "stream_test" else "")
    p = parts["stream_test"]
    if p["status"] == "ok":
        verdict = tests["stream_test_fails_without_guard"]
        p["reason"] = {True: "without the guard the stream test failed, as it should",
                       False: "without the guard the stream test PASSED: it does not catch the hazard here",
                       None: "no unguarded stream test ran (all skipped or errors)"}[verdict]
    for name in ("decode_only", "train", "core_budget", "memory"):
        p, raw = parts[name], raws.get(name)
        if name == "core_budget":  # one raw file per budget
            budgets = raw if isinstance(raw, dict) else {}
            raw = {"rows": [r for b in budgets.values() for r in rows_of(b)]}
        if p["status"] != "failed" or not isinstance(raw, dict):
            continue
        errors = [f"{r.get('feed')} ({r['error']})" for r in rows_of(raw) if r.get("error")]
        if raw.get("error"):
            errors.append(str(raw["error"]))
        if errors:
            p["reason"] = f"{p['reason'] or 'failed'}: " + "; ".join(errors)[:600]


def summarise(work: str, out: str, wall: float | None = None, budget: float | None = None) -> dict[str, Any]:
    dirs = [work, out]
    parts = read_parts(find("parts.tsv", dirs))
    probe = read_json(find("probe.json", dirs))
    raws = {"decode_only": read_json(find("gpu_decode.json", dirs)), "train": read_json(find("gpu_train.json", dirs)),
            "memory": read_json(find("gpu_memory.json", dirs)),
            "core_budget": {str(n): read_json(find(f"gpu_train_cores{n}.json", dirs)) for n in CORE_BUDGETS}}

    results = junit(find("pytest_cuda.xml", dirs))
    stream = junit(find("pytest_stream.xml", dirs))
    tests: dict[str, Any] = {key: (results or {}).get(key) for key in ("passed", "failed", "errors", "skipped")}
    tests["failures"] = (results or {}).get("failures", [])
    tests["stream_test_fails_without_guard"] = stream_outcome(stream) if parts["stream_test"]["status"] == "ok" else None
    tests["stream_run"] = None if stream is None else {
        **{k: stream[k] for k in ("passed", "failed", "errors", "skipped")},
        # the same tests in the guarded run: they should have passed there
        "tests": {name: {"unguarded": outcome, "guarded": (results or {}).get("outcomes", {}).get(name)}
                  for name, outcome in stream["outcomes"].items()},
    }

    decode = [row_out(r, ("cpu_share",)) for r in rows_of(raws["decode_only"])]
    train = [row_out(r, ("pct_synthetic", "core_budget", "cpu_share")) for r in rows_of(raws["train"])
             if family(r) in TRAIN_FEEDS]
    for n in CORE_BUDGETS:  # each pinned run's rows; core_budget as the row says (null where it could not pin)
        train += [row_out(r, ("pct_synthetic", "core_budget", "cpu_share"))
                  for r in rows_of(raws["core_budget"][str(n)]) if family(r) in TRAIN_FEEDS]
    mem_raw = raws["memory"] if isinstance(raws["memory"], dict) else {}
    memory = {
        "feed": mem_raw.get("feed"),
        "epochs_reserved_mib": list(mem_raw.get("epochs_reserved_mib") or []),
        "epochs_process_mib": list(mem_raw.get("epochs_process_mib") or []),
        "epochs_device_used_mib": list(mem_raw.get("epochs_device_used_mib") or []),
        "process_mib_source": mem_raw.get("process_mib_source"),
    }
    if mem_raw.get("error"):
        memory["error"] = mem_raw["error"]
    refine(parts, tests, stream, raws)

    smi = None
    path = find("nvidia_smi.txt", dirs)
    if path:
        try:
            with open(path) as f:
                smi = f.read().strip() or None
        except OSError:
            pass
    device = probe.get("device") if isinstance(probe, dict) else None
    device = device or next((r["versions"]["gpu"] for r in (raws["decode_only"], raws["train"], raws["memory"])
                             if isinstance(r, dict)
                             and isinstance(r.get("versions"), dict) and r["versions"].get("gpu")), None)
    device = device or (smi.splitlines()[0].split(",")[0].strip() if smi else None)
    result = {
        "device": device,
        "nvidia_smi": smi,
        "cuda": probe.get("cuda") if isinstance(probe, dict) else None,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": wall,
        "budget_s": budget,
        "versions": versions([raws["decode_only"], raws["train"], raws["memory"], *raws["core_budget"].values()], probe),
        "tests": tests,
        "decode_only": decode,
        "train": train,
        "memory": memory,
        "parts": parts,
        "targets": targets(train, decode, memory, tests),
        "raw": raws,
    }
    return result


def fmt(value: Any, spec: str = ",.1f", none: str = "-") -> str:
    if value is None:
        return none
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, (int, float)):
        return format(value, spec)
    return str(value)


def text(result: dict[str, Any], log: str | None = None) -> str:
    lines: list[str] = []
    add = lines.append
    v = result["versions"]
    add(f"gpu_check {result['date']}  device: {result['device'] or 'none (no CUDA)'}"
        + (f"  wall {result['wall_s']:g} s of a {result['budget_s']:g} s budget" if result.get("wall_s") is not None
           and result.get("budget_s") is not None else ""))
    if result.get("nvidia_smi"):
        add(f"nvidia-smi: {result['nvidia_smi']}")
    add("versions: " + ", ".join(f"{k} {v[k]}" for k in ("python", "torch", "cuda", "torchvision", "fastdata",
                                                         "nvidia.nvimgcodec", "nvidia.dali", "cpus") if v.get(k)))
    add("")
    add(f"{'part':<13}{'status':<9}{'seconds':>8}{'box s':>7}  reason")
    for name, p in result["parts"].items():
        add(f"{name:<13}{p['status']:<9}{fmt(p['seconds']):>8}{fmt(p['limit_s'], 'd'):>7}  {p['reason'] or ''}")
    t = result["tests"]
    add("")
    add(f"tests (cuda-marked): {fmt(t['passed'], 'd')} passed, {fmt(t['failed'], 'd')} failed, "
        f"{fmt(t['errors'], 'd')} errors, {fmt(t['skipped'], 'd')} skipped; "
        f"the stream test fails without its guard: {fmt(t['stream_test_fails_without_guard'], none='unknown')}")
    for name in t["failures"]:
        add(f"  FAILED {name}")
    add("")
    add("decode-only (decode + RandomResizedCrop + flip + normalise), img/s")
    add(f"  {'feed':<15}{'backend':<13}{'workers':>8}{'img/s':>11}  decoder / note")
    for r in result["decode_only"]:
        note = r.get("error") or (f"skipped: {r['skipped']}" if r.get("skipped") else r.get("decoder", ""))
        add(f"  {r['feed']:<15}{fmt(r['backend']):<13}{fmt(r['workers'], 'd'):>8}{fmt(r['img_s']):>11}  {note}")
    if not result["decode_only"]:
        add("  (none)")
    add("")
    add("train ResNet-50 bf16 channels_last: img/s and % of synthetic (of the same core budget's synthetic row);")
    add("cores: the whole process pinned to that many (- unpinned); share: samples the CPU cropped (the hybrid's settled share)")
    add(f"  {'feed':<16}{'spec':<34}{'cores':>6}{'workers':>8}{'img/s':>10}{'% synth':>9}{'share':>7}  note")
    for r in result["train"]:
        note = r.get("error") or (f"skipped: {r['skipped']}" if r.get("skipped") else r.get("decoder", ""))
        add(f"  {r['feed']:<16}{fmt(r['spec']):<34}{fmt(r.get('core_budget'), 'd'):>6}{fmt(r['workers'], 'd'):>8}"
            f"{fmt(r['img_s']):>10}{fmt(r['pct_synthetic']):>9}{fmt(r.get('cpu_share'), '.2f'):>7}  {note}")
    if not result["train"]:
        add("  (none)")
    m = result["memory"]
    add("")
    add(f"GPU memory after each epoch ({m['feed'] or 'not measured'}), MiB; process memory from "
        f"{m['process_mib_source'] or 'nowhere'}" + (f"; ERROR {m['error']}" if m.get("error") else ""))
    add(f"  {'epoch':>5}{'reserved':>11}{'process':>11}{'device used':>13}")
    res, proc, used = m["epochs_reserved_mib"], m["epochs_process_mib"], m["epochs_device_used_mib"]
    for i in range(max(len(res), len(proc), len(used))):
        pick = lambda s: s[i] if i < len(s) else None  # noqa: E731
        add(f"  {i + 1:>5}{fmt(pick(res)):>11}{fmt(pick(proc)):>11}{fmt(pick(used)):>13}")
    g = result["targets"]
    add("")
    add("targets")
    best = g["cuda_train_best_le_4_workers"]
    add(f"  decode='cuda' training >= {PCT_TARGET:g} % of synthetic with <= 4 workers: "
        f"{fmt(g['cuda_train_ge_90pct_synthetic_le_4_workers'], none='unknown')}"
        + (f" (best {best['pct_synthetic']} %, {best['spec']})" if best else ""))
    best = g["decode_only_best"]
    add(f"  best decode-only >= {DECODE_TARGET:,.0f} img/s: {fmt(g['decode_only_best_ge_10000'], none='unknown')}"
        + (f" ({fmt(best['img_s'])}, {best['spec']})" if best else ""))
    add(f"  GPU memory flat within {FLAT_WITHIN:.0%} after epoch 2: {fmt(g['memory_flat_after_epoch_2'], none='unknown')}"
        f" (reserved {fmt(g['memory_reserved_flat_after_epoch_2'], none='unknown')}, "
        f"process {fmt(g['memory_process_flat_after_epoch_2'], none='unknown')})")
    add(f"  the stream test can fail (unguarded): {fmt(g['stream_test_can_fail'], none='unknown')}")

    def said(row: dict[str, Any] | None, key: str = "pct_synthetic") -> str:
        if row is None:
            return ""
        share = f", share {row['cpu_share']:.2f}" if row.get("cpu_share") is not None else ""
        return f" ({fmt(row[key])}{' %' if key == 'pct_synthetic' else ' img/s'}, {row['spec']}{share})"

    add(f"  the hybrid >= {HYBRID_PCT:g} % of synthetic with <= 4 workers, unpinned: "
        f"{fmt(g['hybrid_train_ge_97pct_synthetic_le_4_workers'], none='unknown')}{said(g['hybrid_train_best_le_4_workers'])}")
    add(f"  the hybrid >= {HYBRID_PINNED_PCT:g} % of synthetic pinned to 8 cores: "
        f"{fmt(g['hybrid_train_ge_95pct_synthetic_8_cores'], none='unknown')}{said(g['hybrid_train_best_8_cores'])}"
        + (f"; decode='cpu' there{said(g['cpu_train_best_8_cores'])}" if g["cpu_train_best_8_cores"] else ""))
    add(f"  the hybrid's decode-only >= {HYBRID_DECODE:,.0f} img/s: "
        f"{fmt(g['hybrid_decode_only_ge_20000'], none='unknown')}{said(g['hybrid_decode_only_best'], 'img_s')}")
    if log and os.path.isfile(log):
        try:
            with open(log, errors="replace") as f:
                tail = f.read().splitlines()[-25:]
        except OSError:
            tail = []
        if tail:
            add("")
            add(f"last lines of {os.path.basename(log)}:")
            lines.extend("  " + line for line in tail)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", required=True, help="the folder of the parts' files")
    ap.add_argument("--out", required=True, help="where gpu_check.json and summary.txt go")
    ap.add_argument("--wall", type=float, help="seconds the whole check took")
    ap.add_argument("--budget", type=float, help="its budget in seconds")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    result = summarise(args.parts, args.out, args.wall, args.budget)
    with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
        json.dump(result, f, indent=1)
    summary = text(result, find("pytest_cuda.log", [args.out, args.parts]))
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(summary)
    sys.stdout.write(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
