"""Before/after for the converter: ``fastdata convert --passthrough`` from another checkout and from this
one, with 1 and 2 workers, interleaved in one run (whole commands, start-up included).

    git worktree add --detach /tmp/before <commit>
    (cd /tmp/before && python setup.py -q build_ext --inplace)  # its compiled helpers, in its tree
    python benchmarks/convert_checkouts.py /tmp/before [--src DIR] [--rounds 5] [--json out.json]

The other checkout is imported through a folder of links (``fastdata`` -> its ``fastdata``, with
``fastdata/converters`` -> its ``converters``, as the editable install maps them) put first on
PYTHONPATH, from a working directory outside both trees; this checkout is the installed one. Both
are byte-compiled first. Prints img/s (median), each side's ``--workers 2 / --workers 1`` and
after/before ratios; ``--json`` keeps the times with the machine.
"""

from __future__ import annotations

import argparse
import compileall
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

HERE = Path(__file__).resolve().parent
CODE = "import sys; from fastdata.converters.cli import main; raise SystemExit(main(sys.argv[1:]))"


def linked_package(checkout: Path, into: Path) -> Path:
    """A folder holding ``fastdata`` as ``checkout`` lays it out for an editable install."""
    pkg = into / "fastdata"
    shutil.copytree(checkout / "fastdata", pkg, symlinks=True, copy_function=os.symlink,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "converters").symlink_to(checkout / "converters")
    compileall.compile_dir(str(pkg), quiet=1)
    return into


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="the other checkout (a git worktree with its extensions built)")
    p.add_argument("--src", type=Path, default=Path("/tmp/fastdata-convert-scaling/photos-x16"),
                   help="ImageFolder of JPEGs (convert_scaling.py builds the default)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from convert_scaling import compile_fastdata, count_images

    compile_fastdata()
    images = count_images(args.src)
    with tempfile.TemporaryDirectory() as tmp:
        before = linked_package(args.before.resolve(), Path(tmp) / "before")
        out = Path(tmp) / "out"
        variants = {f"{side}-w{w}": (side, w) for side in ("before", "after") for w in ("1", "2")}
        keys = list(variants)
        times: dict[str, list[float]] = {k: [] for k in keys}
        for r in range(args.rounds):
            for k in keys[r % len(keys):] + keys[: r % len(keys)]:
                side, workers = variants[k]
                env = dict(os.environ)
                if side == "before":
                    env["PYTHONPATH"] = str(before)
                shutil.rmtree(out, ignore_errors=True)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", CODE, "convert", str(args.src), str(out), "--format", "recordio",
                                "--allow-skips", "--quiet", "--passthrough", "--workers", workers],
                               check=True, cwd=tmp, env=env)
                times[k].append(time.perf_counter() - start)
    rate = {k: images / statistics.median(v) for k, v in times.items()}
    print(f"{images} images from {args.src}, median of {args.rounds} interleaved rounds")
    for k in keys:
        print(f"{k:10} {rate[k]:9,.0f} img/s  spread {max(times[k]) / min(times[k]):.2f}x")
    ratios = {
        "before: w2 / w1": rate["before-w2"] / rate["before-w1"],
        "after: w2 / w1": rate["after-w2"] / rate["after-w1"],
        "w1: after / before": rate["after-w1"] / rate["before-w1"],
        "w2: after / before": rate["after-w2"] / rate["before-w2"],
    }
    for name, value in ratios.items():
        print(f"{name:20} {value:.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "images": images, "source": str(args.src), "before": str(args.before), "rounds": args.rounds,
            "seconds": times, "img_per_s": rate, "ratios": ratios,
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
                        "load_after": os.getloadavg()},
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
