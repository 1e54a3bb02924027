"""``fastdata convert --engine ray|spark`` against ``fastdata convert --workers 2``, on this machine.

Variants, run interleaved (one of each per round, in a rotating order), each
converting the same photos into RecordIO with the same arguments:

* ``local2``: ``fastdata convert --workers 2``, a fresh process (forked workers);
* ``ray2``: ``--engine ray`` on a two-node local Ray cluster (two ``ray start``
  on 127.0.0.1, one CPU each), started once before the rounds, as a user's
  cluster is running before they convert (and a warm-up round, not counted,
  lets its workers import fastdata once);
* ``spark2``: ``--engine spark`` on a Spark ``local[2,2]`` session, started once.

Every output is compared byte for byte with ``local2``'s. The figure is each
engine's images per second as a ratio to ``local2``'s in the same round
(median over rounds): the engines' overhead against the work. From the local
run's cost per source byte (worker-seconds per MB) and the engines' extra
seconds per task, it also works out on paper what converting ImageNet's
1.28 M training photos (about 140 GB) takes on 8 and 64 nodes of
``--cores-per-node`` cores, with 64 MB shards.

Needs the extras ``ray`` and ``spark``; the clusters are ``clusters.py`` beside
it (the engine tests start the same ones).

    python benchmarks/engine_convert.py [--photos DIR] [--copies 4] [--rounds 3] [--warmup 1] [--json out.json]
    python benchmarks/engine_convert.py --quick   # a check that it runs: 1 round, the photos once
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMAGENET = {"images": 1_281_167, "bytes": 140 * 10**9}  # ILSVRC-2012 train: 1.28 M JPEGs, ~140 GB
SHARD_BYTES = 64 << 20  # fastdata convert's default --shard-size


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--photos", help="an ImageFolder of JPEGs (default: generated photo-like JPEGs)")
    p.add_argument("--generate", type=int, default=400, help="photos to generate without --photos (default 400)")
    p.add_argument("--copies", type=int, default=4, help="hard-link each photo this many times (default 4)")
    p.add_argument("--shards", type=int, default=8, help="shards of the conversion (default 8)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1,
                   help="rounds run first and not counted (default 1): the engines' workers import fastdata once")
    p.add_argument("--cores-per-node", type=int, default=16, help="cores of a node on paper (default 16)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--quick", action="store_true", help="1 round, 40 photos once: a check that it runs")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.warmup, args.copies, args.generate = 1, 0, 1, 40
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import pyspark  # noqa: F401
        import ray

        from clusters import RayNodes, spark_session
    except ImportError as exc:
        raise SystemExit(f"engine_convert.py: {exc}; pip install -e '.[ray,spark]' in a checkout "
                         "(benchmarks/clusters.py starts the clusters)") from None
    from photos import photo_folder

    from fastdata.converters.cli import main as fastdata

    scratch = Path(tempfile.mkdtemp(prefix="engine-convert-"))
    source = _copies(photo_folder("engine_convert.py", args.photos, args.generate), scratch / "src", args.copies)
    images = sum(1 for p in source.rglob("*") if p.is_file())
    nbytes = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    common = ["--format", "recordio", "--shards", str(args.shards), "-q"]
    nodes = RayNodes(scratch)
    spark = None
    try:
        nodes.connect()
        spark = spark_session(attempts=2)
        runs: dict[str, list[float]] = {"local2": [], "ray2": [], "spark2": []}

        def run(name: str, out: Path) -> float:
            shutil.rmtree(out, ignore_errors=True)
            start = time.perf_counter()
            if name == "local2":  # a fresh process: this one runs Ray's and Spark's threads, so it would spawn
                subprocess.run([sys.executable, "-m", "fastdata", "convert", str(source), str(out), *common,
                                "--workers", "2"], check=True, cwd=scratch)
            else:
                code = fastdata(["convert", str(source), str(out), *common, "--engine", name[:-1], "--workers", "2"])
                if code != 0:
                    raise SystemExit(f"engine_convert.py: {name} exited {code}")
            return time.perf_counter() - start

        order = list(runs)
        for r in range(args.warmup + args.rounds):
            for name in order[r % 3:] + order[:r % 3]:
                seconds = run(name, scratch / name)
                if r >= args.warmup:
                    runs[name].append(seconds)
            reference = _files(scratch / "local2")
            for name in ("ray2", "spark2"):
                if _files(scratch / name) != reference:
                    raise SystemExit(f"engine_convert.py: {name}'s output differs from local2's")
    finally:
        if spark is not None:
            spark.stop()
        nodes.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    doc = _results(runs, images, nbytes, args)
    _table(doc)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def _copies(photos: Path, out: Path, copies: int) -> Path:
    for path in sorted(photos.rglob("*")):
        if path.is_file() and path.suffix.lower() in (".jpg", ".jpeg"):
            rel = path.relative_to(photos)
            (out / rel.parent).mkdir(parents=True, exist_ok=True)
            for k in range(copies):
                os.link(path, out / rel.parent / f"{rel.stem}-{k}{rel.suffix}")
    return out


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _results(runs: dict[str, list[float]], images: int, nbytes: int, args) -> dict:
    import pyspark
    import ray

    import fastdata

    local = statistics.median(runs["local2"])
    ratios = {name: statistics.median(runs["local2"][r] / runs[name][r] for r in range(args.rounds))
              for name in ("ray2", "spark2")}
    # worker-seconds per source byte on this machine (2 workers busy for the local run's wall time)
    per_byte = 2 * local / nbytes
    tasks = args.shards  # one task per shard (more when the tail is cut: a lower bound on the tasks)
    overhead = {name: max(0.0, 2 * (statistics.median(runs[name]) - local) / tasks) for name in ("ray2", "spark2")}
    shards = -(-IMAGENET["bytes"] // SHARD_BYTES)
    paper = {}
    for name in ("ray2", "spark2"):
        per_shard = SHARD_BYTES * per_byte + overhead[name]
        for nodes in (8, 64):
            cores = nodes * args.cores_per_node
            paper[f"{name[:-1]}-{nodes}-nodes"] = {
                "cores": cores, "shards": shards, "seconds_per_shard": round(per_shard, 2),
                "minutes": round(-(-shards // cores) * per_shard / 60, 1)}
    return {
        "benchmark": "engine_convert", "date": time.strftime("%Y-%m-%d"), "quick": args.quick,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {"fastdata": fastdata.__version__, "ray": ray.__version__, "pyspark": pyspark.__version__},
        "photos": images, "source_bytes": nbytes, "shards": args.shards, "rounds": args.rounds,
        "warmup_rounds": args.warmup,
        "seconds": {name: [round(s, 3) for s in values] for name, values in runs.items()},
        "images_per_second": {name: round(images / statistics.median(v), 1) for name, v in runs.items()},
        "ratio_to_local2": {name: round(v, 3) for name, v in ratios.items()},
        "worker_seconds_per_mb": round(per_byte * 1e6, 4),
        "engine_seconds_per_task": {name: round(v, 3) for name, v in overhead.items()},
        "imagenet_on_paper": {"assumes": f"{args.cores_per_node} cores a node, 64 MB shards, per-byte cost of this "
                                         "machine's local run, sources read as fast as here (no storage limit)",
                              **paper},
    }


def _table(doc: dict) -> None:
    print(f"{doc['photos']} photos ({doc['source_bytes'] / 1e6:.1f} MB), {doc['shards']} shards, "
          f"{doc['rounds']} round(s)")
    print(f"{'variant':8} {'img/s':>8} {'x local2':>9} {'s/task extra':>13}")
    for name, rate in doc["images_per_second"].items():
        ratio = doc["ratio_to_local2"].get(name, 1.0)
        extra = doc["engine_seconds_per_task"].get(name, 0.0)
        print(f"{name:8} {rate:8.1f} {ratio:9.2f} {extra:13.3f}")
    print("ImageNet (1.28 M photos) on paper:")
    for key, row in doc["imagenet_on_paper"].items():
        if key != "assumes":
            print(f"  {key:16} {row['cores']:5} cores  {row['shards']} shards  {row['minutes']:7.1f} min")


if __name__ == "__main__":
    raise SystemExit(main())
