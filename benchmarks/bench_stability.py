"""Does ``fastdata bench`` give the same MET/MISSED twice? Run it N times and compare the targets.

    python benchmarks/bench_stability.py [SRC] --runs 2 --out /tmp/stability [--bench-args "--rounds 5"]

Each run is a separate ``python -m fastdata bench SRC --groups train,eval``
(the groups the targets read; shards are converted once and cached, so later
runs only time). Prints, per target, each run's verdict, ratio and the
rounds' range, whether the verdicts agree, and each run's warnings (a busy
machine or noisy rows make a disagreement expected, not a finding); writes
the same as ``stability.json``. Exit status 0 when every target got the same
verdict in every run, 1 otherwise.

    python benchmarks/bench_stability.py --quick   # a check that it runs: two `fastdata bench --quick` runs

It runs from any directory: the bench runs in ``--out`` (made absolute first),
so a checkout in the current directory cannot shadow the installed fastdata.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path


IMPORT_FIX = (
    "install fastdata (`pip install -e .` in the checkout), and run from outside the checkout after a "
    "non-editable `pip install .` (its fastdata/ folder has no converters/ and would be imported instead)"
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src", nargs="?", help="ImageFolder tree (default: the bench's generated set)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--out", default="bench-stability", help="where the runs' results go (default: ./bench-stability)")
    p.add_argument("--bench-args", default="", help="more fastdata bench arguments, one string (e.g. \"--rounds 5\")")
    p.add_argument("--quick", action="store_true",
                   help="a check that the script runs, not a measurement: each run is `fastdata bench --quick`, and "
                        "the exit status does not judge the verdicts")
    args = p.parse_args(argv)
    try:
        import fastdata.converters.cli  # noqa: F401 - what `python -m fastdata` runs
    except ImportError as exc:
        raise SystemExit(f"bench_stability: cannot import fastdata.converters ({exc}); {IMPORT_FIX}") from None
    if args.src is not None and not Path(args.src).exists():
        raise SystemExit(f"bench_stability: {args.src}: no such folder; give an ImageFolder tree or a converted "
                         "directory, or leave SRC out for the bench's generated set")
    src = [str(Path(args.src).resolve())] if args.src else []
    out = Path(args.out).resolve()  # the runs start there: every path they get is absolute
    out.mkdir(parents=True, exist_ok=True)
    extra = shlex.split(args.bench_args) + (["--quick"] if args.quick else [])
    docs = []
    for i in range(args.runs):
        run_dir = out / f"run{i + 1}"
        cmd = [sys.executable, "-m", "fastdata", "bench", *src, "--groups", "train,eval", "--out", str(run_dir), *extra]
        print(f"run {i + 1}/{args.runs}: {' '.join(cmd)}", file=sys.stderr, flush=True)
        # in OUT, not the current directory: `python -m` puts it first on sys.path, and a checkout there
        # (its fastdata/ has no converters/) would be imported instead of the installed package
        said = ""
        with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=out) as run:
            for line in run.stderr:  # the bench's progress, passed on; its last line kept for a failure
                sys.stderr.write(line)
                said = line.strip() or said
        if run.returncode != 0 or not (run_dir / "results.json").is_file():
            raise SystemExit(f"bench_stability: run {i + 1} (fastdata bench) failed with exit status "
                             f"{run.returncode}: {said or 'no results.json written'}")
        docs.append(json.loads((run_dir / "results.json").read_text()))
    report = compare(docs)
    (out / "stability.json").write_text(json.dumps(report, indent=1))
    for line in lines(report):
        print(line)
    if args.quick:
        print("--quick: a check that the script runs; the verdicts of quick runs are not judged")
        return 0
    return 0 if report["same_verdicts"] else 1


def compare(docs: list[dict]) -> dict:
    targets: dict[str, list[dict]] = {}
    for doc in docs:
        for t in doc["settings"]["targets"]:
            targets.setdefault(t["target"], []).append(t)
    rows = []
    for key, runs in targets.items():
        verdicts = [t["verdict"] for t in runs]
        rows.append({"target": key, "label": runs[0]["label"], "same": len(set(verdicts)) == 1,
                     "runs": [{"verdict": t["verdict"], "ratio": t["ratio"], "round_ratios": t["round_ratios"],
                               "warnings": t["warnings"]} for t in runs]})
    return {"judged_configuration": docs[0]["settings"]["judged_configuration"],
            "same_verdicts": all(r["same"] for r in rows), "targets": rows,
            "run_warnings": [doc["warnings"] for doc in docs],
            "machines": [{k: doc["machine"][k] for k in ("date", "cpu_model", "cpu_affinity", "load_average")} for doc in docs]}


def lines(report: dict) -> list[str]:
    out = [f"judged on: {report['judged_configuration']}"]
    for row in report["targets"]:
        runs = "  ".join(
            f"{r['verdict']} {r['ratio']:.2f}x [{min(r['round_ratios']):.2f}-{max(r['round_ratios']):.2f}]"
            if r["ratio"] is not None else r["verdict"] for r in row["runs"])
        out.append(f"{'same     ' if row['same'] else 'DIFFERENT'} {row['label']}: {runs}")
    for i, warnings in enumerate(report["run_warnings"], 1):
        out += [f"run {i}: {w}" for w in warnings]
    out.append("every target got the same verdict in every run" if report["same_verdicts"]
               else "the verdicts differ between runs")
    return out


if __name__ == "__main__":
    sys.exit(main())
