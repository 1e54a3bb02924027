"""Mutation fuzzing of datasets fastdata wrote (and of foreign shards after
``fastdata index --checksums``): every damaged byte must be found on read.

Each mutant is a copy of a small converted dataset with one mutation:
a byte flip (55 %), a truncation (16 %), 1-8 bytes inserted or deleted
(15 %), or an edit of ``manifest.json`` (15 %: a field changed through JSON,
or one of its bytes flipped). A forked child with a memory cap and a timeout
opens the copy with ``open_dataset``, reads and decodes every sample, streams
it once, and runs ``fastdata verify --decode``. Outcomes:

* ``clean`` - every sample identical to the original's (allowed);
* ``named`` - a fastdata error whose message names the mutated file (allowed);
* ``unnamed`` - a fastdata error that does not name it;
* ``changed`` - a sample differs and nothing said so (silent corruption);
* ``exception`` - any other exception; ``crash``; ``hang``; ``oom``.

A mutant that changed a byte of a file the manifest lists must also make
``verify --decode`` fail (``verify_missed`` otherwise).

Full run (the figures in the closing note)::

    python tests/integrity/fuzz_shards.py --mutants 3000 --seed 1 --json OUT.json

``tests/integrity/test_fuzz_shards.py`` runs a few dozen mutants per format in CI.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

FORMATS = ("recordio", "lmdb", "tfrecord")
ALLOWED = ("clean", "named")
TIMEOUT_S = 30
MEMORY_MB = 1024  # on top of what the (forked) parent maps already


# -- the dataset every mutant starts from ----------------------------------

def make_source(root: Path, n: int = 12, seed: int = 0) -> Path:
    """An image folder of ``n`` small JPEGs in two classes (a few kB each)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    for i in range(n):
        folder = root / ("ants" if i % 2 else "bees")
        folder.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 255, (24 + 4 * (i % 3), 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"img{i:02d}.jpg", quality=80)
    return root


def convert(source: Path, out: Path, fmt: str) -> Path:
    """``fastdata convert`` into 3 shards (the converter's own files included: sources.jsonl, dali.idx)."""
    from fastdata.converters.cli import main

    code = main(["convert", str(source), str(out), "--format", fmt, "--shards", "3", "--workers", "1", "--quiet"])
    if code != 0:
        raise RuntimeError(f"convert {fmt} failed with exit {code}")
    return out


def listed_files(directory: Path) -> list[str]:
    """Every file of the dataset relative to it, manifest included (LMDB: the data.mdb inside each shard)."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


# -- mutations ----------------------------------------------------------------

def _manifest_edits(doc: dict, rng: random.Random) -> str:
    """Change one field of a manifest document in place; returns what was done."""
    choices = ["label_base", "classes_cut", "classes_swap", "format", "records", "bytes", "shard_swap", "extra", "index"]
    what = rng.choice(choices)
    if what == "label_base":
        doc["label_base"] = doc.get("label_base", 0) + rng.choice((-1, 1, 2))
    elif what == "classes_cut":
        doc["classes"] = doc["classes"][:-1]
    elif what == "classes_swap":
        doc["classes"] = doc["classes"][::-1]
    elif what == "format":
        doc["format"] = rng.choice(("zip", "recordio", "lmdb", "tfrecord"))
    elif what in ("records", "bytes"):
        shard = rng.choice(doc["shards"])
        shard[what] = max(0, shard[what] + rng.choice((-1, 1)))
    elif what == "shard_swap" and len(doc["shards"]) > 1:
        doc["shards"][0], doc["shards"][1] = doc["shards"][1], doc["shards"][0]
    elif what == "extra":
        doc.setdefault("extra", {})["sources"] = "other.jsonl"
    else:
        shard = rng.choice(doc["shards"])
        shard["index"] = None
    return f"manifest edit {what}"


def mutate(directory: Path, rng: random.Random) -> tuple[str, str]:
    """Apply one mutation to the dataset copy at ``directory``; returns the
    mutated file (relative) and a short description."""
    files = [f for f in listed_files(directory) if f != "manifest.json"]
    roll = rng.random()
    if roll >= 0.85:
        target = "manifest.json"
    else:
        data_files = [f for f in files if f.endswith((".rec", ".tfrecord", "data.mdb"))]
        target = rng.choice(data_files if rng.random() < 0.6 else files)
    path = directory / target
    data = bytearray(path.read_bytes())
    if target == "manifest.json" and rng.random() < 0.7:
        doc = json.loads(data)
        what = _manifest_edits(doc, rng)
        new = (json.dumps(doc, indent=1) + "\n").encode()
    elif roll < 0.55 or target == "manifest.json" or not data:
        if not data:
            return target, "empty file left alone"
        at = rng.randrange(len(data))
        data[at] ^= rng.randrange(1, 256)
        new, what = bytes(data), f"flip at {at}"
    elif roll < 0.71:
        at = rng.randrange(len(data))
        new, what = bytes(data[:at]), f"truncate to {at}"
    else:
        at, k = rng.randrange(len(data) + 1), rng.randint(1, 8)
        if rng.random() < 0.5:
            new, what = bytes(data[:at]) + rng.randbytes(k) + bytes(data[at:]), f"insert {k} at {at}"
        else:
            new, what = bytes(data[:at]) + bytes(data[at + k :]), f"delete {k} at {at}"
    path.write_bytes(new)
    return target, what


# -- reading a mutant (in a child) ------------------------------------------

def read_all(path: Path) -> list:
    """Everything a user sees: every sample's stored bytes and target, its
    decoded pixels, and a streaming pass (sorted: streams may reorder)."""
    import numpy as np

    import fastdata

    ds = fastdata.open_dataset(str(path), decode=False)
    stored = [(bytes(img), int(t)) for img, t in (ds[i] for i in range(len(ds)))]
    decoded = fastdata.open_dataset(str(path))
    pixels = [np.asarray(decoded[i][0]).tobytes() for i in range(len(decoded))]
    stream = fastdata.open_dataset(str(path), streaming=True, decode=False)
    streamed = sorted((bytes(img), int(t)) for img, t in stream)
    return [stored, pixels, streamed, list(ds.classes)]


def verify_rc(path: Path) -> int:
    """``fastdata verify --decode``'s exit status (2 for an error, as the CLI)."""
    from fastdata.converters.tools.verify.command import run
    from fastdata.errors import FastDataError

    try:
        return run(str(path), decode=True, quiet=True, workers=1, stdout=io.StringIO(), stderr=io.StringIO())
    except FastDataError:
        return 2


def _child(path: str, reference: list, mutated: str, conn) -> None:
    limit = _vm_bytes() + MEMORY_MB * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from fastdata.errors import FastDataError

    try:
        got = read_all(Path(path))
        outcome, message = ("clean", "") if got == reference else ("changed", _first_difference(got, reference))
    except FastDataError as exc:
        message = str(exc)
        outcome = "named" if _names(message, mutated) else "unnamed"
    except MemoryError:
        outcome, message = "oom", "MemoryError"
    except Exception as exc:  # noqa: BLE001 - what the fuzzer looks for
        outcome, message = "exception", "".join(traceback.format_exception(exc)[-3:])
    try:
        rc = verify_rc(Path(path))
    except Exception as exc:  # noqa: BLE001
        rc, message = -1, message + f" | verify raised {exc!r}"
    conn.send((outcome, message, rc))
    conn.close()


def _names(message: str, mutated: str) -> bool:
    parts = Path(mutated).parts
    return parts[0] in message or Path(mutated).name in message


def _first_difference(got: list, reference: list) -> str:
    names = ("stored", "pixels", "streamed", "classes")
    for name, a, b in zip(names, got, reference):
        if a != b:
            diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"{name} differ at {diff} ({len(a)} vs {len(b)} items)"
    return "?"


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 8 << 30


def run_mutant(base: Path, work: Path, reference: list, rng: random.Random) -> dict:
    """One mutant: copy, mutate, judge in a forked child."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work)
    for p in work.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    mutated, what = mutate(work, rng)
    changed = (work / mutated).read_bytes() != (base / mutated).read_bytes()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(str(work), reference, mutated, child))
    proc.start()
    child.close()
    outcome, message, rc = "hang", "", None
    if parent.poll(TIMEOUT_S):
        try:
            outcome, message, rc = parent.recv()
        except EOFError:
            outcome = "crash"
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    elif outcome == "hang" and proc.exitcode not in (0, None):
        outcome, message = "crash", f"exit code {proc.exitcode}"
    listed = mutated != "manifest.json"
    verify_missed = changed and listed and rc == 0
    return {"file": mutated, "what": what, "outcome": outcome, "verify_rc": rc, "verify_missed": verify_missed,
            "changed": changed, "message": message[:300]}


def fuzz(fmt: str, mutants: int, seed: int, scratch: Path, base: Path | None = None, log=None) -> dict:
    """Run ``mutants`` mutants of a small ``fmt`` dataset (or of ``base``); returns counts and the failures."""
    if base is None:
        base = convert(make_source(scratch / "src"), scratch / f"base-{fmt}", fmt)
    reference = read_all(base)
    rng = random.Random(f"{fmt}-{seed}")
    counts: collections.Counter = collections.Counter()
    failures, missed = [], []
    with_record = 0
    started = time.monotonic()
    for k in range(mutants):
        result = run_mutant(base, scratch / "mutant", reference, rng)
        counts[result["outcome"]] += 1
        if result["outcome"] not in ALLOWED:
            failures.append(result)
        if result["verify_missed"]:
            missed.append(result)
        if result["outcome"] == "named" and ("record" in result["message"] or "key" in result["message"]):
            with_record += 1
        if log is not None and (k + 1) % 100 == 0:
            print(f"{fmt}: {k + 1}/{mutants} {dict(counts)} verify missed {len(missed)} "
                  f"({time.monotonic() - started:.0f} s)", file=log, flush=True)
    return {"format": fmt, "mutants": mutants, "outcomes": dict(counts), "named_with_record": with_record,
            "verify_missed": len(missed), "failures": failures[:50], "missed": missed[:50],
            "seconds": round(time.monotonic() - started, 1)}


def foreign(scratch: Path, shared: Path, mutants: int, seed: int, log=None) -> list[dict]:
    """Payload flips in foreign RecordIO/LMDB files after ``fastdata index --checksums``."""
    from fastdata.converters.tools.indexing import checksum_file
    from fastdata.formats import checksums

    out = []
    for name, rel in (("im2rec", "recordio/adaface_shuffled_idx"), ("caffe-lmdb", "lmdb/caffe_raw_datum/test_lmdb")):
        base = scratch / f"foreign-{name}"
        shutil.copytree(shared / rel, base)
        for p in base.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        shard = base / "train.rec" if name == "im2rec" else base
        checksum_file(shard)
        target = shard if name == "im2rec" else base / "data.mdb"
        reference = _foreign_read(shard)
        rng = random.Random(f"{name}-{seed}")
        counts: collections.Counter = collections.Counter()
        for _ in range(mutants):
            data = bytearray(target.read_bytes())
            at = rng.randrange(len(data))
            data[at] ^= rng.randrange(1, 256)
            copy = scratch / "foreign-mutant"
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(base, copy)
            if name != "im2rec":  # an LMDB directory's checksums sit beside it
                shutil.copy(checksums.sidecar_path(base), checksums.sidecar_path(copy))
            (copy / target.relative_to(base)).write_bytes(bytes(data))
            counts[_judge_foreign(copy / shard.relative_to(base) if name == "im2rec" else copy, reference)] += 1
        out.append({"file": name, "mutants": mutants, "outcomes": dict(counts)})
        if log is not None:
            print(f"foreign {name}: {dict(counts)}", file=log, flush=True)
    return out


def _foreign_read(shard: Path) -> list:
    import fastdata

    ds = fastdata.open_dataset(str(shard), decode=False)
    return [(bytes(img), repr(t)) for img, t in (ds[i] for i in range(len(ds)))]


def _judge_foreign(shard: Path, reference: list) -> str:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)

    def body(conn):
        from fastdata.errors import FastDataError

        try:
            conn.send("clean" if _foreign_read(shard) == reference else "changed")
        except FastDataError as exc:
            conn.send("named" if shard.name in str(exc) else "unnamed")
        except Exception as exc:  # noqa: BLE001
            conn.send(f"exception {type(exc).__name__}")

    proc = ctx.Process(target=body, args=(child,))
    proc.start()
    child.close()
    outcome = parent.recv() if parent.poll(TIMEOUT_S) else "hang"
    proc.join(5)
    if proc.is_alive():
        proc.kill()
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=3000, help="per format")
    parser.add_argument("--foreign-mutants", type=int, default=300)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    args = parser.parse_args(argv)
    import fastdata  # noqa: F401 - imported once, before the children fork
    import fastdata.converters.tools.verify.command  # noqa: F401

    results: dict = {"formats": [], "foreign": []}
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        for fmt in args.formats.split(","):
            scratch = Path(tmp) / fmt
            scratch.mkdir()
            results["formats"].append(fuzz(fmt, args.mutants, args.seed, scratch, log=sys.stdout))
            print(json.dumps({k: v for k, v in results["formats"][-1].items() if k not in ("failures", "missed")}), flush=True)
        if args.foreign_mutants and args.shared.is_dir():
            scratch = Path(tmp) / "foreign"
            scratch.mkdir()
            results["foreign"] = foreign(scratch, args.shared, args.foreign_mutants, args.seed, log=sys.stdout)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    bad = sum(len(r["failures"]) + r["verify_missed"] for r in results["formats"])
    bad += sum(n for r in results["foreign"] for o, n in r["outcomes"].items() if o not in ALLOWED)
    print(f"fuzz: {'FAILED' if bad else 'OK'}: {bad} mutant(s) outside clean / named fastdata error / flagged by verify")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
