"""Per-sample cost of the loader threads' batch planning, before/after, two checkouts interleaved.

The batch path (fastdata/loading/batched.py) plans each sample in Python, holding the GIL
(stream, record read, header, draws, crop plan), then decodes the whole batch in one C call.
This times the planning alone: one epoch of keys, batch by batch, in thread CPU time per
sample (robust on a shared machine), each checkout in its own process, alternately:

    git worktree add /tmp/before <commit>; cp fastdata/decode/_cropdecode*.so /tmp/before/fastdata/decode/
    python benchmarks/batch_planning.py DATA --variant before=/tmp/before --variant after=. --rounds 5

It also prints a digest of every plan (record bytes, decode request, target): the variants
must give the same digest, or the change altered an output.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys

CHILD = r"""
import hashlib, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import numpy, fastdata
from torch.utils.data import BatchSampler
from fastdata import Workers, make_loader, open_dataset
from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop
data, pipe, epochs = sys.argv[2], sys.argv[3], int(sys.argv[4])
train = pipe == "train"
tf = Compose([RandomResizedCrop(224), RandomHorizontalFlip()]) if train else ResizedCenterCrop(256, 224)
ds = open_dataset(data, transform=tf)
loader = make_loader(ds, 32, train=train, seed=0, workers=Workers(num=2, kind="threads"))
b = loader.dataloader._batcher
assert b is not None, "no batch path in this checkout/set-up"
if hasattr(b, "plans"):  # one plan half for every executor (issue 30): the old (data, (size, request), target) rows
    from fastdata.decode.batch import batch_request
    def row(p):
        q = p.plan
        return p.data, (q.size, batch_request(p.data, p.info, q.box, min_size=q.min_size, snap=q.snap, flip=q.flip)), p.target
    plans = lambda keys: [None if p is None else row(p) for p in b.plans.plans(keys)]
else:
    plans = b._plans if hasattr(b, "_plans") else (lambda keys: [b._plan(k) for k in keys])
digest, per = hashlib.sha256(), []
for epoch in range(epochs):
    loader.set_epoch(epoch) if hasattr(loader, "set_epoch") else loader.dataloader.sampler.set_epoch(epoch)
    batches = list(BatchSampler(loader.dataloader.sampler, 32, False))
    spent = 0.0
    for keys in batches:  # one batch's plans alive at a time, as in the loader
        t = time.thread_time()
        batch = plans(keys)
        spent += time.thread_time() - t
        for p in batch:
            digest.update(b"none" if p is None else hashlib.sha256(bytes(p[0])).digest() + repr((p[1], p[2])).encode())
        del batch
    per.append(spent / sum(map(len, batches)) * 1e6)
print(json.dumps({"us": statistics.median(per), "file": fastdata.__file__, "digest": digest.hexdigest()[:16], "numpy": numpy.__version__}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="a converted dataset directory both checkouts can read")
    ap.add_argument("--variant", action="append", required=True, help="NAME=CHECKOUT")
    ap.add_argument("--pipes", default="train,eval")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    variants = [v.split("=", 1) for v in args.variant]
    us: dict[tuple[str, str], list[float]] = {}
    digests: dict[tuple[str, str], set[str]] = {}
    for r in range(args.rounds):
        for pipe in args.pipes.split(","):
            for name, path in variants if r % 2 == 0 else variants[::-1]:
                cmd = [sys.executable, "-c", CHILD, path, args.data, pipe, str(args.epochs)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode:
                    print(f"{name} {pipe} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                    return 1
                row = json.loads(done.stdout.strip().splitlines()[-1])
                us.setdefault((name, pipe), []).append(row["us"])
                digests.setdefault((name, pipe), set()).add(row["digest"])
    base = variants[0][0]
    rows = []
    print(f"{'pipe':6s} {'variant':10s} {'us/sample':>10s} {'spread':>7s} {'vs ' + base:>9s}  digest")
    for pipe in args.pipes.split(","):
        ref = statistics.median(us[(base, pipe)])
        for name, _ in variants:
            vals = us[(name, pipe)]
            med = statistics.median(vals)
            rows.append({"pipe": pipe, "variant": name, "us_per_sample": med, "runs": vals,
                         "vs_first": med / ref, "digests": sorted(digests[(name, pipe)])})
            print(f"{pipe:6s} {name:10s} {med:10.1f} {max(vals) / min(vals):7.2f} {med / ref:9.2f}  "
                  f"{','.join(sorted(digests[(name, pipe)]))}")
    same = all(len({d for (n, p), ds in digests.items() if p == pipe for d in ds}) == 1 for pipe in args.pipes.split(","))
    print("plans identical across variants:", same)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": platform.platform(), "python": platform.python_version(), "rows": rows,
                       "identical": same}, f, indent=1)
    return 0 if same else 2


if __name__ == "__main__":
    raise SystemExit(main())
