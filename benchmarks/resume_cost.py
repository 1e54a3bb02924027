"""What elastic exact resume (issue 31) costs: the state's size, the time to
take and load it at a 1.28 M-sample epoch, and the per-batch time of a loader
before and after the change.

* ``state``: a map-style loader over 1,280,000 samples (nothing is read):
  8 ranks of batch 256 stop after 300 batches, 6 ranks go on for 100 more,
  then 3 ranks of batch 512; at each stop the state's JSON size and the
  time of ``state_dict()`` and of ``load_state_dict()`` into the next job,
  and the time to work out a rank's order of the rest (the resumed pass's
  first ``iter()``) against a fresh epoch's. The same chain for a stream's
  order (1,024 shards of 1,250 records, shuffle_buffer 512; the order
  functions, as no 1.28 M-record stream is written).
* ``sequential``: how sequential a stream's reads stay: 20,000 records in
  shards of about 500, shuffle_buffer 512, batch 32, one reader per rank;
  an uninterrupted epoch on 4 ranks against the same epoch stopped on 4
  ranks and finished on 3 and then 2. For each job, the share of reads
  that take the next record of the shard the rank read last ("next"), and
  that go forward in it, skipping some ("forward"); the rest open another
  shard or seek back.
* ``per_batch``: µs per batch of ``make_loader`` (no workers, batch 32, a
  trivial in-memory dataset, so the loader's own work dominates), for
  ``--base`` (the library with the files this change touched read from that
  commit with ``git show``) and the working tree, in child processes,
  interleaved round by round; median and spread over ``--rounds``.

    python benchmarks/resume_cost.py [--rounds 7] [--base 0f67497^] [--json out.json]

``--base`` must be this change's parent with nothing else changed in the
working tree's copies of those files: the base is the working tree with them
read from ``--base``, so anyone else's edits to them would count as this change.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N = 1_280_000
# the files this change touched, and those it added (absent at the base)
CHANGED = ["fastdata/loading/loader.py", "fastdata/loading/state.py", "fastdata/loading/sampler.py",
           "fastdata/loading/streamed.py", "fastdata/order/partition.py", "fastdata/order/seeds.py"]
ADDED = ["fastdata/order/unread.py", "fastdata/order/progress.py"]
# iterable.py changes under other work too: the base is today's file with this change's two lines undone
UNDONE = {"fastdata/datasets/iterable.py": [
    ("records, groups = share.reading(self.shards.counts)", "records = share.records(self.shards.counts)"),
    ("deal.chunks(len(records), share.window, groups)", "deal.chunks(len(records), share.window)"),
]}

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import fastdata
from fastdata import make_loader, rng
n_batches, batch = int(sys.argv[2]), 32

class Tiny:
    def __len__(self):
        return n_batches * batch
    def __getitem__(self, key):
        with rng.sample_scope(key) as i:
            return np.full((4, 4, 3), i % 256, np.uint8), i

loader = make_loader(Tiny(), batch, workers=0, seed=0)
for _ in loader:  # warm-up epoch
    pass
t0 = time.perf_counter()
count = sum(1 for _ in loader)
print(json.dumps({"us_per_batch": (time.perf_counter() - t0) / count * 1e6, "file": fastdata.__file__}))
"""


class _Sized:
    """A dataset of ``n`` samples that is never read (only its length matters here)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):
        raise RuntimeError("not read in this benchmark")


def _best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _map_chain() -> list[dict]:
    from fastdata import make_loader

    jobs = [(8, 256, 300), (6, 256, 100), (3, 512, None)]
    rows, state = [], None
    for world, batch, stop in jobs:
        loader = make_loader(_Sized(N), batch, rank=world - 1, world_size=world, workers=0, seed=1)
        row: dict = {"world_size": world, "batch_size": batch}
        if state is not None:
            row["load_state_dict_s"] = _best(lambda: loader.load_state_dict(state))
        sampler, unread = loader.order, loader._unread
        row["order_of_the_rest_s"] = _best(lambda: sampler.share_of(0, unread).records(total=N), 3)
        row["order_of_a_fresh_epoch_s"] = _best(lambda: sampler.share_of(0).records(total=N), 3)
        if stop is not None:
            loader._running, loader._consumed = True, stop  # as if every rank had taken `stop` batches
            row["state_dict_s"] = _best(loader.state_dict)
            state = loader.state_dict()
            row["state_json_bytes"] = len(json.dumps(state))
            row["unread_spans"] = state["unread"].count(",") + 1
        rows.append(row)
    return rows


def _stream_chain() -> list[dict]:
    from fastdata.order.partition import Share
    from fastdata.order.progress import Pass, unread_after
    from fastdata.order.unread import Unread

    counts = np.full(1024, N // 1024)
    jobs = [(8, 256, 300), (6, 256, 100), (3, 512, None)]
    rows, unread = [], Unread.whole(N)
    for world, batch, stop in jobs:
        share = Share(1, 0, world - 1, world, remainder="pad", window=512, unread=unread)
        fresh = Share(1, 0, world - 1, world, remainder="pad", window=512)
        row: dict = {"world_size": world, "batch_size": batch,
                     "order_of_the_rest_s": _best(lambda: share.reading(counts), 3),
                     "order_of_a_fresh_epoch_s": _best(lambda: fresh.reading(counts), 3)}
        if stop is not None:
            plan = Pass(world, False, "pad", batch, True)
            row["state_dict_s"] = _best(lambda: unread_after(unread, plan, stop, N))
            unread = unread_after(unread, plan, stop, N)
            row["unread_spans"] = len(unread.spans)
            row["unread_text_bytes"] = len(unread.text())
        rows.append(row)
    return rows


def _stream_job(data: str, world: int, state: dict | None, stop: int | None) -> tuple[dict | None, dict]:
    """One job over the stream at ``data``: its state and how sequential its ranks' reads were."""
    from fastdata import make_loader, open_dataset

    nexts, forwards, reads, states = [], [], 0, []
    for rank in range(world):
        stream = open_dataset(data, streaming=True, decode=False)
        log: list[tuple[int, int]] = []

        def logged(shard: int, local: int, log=log, real=stream.shards.read):
            log.append((shard, local))
            return real(shard, local)

        stream.shards.read = logged
        loader = make_loader(stream, 32, rank=rank, world_size=world, seed=1, workers=0, collate_fn=list)
        if state is not None:
            loader.load_state_dict(state)
        for step, _ in enumerate(loader):
            if stop is not None and step + 1 == stop:
                break
        states.append(loader.state_dict())
        pairs = list(zip(log, log[1:]))
        nexts.append(sum(b == (a[0], a[1] + 1) for a, b in pairs) / max(len(pairs), 1))
        forwards.append(sum(b[0] == a[0] and b[1] > a[1] for a, b in pairs) / max(len(pairs), 1))
        reads += len(log)
    shares = {"next": statistics.mean(nexts), "forward": statistics.mean(forwards), "reads": reads}
    return states[0], shares


def _sequential(base: str) -> dict:
    from fastdata.formats import Sample
    from fastdata.formats.dataset_writer import write_dataset

    n = 20_000
    with tempfile.TemporaryDirectory() as tmp:
        items = [Sample(image=b"%08d" % i, label=0, id=i) for i in range(n)]
        write_dataset(tmp, "recordio", items, ["0"], shard_bytes=500 * 24)
        child = (f"import sys, json; sys.path[:0] = [{base!r}, {str(Path(__file__).parent)!r}]; import resume_cost; "
                 f"print(json.dumps(resume_cost._stream_job({tmp!r}, 4, None, None)[1]))")
        out = {"base_uninterrupted_4_ranks": json.loads(subprocess.run(
            [sys.executable, "-c", child], check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])}
        out["uninterrupted_4_ranks"] = _stream_job(tmp, 4, None, None)[1]
        state = None
        for world, stop in ((4, 50), (3, 40), (2, None)):
            state, out[f"resumed_{world}_ranks"] = _stream_job(tmp, world, state, stop)
    return out


def _base_checkout(base: str, into: Path) -> Path:
    shutil.copytree(ROOT / "fastdata", into / "fastdata", ignore=shutil.ignore_patterns("__pycache__"))
    for path in CHANGED:
        text = subprocess.run(["git", "show", f"{base}:{path}"], cwd=ROOT, check=True, capture_output=True).stdout
        (into / path).write_bytes(text)
    for path in ADDED:
        (into / path).unlink(missing_ok=True)
    for path, edits in UNDONE.items():
        text = (into / path).read_text()
        for new, old in edits:
            text = text.replace(new, old)
        (into / path).write_text(text)
    return into


def _per_batch(base: str, rounds: int, batches: int) -> dict:
    variants = {"base": base, "new": str(ROOT)}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds):
        order = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for name in order:
            out = subprocess.run([sys.executable, "-c", CHILD, variants[name], str(batches)], check=True,
                                 capture_output=True, text=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            if not got["file"].startswith(variants[name]):
                raise RuntimeError(f"{name} imported {got['file']}, not {variants[name]}")
            times[name].append(got["us_per_batch"])
    return {name: {"median_us": statistics.median(t), "min_us": min(t), "max_us": max(t), "rounds": t}
        for name, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batches", type=int, default=1500, help="batches per timed epoch (per_batch)")
    parser.add_argument("--base", default="0f67497^",
                        help="the commit the base reads the changed files from (default: the parent of the resume change)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true",
                        help="the state figures only (no base checkout: runs outside a git clone)")
    args = parser.parse_args()
    import torch

    import fastdata

    result = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": len(__import__("os").sched_getaffinity(0)), "torch": torch.__version__,
                    "numpy": np.__version__, "fastdata": fastdata.__version__},
        "epoch_samples": N,
        "map_style": _map_chain(),
        "stream_order": _stream_chain(),
    }
    if not args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            base = str(_base_checkout(args.base, Path(tmp)))
            result["sequential"] = _sequential(base)
            result["per_batch"] = _per_batch(base, args.rounds, args.batches)
    for part in ("map_style", "stream_order"):
        print(part)
        for row in result[part]:
            print("  " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    if args.quick:
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
        return 0
    print("stream reads (share of reads, mean over ranks)")
    for name, row in result["sequential"].items():
        print(f"  {name}: next record {row['next']:.3f}, forward in the shard {row['forward']:.3f}, "
              f"{row['reads']} reads")
    base, new = result["per_batch"]["base"], result["per_batch"]["new"]
    print(f"per batch (us, median [min-max] of {args.rounds}): "
          f"base {base['median_us']:.1f} [{base['min_us']:.1f}-{base['max_us']:.1f}], "
          f"new {new['median_us']:.1f} [{new['min_us']:.1f}-{new['max_us']:.1f}], "
          f"new/base {new['median_us'] / base['median_us']:.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
