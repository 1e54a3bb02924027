"""Conversion speed against a plain loop, as whole commands (start-up included).

Variants, run interleaved (one of each per round, in a rotating order) so that
a busy machine slows all of them alike:

* ``plain``: a plain Python loop doing im2rec ``--pass-through``'s work in one
  process: read each file, pack its IRHeader, append it to a ``.rec`` with
  RecordIO framing, write the ``.idx`` (no hashing, no fsync, no checks);
* ``plain2``: the same loop forked into 2 processes, each writing half the
  files to its own ``.rec``: what 2 workers of this work can gain on this
  machine (copying bytes through the page cache is bound by memory
  bandwidth, which the cores share);
* ``w1``, ``w2``: ``fastdata convert --format recordio --passthrough`` with 1 and 2 workers;
* ``rm2``: ``fastdata convert --format recordio`` with 2 workers (restart
  markers, the default for JPEGs when the compiled decoder is built);
* ``rm1``: the same with 1 worker (CPU per image of the transcode path);
* ``w1fs``, ``w2fs``: ``w1``, ``w2`` with ``--fsync`` (every shard and the manifest
  wait for the disk), to show what durability costs.

Each figure is images / wall seconds of the whole command (a fresh Python
process each time), median over ``--rounds``. Sources are read from the page
cache (one warm-up read first), and fastdata's modules are byte-compiled
first, as ``pip install`` does (this sandbox sets PYTHONDONTWRITEBYTECODE, so
without it every command would compile them again). The start-up part of
each command is measured on a 2-image folder (once in every round, beside the
whole folder's run), so the table also gives the rate beyond start-up.
Results: a table on stdout and JSON (``--json``), with the machine and versions.

    python benchmarks/convert_scaling.py [--src DIR] [--copies 16] [--rounds 3] [--json out.json]
    python benchmarks/convert_scaling.py --quick     # a check that it runs: 16 photos, 1 round, plain and w1

Without ``--src`` it builds DIR from ``--photos`` (an ImageFolder of JPEGs, e.g.
``../shared/data/photos/hymenoptera/train``, the photos RESULTS.md's figures were
measured on; default: ``--generate`` photo-like JPEGs made with Pillow, as
``fastdata bench`` makes its default set), every JPEG hard-linked ``--copies``
times (3,904 files for hymenoptera's 244 and 16), under ``--scratch``. It runs from
any directory: the commands it times run in ``--scratch``, so a checkout in the
current directory cannot shadow the installed fastdata.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from photos import photo_folder

# The plain loop (fastdata.bench.plain_recordio, loaded by its path: its package's imports would be start-up
# the plain loop does not have), run as its own process (python -c) so that its start-up counts like the CLI's.
PLAIN = r"""
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("plain_recordio", sys.argv[1])
plain = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plain)
src, out = sys.argv[2], sys.argv[3]
classes = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
files = []
for label, c in enumerate(classes):
    for root, _, names in sorted(os.walk(os.path.join(src, c))):
        files += [(os.path.join(root, n), label) for n in sorted(names) if n.lower().endswith((".jpg", ".jpeg"))]
os.makedirs(out, exist_ok=True)
parts_n = int(sys.argv[4]) if len(sys.argv) > 4 else 1  # plain2: the same loop in 2 forked processes, half each
me = 0
for me in range(1, parts_n):
    if os.fork() == 0:
        break
else:
    me = 0
lo, hi = len(files) * me // parts_n, len(files) * (me + 1) // parts_n
plain.write(files[lo:hi], os.path.join(out, f"data{me}.rec"), os.path.join(out, f"data{me}.idx"), first_key=lo)
if me:
    os._exit(0)
for _ in range(1, parts_n):
    os.wait()
print(len(files))
"""

# The CLI in this process, then this process's and its workers' CPU seconds as JSON in the file
# CONVERT_SCALING_CPU names; "main_writing" is this process's CPU while the shards were being written
# (handing out tasks, recording shards: alongside the workers, not before or after them).
WRAPPED = r"""
import json, os, resource, sys
try:
    from fastdata.converters.conversion import convert
    from fastdata.converters.cli import main
except ImportError as exc:
    sys.exit(f"convert_scaling: cannot import fastdata.converters ({exc}); " + os.environ["CONVERT_SCALING_FIX"])
def cpu():
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime
during = [0.0]
real = convert.write_shards
def timed(*args, **kwargs):
    start = cpu()
    try:
        return real(*args, **kwargs)
    finally:
        during[0] += cpu() - start
convert.write_shards = timed
rc = main(sys.argv[1:])
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(os.environ["CONVERT_SCALING_CPU"], "w") as f:
    json.dump({"main": cpu(), "main_writing": during[0], "workers": kids.ru_utime + kids.ru_stime}, f)
raise SystemExit(rc)
"""

VARIANTS = {
    "plain": ("plain Python loop (read, IRHeader, append .rec, .idx)", None),
    # the same loop in 2 forked processes, half the files each: this machine's ceiling for 2 workers of this work
    "plain2": ("  the same loop, 2 processes (half each)", None),
    "w1": ("fastdata convert --passthrough --workers 1", ["--passthrough", "--workers", "1"]),
    "w2": ("fastdata convert --passthrough --workers 2", ["--passthrough", "--workers", "2"]),
    "rm1": ("fastdata convert (restart markers) --workers 1", ["--workers", "1"]),
    "rm2": ("fastdata convert (restart markers) --workers 2", ["--workers", "2"]),
    # what durability costs: every shard and the manifest wait for the disk
    "w1fs": ("  the same as w1, with --fsync", ["--passthrough", "--workers", "1", "--fsync"]),
    "w2fs": ("  the same as w2, with --fsync", ["--passthrough", "--workers", "2", "--fsync"]),
}


#: What to do when fastdata.converters cannot be imported (said in one line, by this process or a timed one).
IMPORT_FIX = (
    "install fastdata (`pip install -e .` in the checkout), and run from outside the checkout after a "
    "non-editable `pip install .` (its fastdata/ folder has no converters/ and would be imported instead)"
)


def need_fastdata() -> None:
    """Exit with one line when the fastdata command's package cannot be imported."""
    try:
        import fastdata.converters.cli  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"convert_scaling: cannot import fastdata.converters ({exc}); {IMPORT_FIX}") from None


def plain_loop_file() -> str:
    """The file of the plain loop the ``plain`` variants run (the installed fastdata's)."""
    import fastdata.bench.plain_recordio

    return fastdata.bench.plain_recordio.__file__


def link(src: Path, dst: Path) -> None:
    """A hard link (a copy across file systems)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def build_source(photos: Path, copies: int, scratch: Path) -> Path:
    src = scratch / f"photos-{zlib.crc32(os.fsencode(photos)):08x}-x{copies}"  # one per folder of photos
    if src.is_dir():
        return src
    tmp = scratch / f"{src.name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    for cls in sorted(p for p in photos.iterdir() if p.is_dir()):
        (tmp / cls.name).mkdir(parents=True)
        jpegs = sorted(p for p in cls.iterdir() if p.suffix.lower() in (".jpg", ".jpeg"))
        for k in range(copies):
            for p in jpegs:
                link(p, tmp / cls.name / f"k{k}_{p.name}")
    tmp.rename(src)
    return src


def compile_fastdata() -> None:
    """Byte-compile fastdata's modules, as ``pip install`` does for an installed package."""
    import compileall

    import fastdata
    import fastdata.converters

    for module in (fastdata, fastdata.converters):
        compileall.compile_dir(os.path.dirname(module.__file__), quiet=1)


def count_images(src: Path) -> int:
    return sum(1 for p in src.rglob("*") if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg"))


def run_once(key: str, src: Path, scratch: Path) -> tuple[float, dict[str, float]]:
    """Wall seconds of one whole command, and the CPU seconds of its main process and workers."""
    out = scratch / f"out-{key}"
    shutil.rmtree(out, ignore_errors=True)
    _, flags = VARIANTS[key]
    cpu_file = scratch / "cpu.json"
    cpu_file.unlink(missing_ok=True)
    if flags is None:
        cmd = [sys.executable, "-c", PLAIN, plain_loop_file(), str(src), str(out), "2" if key == "plain2" else "1"]
    else:
        cmd = [sys.executable, "-c", WRAPPED, "convert", str(src), str(out), "--format", "recordio",
               "--allow-skips", "--quiet", *flags]
    env = {**os.environ, "CONVERT_SCALING_CPU": str(cpu_file), "CONVERT_SCALING_FIX": IMPORT_FIX}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # run in the scratch folder: `python -c` puts the current directory first on sys.path, and a checkout
    # there (its fastdata/ has no converters/) would be imported instead of the installed package
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=scratch)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        what = "the plain loop" if flags is None else f"fastdata convert {' '.join(flags)}"
        raise SystemExit(f"convert_scaling: {key} ({what} on {src}) failed with exit status {done.returncode}: "
                         f"{said[-1] if said else 'no message'}")
    shutil.rmtree(out, ignore_errors=True)
    used = json.loads(cpu_file.read_text()) if cpu_file.exists() else {}
    used["total"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)  # the command's whole tree
    return seconds, used


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", type=Path, help="ImageFolder of JPEGs (default: --photos x --copies)")
    p.add_argument("--photos", type=Path, default=None,
                   help="ImageFolder of JPEGs to copy, e.g. ../shared/data/photos/hymenoptera/train "
                        "(default: --generate generated photos)")
    p.add_argument("--generate", type=int, default=244, metavar="N",
                   help="how many photos to generate without --photos (default 244, as many as hymenoptera's)")
    p.add_argument("--copies", type=int, default=16)
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "fastdata-convert-scaling")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default="plain,w1,w2,rm2", help="comma-separated: " + ",".join(VARIANTS))
    p.add_argument("--json", type=Path, help="write the results here as JSON")
    p.add_argument("--quick", action="store_true",
                   help="a check that the script runs, not a measurement: generated photos (unless --photos or "
                        "--src), --generate 16 --copies 1 --rounds 1 --variants plain,w1 (unless given)")
    args = p.parse_args(argv)
    if args.quick:
        given = set(argv if argv is not None else sys.argv[1:])
        for flag, value in (("--generate", 16), ("--copies", 1), ("--rounds", 1), ("--variants", "plain,w1")):
            if flag not in given:
                setattr(args, flag[2:], value)
    keys = args.variants.split(",")
    for k in keys:
        if k not in VARIANTS:
            p.error(f"unknown variant {k!r}; choose from {', '.join(VARIANTS)}")
    if args.src is not None and not args.src.is_dir():
        raise SystemExit(f"convert_scaling: --src {args.src}: no such folder; give an ImageFolder of JPEGs "
                         "(class folders of .jpg files), or leave --src out to build one")
    need_fastdata()
    args.scratch = args.scratch.resolve()  # the timed commands run there: every path they get is absolute
    args.scratch.mkdir(parents=True, exist_ok=True)
    if args.src is not None:
        src = args.src.resolve()
    else:
        photos = photo_folder("convert_scaling", args.photos, args.generate).resolve()
        src = build_source(photos, args.copies, args.scratch)
    images = count_images(src)
    if not images:
        raise SystemExit(f"convert_scaling: {src} holds no .jpg/.jpeg files; give an ImageFolder of JPEGs")
    compile_fastdata()
    for f in src.rglob("*"):  # warm the page cache
        if f.is_file():
            f.read_bytes()
    # the fixed cost of a command (interpreter, imports, planning, the manifest): a 2-image folder's,
    # run in the same rounds as the whole folder so that a busy spell slows both alike
    tiny = args.scratch / f"tiny-{src.name}"
    if not tiny.is_dir():
        (tiny / "a").mkdir(parents=True)
        for p in sorted(f for f in src.rglob("*") if f.suffix.lower() in (".jpg", ".jpeg"))[:2]:
            link(p, tiny / "a" / p.name)
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {k: [] for k in keys}
    cpu: dict[str, list[dict[str, float]]] = {k: [] for k in keys}
    tiny_runs: dict[str, list[tuple[float, dict[str, float]]]] = {k: [] for k in keys}
    for r in range(args.rounds):
        order = keys[r % len(keys):] + keys[: r % len(keys)]
        for k in order:
            seconds, used = run_once(k, src, args.scratch)
            times[k].append(seconds)
            cpu[k].append(used)
            tiny_runs[k].append(run_once(k, tiny, args.scratch))
            print(f"round {r + 1}: {k} {images / seconds:,.0f} img/s", file=sys.stderr)
    rates = {k: images / statistics.median(v) for k, v in times.items()}
    ratios = {}
    if "plain" in rates and "w1" in rates:
        ratios["w1 / plain (target >= 0.8)"] = rates["w1"] / rates["plain"]
    if "w1" in rates and "w2" in rates:
        ratios["w2 / w1 (target >= 1.8)"] = rates["w2"] / rates["w1"]
    if "plain" in rates and "plain2" in rates:
        ratios["plain2 / plain (this machine's 2-process ceiling)"] = rates["plain2"] / rates["plain"]
    if "rm2" in rates:
        ratios["rm2 / 488 img/s (target >= 2)"] = rates["rm2"] / 488.0
    for k in ("w1fs", "w2fs"):
        if k in rates and "plain" in rates:
            ratios[f"{k} / plain"] = rates[k] / rates["plain"]
    if "w1fs" in rates and "w2fs" in rates:
        ratios["w2fs / w1fs"] = rates["w2fs"] / rates["w1fs"]
    if "rm1" in rates and "rm2" in rates:
        ratios["rm2 / rm1"] = rates["rm2"] / rates["rm1"]
    print(f"\n{images} images from {src}, median of {args.rounds} interleaved rounds, whole-command wall time")
    print(f"{'variant':<55} {'img/s':>9} {'spread':>7}")
    for k in keys:
        spread = max(times[k]) / min(times[k])
        print(f"{VARIANTS[k][0]:<55} {rates[k]:>9,.0f} {spread:>6.2f}x")
    for name, value in ratios.items():
        print(f"{name:<55} {value:>9.2f}")
    per_image = {}
    print(f"\n{'CPU of the whole command per image (median), µs':<55} {'total':>9}")
    for k in keys:
        total_us = statistics.median(c["total"] for c in cpu[k]) / images * 1e6
        print(f"{VARIANTS[k][0]:<55} {total_us:>9.1f}")
        if "main" in cpu[k][0]:
            main_us = statistics.median(c["main"] for c in cpu[k]) / images * 1e6
            workers_us = statistics.median(c["workers"] for c in cpu[k]) / images * 1e6
            writing_us = statistics.median(c["main_writing"] for c in cpu[k]) / images * 1e6
            per_image[k] = {"total_cpu_us": total_us, "main_cpu_us": main_us, "worker_cpu_us": workers_us,
                            "main_cpu_us_while_writing": writing_us}
    if "plain" in keys and "w1" in keys:  # less sensitive to a busy machine than wall time
        ratios["CPU per image, plain / w1"] = (
            statistics.median(c["total"] for c in cpu["plain"]) / statistics.median(c["total"] for c in cpu["w1"]))
    fixed_wall = {k: statistics.median(seconds for seconds, _ in runs) for k, runs in tiny_runs.items()}
    beyond = {k: images / max(statistics.median(times[k]) - fixed_wall[k], 1e-9) for k in keys}
    print(f"\n{'beyond start-up (wall minus a 2-image run)':<55} {'img/s':>9} {'start-up':>9}")
    for k in keys:
        print(f"{VARIANTS[k][0]:<55} {beyond[k]:>9,.0f} {fixed_wall[k]:>8.2f}s")
    if "plain" in beyond and "w1" in beyond:
        ratios["beyond start-up: w1 / plain"] = beyond["w1"] / beyond["plain"]
    if "w1" in beyond and "w2" in beyond:
        ratios["beyond start-up: w2 / w1"] = beyond["w2"] / beyond["w1"]
    for name in [n for n in ratios if n.startswith("beyond")]:
        print(f"{name:<55} {ratios[name]:>9.2f}")
    if per_image:
        fixed = {}
        for k in per_image:
            fixed[k] = statistics.median(used["main"] for _, used in tiny_runs[k])
            per_image[k]["main_fixed_cpu_s"] = fixed[k]
            per_image[k]["main_cpu_us_per_image_beyond_fixed"] = (statistics.median(c["main"] for c in cpu[k]) - fixed[k]) / images * 1e6
        print(f"\n{'CPU per image (median), µs':<55} {'main':>9} {'workers':>9} {'main beyond start-up':>21} {'of it while writing':>20}")
        for k, v in per_image.items():
            print(f"{VARIANTS[k][0]:<55} {v['main_cpu_us']:>9.1f} {v['worker_cpu_us']:>9.1f} "
                  f"{v['main_cpu_us_per_image_beyond_fixed']:>15.1f} (+{v['main_fixed_cpu_s']:.2f} s) "
                  f"{v['main_cpu_us_while_writing']:>14.1f}")
        for k in ("w2", "rm2"):
            if k in per_image and per_image[k]["worker_cpu_us"]:
                v = per_image[k]
                parallel = v["worker_cpu_us"]
                # Amdahl, large datasets: the main process's CPU per image beyond start-up is counted serial
                # (the conservative figure), or only its part outside the writing (scan, plan, finish), with
                # its part alongside the workers a floor on the time per image (it must keep up with them)
                serial = v["main_cpu_us_per_image_beyond_fixed"]
                if serial < v["main_cpu_us_while_writing"]:  # start-up's CPU varied by more than the whole difference
                    print(f"{k}: main's CPU beyond start-up ({serial:.1f} µs) is below its CPU while writing: "
                          "noise; that part is taken instead")
                    serial = v["main_cpu_us_while_writing"]
                outside = max(0.0, serial - v["main_cpu_us_while_writing"])
                for n in (16, 64):
                    ratios[f"{k}: projected speed-up on {n} workers vs 1"] = (serial + parallel) / (serial + parallel / n)
                    overlapped = (serial + parallel) / (outside + max(parallel / n, v["main_cpu_us_while_writing"]))
                    ratios[f"{k}: projected speed-up on {n} workers vs 1, writing overlapped"] = overlapped
                    print(f"{k}: Amdahl projection, {n} workers vs 1 {'':<23} "
                          f"{ratios[f'{k}: projected speed-up on {n} workers vs 1']:>9.1f}x "
                          f"(main's work while writing overlapped: {overlapped:.1f}x)")
    if args.json:
        import fastdata
        from fastdata.decode import native_status

        doc = {
            "images": images, "source": str(src), "rounds": args.rounds,
            "seconds": times, "cpu_seconds": cpu, "cpu_per_image": per_image, "img_per_s": rates, "ratios": ratios,
            "startup_seconds": fixed_wall, "img_per_s_beyond_startup": beyond, "bytecode": "precompiled (compileall)",
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
                        "fastdata": getattr(fastdata, "__version__", "?"), "decoder": native_status(),
                        "load_before": load_before, "load_after": os.getloadavg()},
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
