"""What restart markers (``fastdata convert``'s default for JPEGs) cost readers
that decode whole files, and in size.

The same photos, as they are and as the converter stores them (losslessly
rewritten with restart markers), decoded in full by simplejpeg, Pillow and
DALI's CPU decoder (``fn.decoders.image``, device ``cpu``), each on one core,
rounds interleaved; figures are images per second of process CPU time (for
DALI, of its one-thread pipeline's process), best of ``--rounds``.

    python benchmarks/restart_marker_cost.py [--photos DIR] [--rounds 5] [--json out.json]
    python benchmarks/restart_marker_cost.py --quick    # a check that it runs: 16 generated photos, 1 round

Without ``--photos`` (README's figures: ``--photos ../shared/data/photos/hymenoptera/train``),
``--generate`` photo-like JPEGs are made with Pillow, as ``fastdata bench`` makes its default set.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import time
from pathlib import Path

from photos import photo_folder


def load(photos: Path) -> tuple[list[bytes], list[bytes]]:
    from fastdata.converters.conversion.normalize import EncodeOptions, prepare

    originals, marked = [], []
    for path in sorted(p for p in photos.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg")):
        data = path.read_bytes()
        try:
            out = prepare(data, str(path), EncodeOptions(restart_markers=True))
        except Exception:  # noqa: BLE001 - a file the converter skips is not part of the comparison
            continue
        if out.data is not data and "restart-markers" in out.reasons and not out.reasons[:-1]:
            originals.append(data)
            marked.append(out.data)
    return originals, marked


def cpu_rate(decode, files: list[bytes]) -> float:
    start = time.process_time()
    for data in files:
        decode(data)
    return len(files) / (time.process_time() - start)


def dali_rate(files: list[bytes]) -> float | None:
    try:
        import numpy as np
        from nvidia.dali import fn, pipeline_def
    except ImportError:
        return None

    batch = 32
    arrays = [np.frombuffer(d, np.uint8) for d in files]

    @pipeline_def(batch_size=batch, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        data = fn.external_source(source=lambda info: [arrays[(info.iteration * batch + i) % len(arrays)] for i in range(batch)],
                                  batch=True, batch_info=True)
        return fn.decoders.image(data, device="cpu")

    p = pipe()
    p.build()
    p.run()  # warm-up
    steps = max(1, len(files) // batch)
    start = time.process_time()  # every thread of this process: DALI's worker included
    for _ in range(steps):
        p.run()
    return steps * batch / (time.process_time() - start)


IMPORT_FIX = (
    "install fastdata (`pip install -e .` in the checkout), and run from outside the checkout after a "
    "non-editable `pip install .` (its fastdata/ folder has no converters/ and would be imported instead)"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=Path, default=None,
                    help="folder of JPEGs, e.g. ../shared/data/photos/hymenoptera/train (default: --generate generated photos)")
    ap.add_argument("--generate", type=int, default=240, metavar="N",
                    help="how many photos to generate when there is no --photos folder (default 240)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--quick", action="store_true",
                    help="a check that the script runs, not a measurement: 16 generated photos (unless --photos), 1 round")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.generate = 1, 16
    try:
        import fastdata.converters.conversion.normalize  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"restart_marker_cost: cannot import fastdata.converters ({exc}); {IMPORT_FIX}") from None
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core for everyone
    args.photos = photo_folder("restart_marker_cost", args.photos, args.generate)
    originals, marked = load(args.photos)
    if not originals:
        raise SystemExit(f"restart_marker_cost: no JPEG under {args.photos} is one the converter rewrites with restart "
                         "markers (baseline JPEGs; the compiled crop decoder must be built: see "
                         "`python -c \"import fastdata.decode as d; print(d.native_status())\"`)")
    from PIL import Image

    readers = {"Pillow": lambda d: Image.open(io.BytesIO(d)).load()}
    try:
        import simplejpeg

        readers["simplejpeg"] = lambda d: simplejpeg.decode_jpeg(d)
    except ImportError:
        pass
    rates: dict[str, dict[str, list[float]]] = {name: {"original": [], "restart-marked": []} for name in readers}
    rates["DALI CPU"] = {"original": [], "restart-marked": []}
    for r in range(args.rounds):
        for name, decode in readers.items():
            pairs = [("original", originals), ("restart-marked", marked)]
            for kind, files in pairs if r % 2 == 0 else pairs[::-1]:
                rates[name][kind].append(cpu_rate(decode, files))
        for kind, files in (("original", originals), ("restart-marked", marked)):
            value = dali_rate(files)
            if value is not None:
                rates["DALI CPU"][kind].append(value)
    size = {"original": sum(map(len, originals)), "restart-marked": sum(map(len, marked))}
    print(f"{len(originals)} photos rewritten from {args.photos}; size {size['original'] / 1e6:.2f} MB -> "
          f"{size['restart-marked'] / 1e6:.2f} MB ({size['restart-marked'] / size['original'] - 1:+.1%})")
    print(f"{'full decode, one core':<24} {'original':>10} {'marked':>10} {'ratio':>7}")
    best = {}
    for name, kinds in rates.items():
        if not kinds["original"]:
            print(f"{name:<24} not installed")
            continue
        o, m = max(kinds["original"]), max(kinds["restart-marked"])
        best[name] = {"original": o, "restart-marked": m, "ratio": m / o}
        print(f"{name:<24} {o:>10,.1f} {m:>10,.1f} {m / o:>7.3f}")
    if args.json:
        args.json.write_text(json.dumps({"images": len(originals), "bytes": size, "img_per_s": best, "rounds": rates,
                                         "machine": {"platform": platform.platform(), "python": sys.version.split()[0],
                                                     "load": os.getloadavg()}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
