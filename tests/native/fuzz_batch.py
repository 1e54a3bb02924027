"""Fuzz decode_batch (fastdata/decode/_native/batch.c, the batch entry point of
the loader threads) under AddressSanitizer + UndefinedBehaviorSanitizer.

batch.c is Python glue (argument parsing, layouts, slots, the planar copy)
around fd_decode_resized, which tests/native/fuzz.py fuzzes on its own. So
this builds the whole extension with the sanitizers into a temporary copy of
the package, preloads their runtimes into a Python that is not instrumented,
and sends mutated seed JPEGs (fuzz.py's seeds) through decode_batch in
random batch layouts (NCHW, NHWC), output sizes, slots and malformed items,
and strided images of right and wrong sizes through copy_into.
Passes when the run exits cleanly with no sanitizer report.

    python tests/native/fuzz_batch.py [--batches 400] [--seed 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NATIVE = ROOT / "fastdata" / "decode" / "_native"
SOURCES = ["module", "batch", "cropdecode", "resample", "kernels", "segments", "restarts", "resegment", "huffman",
           "baseline"]

DRIVER = r'''
import random, sys
from pathlib import Path
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
from fastdata.decode import native, read_info
from fastdata.decode.batch import batch_request, copy_into, decode_batch
assert native.__file__.startswith(sys.argv[1]), native.__file__
seeds = [Path(p).read_bytes() for p in sys.argv[4:]]
seeds += [native.add_restarts(d) or d for d in seeds]
rnd, batches = random.Random(int(sys.argv[2])), int(sys.argv[3])
counts = {"ok": 0, "failed": 0, "refused": 0, "copied": 0}
for _ in range(batches):
    h, w = rnd.choice([(1, 1), (7, 300), (64, 64), (31, 17)])
    n = rnd.randint(1, 5)
    fmt = rnd.choice([torch.contiguous_format, torch.channels_last])
    out = torch.empty((n, 3, h, w), dtype=torch.uint8).contiguous(memory_format=fmt)
    items = []
    for _ in range(rnd.randint(0, n)):
        data = rnd.choice(seeds)
        info = read_info(data)
        if info.mode == "CMYK":
            continue
        t, l = rnd.uniform(0, info.height / 2), rnd.uniform(0, info.width / 2)
        box = (t, l, rnd.uniform(0.25, 1) * (info.height - t), rnd.uniform(0.25, 1) * (info.width - l))
        req = batch_request(data, info, box, min_size=(h, w), snap=rnd.random() < 0.5, flip=rnd.random() < 0.5)
        b = bytearray(data)
        for _ in range(rnd.choice([0, 0, 1, 4, 30])):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        if rnd.random() < 0.2:
            b = b[: rnd.randrange(len(b))]
        slot = rnd.randrange(n) if rnd.random() < 0.97 else rnd.choice([-1, n])
        if rnd.random() < 0.05:
            req = (req[0], (req[1][0], req[1][1], req[1][2] + rnd.randint(-3, 3), req[1][3]), req[2], req[3], req[4])
        items.append((slot, bytes(b), req))
    big = np.empty((h + 9, w + 9, 3), np.uint8)
    t, l = rnd.randint(0, 9), rnd.randint(0, 9)
    image = big[t : t + h + rnd.choice([0, 0, 0, -1, 1]), l : l + w + rnd.choice([0, 0, 0, -1, 1])]
    try:
        copy_into(out.permute(0, 2, 3, 1).numpy(), rnd.randrange(-1, n + 1), image)
        counts["copied"] += 1
    except (IndexError, ValueError):
        pass
    try:
        failed = decode_batch(out.permute(0, 2, 3, 1).numpy(), items)
    except IndexError:
        counts["refused"] += 1
        continue
    counts["failed"] += len(failed)
    counts["ok"] += len(items) - len(failed)
print(" ".join(f"{k} {v}" for k, v in counts.items()))
'''


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("fastdata_native_fuzz", HERE / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def build(workdir: Path) -> Path:
    """A copy of the package whose extension is built with the sanitizers."""
    fuzz = _load_fuzz()
    cc = os.environ.get("CC") or shutil.which("gcc")
    if not cc:
        raise fuzz.Unavailable("no C compiler (gcc) on PATH")
    package = workdir / "pkg"
    shutil.copytree(ROOT / "fastdata", package / "fastdata", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    target = package / "fastdata" / "decode" / f"_cropdecode{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = [cc, "-shared", "-fPIC", *fuzz.FLAGS, f"-I{NATIVE}", f"-I{fuzz.JPEG}", f"-I{sysconfig.get_paths()['include']}",
           *(str(NATIVE / f"{name}.c") for name in SOURCES), "-ljpeg", "-lm", "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise fuzz.Unavailable(f"cannot build the sanitized extension: {done.stderr.strip()[-400:]}")
    return package


def run(batches: int, seed: int, workdir: Path) -> str:
    """Build, run, return the driver's summary line. Raises AssertionError on any finding."""
    fuzz = _load_fuzz()
    package = build(workdir)
    runtimes = []
    for lib in ("libasan.so", "libubsan.so"):
        path = subprocess.run([os.environ.get("CC") or "gcc", f"-print-file-name={lib}"], capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path):
            raise fuzz.Unavailable(f"no {lib} to preload")
        runtimes.append(path)
    seeds = fuzz.write_seeds(workdir)
    env = {**os.environ, "LD_PRELOAD": " ".join(runtimes),
           # Python itself is not instrumented: its allocations would read as leaks.
           "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:exitcode=99",
           "UBSAN_OPTIONS": fuzz.ENV["UBSAN_OPTIONS"]}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(package), str(seed), str(batches), *map(str, seeds)],
                          capture_output=True, text=True, env=env)
    report = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 and "ERROR: " not in report and "runtime error" not in report, report[-4000:]
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            line = run(args.batches, args.seed, Path(tmp))
        except _load_fuzz().Unavailable as exc:
            print(f"fuzz_batch: skipped: {exc}", file=sys.stderr)
            return 2
    print(line)
    print("no sanitizer findings (ASan, UBSan) in decode_batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
