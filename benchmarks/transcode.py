"""One core, bytes in memory: the restart-marker transcode
(``fastdata.decode.native.add_restarts``, what ``fastdata convert
--restart-markers`` runs on every JPEG), before and after, beside a full decode.

    python benchmarks/transcode.py [IMAGE_FOLDER] [--rounds 5] [--chunks 24] [--out bench-results/transcode]
    python benchmarks/transcode.py --quick    # a check that it runs: 16 generated photos, 1 round

Without IMAGE_FOLDER it times ``--generate`` photo-like JPEGs (``fastdata bench``'s
default set); the figures ``fastdata/decode/native.py`` quotes read
``../shared/data/photos/hymenoptera/train``.

Variants, interleaved in every round, each rated by this process's CPU time:

- ``simplejpeg full decode``: the yardstick.
- ``add_restarts, libjpeg re-encode``: the path before (libjpeg reads the
  coefficients and writes them again with fitted Huffman tables: a decode and
  two Huffman passes), forced with the extension's ``_set_resegment(False)``;
  it remains the path for what the fast one declines.
- ``add_restarts``: now (the source's entropy-coded data cut into segments).
- ``add_restarts, extension call only``: the same without the Python checks
  around it, which is what Python costs.

Prints µs per image, each as a multiple of a full decode, the speed-up, the
output sizes and how many files the fast path rewrote; writes results.json
and results.txt (machine and versions) under --out.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from decode_backends import run_cpu_clock  # noqa: E402
from photos import add_folder_arguments, resolve_folder  # noqa: E402

from fastdata.bench.harness import Variant  # noqa: E402
from fastdata.bench.report import table, write_all  # noqa: E402
from fastdata.decode import native  # noqa: E402

FULL, OLD, NEW, CALL = ("simplejpeg full decode", "add_restarts, libjpeg re-encode (before)", "add_restarts (now)",
                        "add_restarts, extension call only")


def with_resegment(allow: bool, fn):
    def run():
        previous = native.cropdecode._set_resegment(allow)
        try:
            return fn()
        finally:
            native.cropdecode._set_resegment(previous)
    return run


def variants(data: list[bytes], chunks: int) -> list[Variant]:
    import simplejpeg

    ext = native.cropdecode

    def each(fn):
        def run():
            for d in data:
                fn(d)
            return len(data)
        return run

    return [
        Variant(FULL, "transcode", each(simplejpeg.decode_jpeg)),
        Variant(OLD, "transcode", with_resegment(False, each(lambda d: native.add_restarts(d, chunks=chunks))),
                baseline=FULL),
        Variant(NEW, "transcode", each(lambda d: native.add_restarts(d, chunks=chunks)), baseline=FULL),
        Variant(CALL, "transcode", each(lambda d: ext.add_restarts(d, chunks)), baseline=FULL),
    ]


def sizes(data: list[bytes], chunks: int) -> dict:
    """Output bytes of each path over the source bytes, and what each rewrote."""
    new = [native.add_restarts(d, chunks=chunks) for d in data]
    old = with_resegment(False, lambda: [native.add_restarts(d, chunks=chunks) for d in data])()
    src = sum(map(len, data))
    return {
        "images": len(data),
        "rewritten": sum(o is not None for o in new),
        "by_the_fast_path": sum(n is not None and n != o for n, o in zip(new, old)),  # libjpeg's output differs
        "bytes_before_vs_source": sum(len(o or d) for o, d in zip(old, data)) / src,
        "bytes_now_vs_source": sum(len(n or d) for n, d in zip(new, data)) / src,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_folder_arguments(ap)
    ap.add_argument("--chunks", type=int, default=native.RESTART_CHUNKS)
    ap.add_argument("--out", default="bench-results/transcode")
    args = ap.parse_args()
    resolve_folder("transcode", args)
    if native.cropdecode is None:
        sys.exit(f"transcode benchmark: the compiled crop decoder is not built ({native.native_status()})")
    import simplejpeg

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.folder) for f in fs if f.lower().endswith((".jpg", ".jpeg")))
    data = []
    for f in files:
        with open(f, "rb") as fh:
            d = fh.read()
        try:
            simplejpeg.decode_jpeg(d)
        except ValueError:  # the yardstick must decode every image timed
            continue
        data.append(d)
    print(f"{len(data)} of {len(files)} JPEGs (simplejpeg decodes them); crop decode: {native.native_status()}",
          file=sys.stderr)
    results = run_cpu_clock(variants(data, args.chunks), args.rounds)
    print(table(results))
    us = {r.name: 1e6 / r.median for r in results}
    size = sizes(data, args.chunks)
    print(f"\nCPU per image (median of {args.rounds} rounds, one core):")
    for name, t in us.items():
        print(f"  {name:<44} {t:8.0f} us  {t / us[FULL]:5.2f} full decodes")
    print(f"  speed-up, before / now: {us[OLD] / us[NEW]:.2f}x; Python around the call: {us[NEW] - us[CALL]:.0f} us")
    print(f"  rewritten {size['rewritten']}/{size['images']}, {size['by_the_fast_path']} by the fast path; bytes vs "
          f"the source: before {size['bytes_before_vs_source']:.4f}, now {size['bytes_now_vs_source']:.4f}")
    meta = {"folder": args.folder, "images": len(data), "chunks": args.chunks, "one_core": True, "clock": "cpu",
            "us_per_image": us, "full_decodes_per_transcode": {k: v / us[FULL] for k, v in us.items()},
            "speedup_before_over_now": us[OLD] / us[NEW], "sizes": size}
    paths = write_all(results, meta, args.out)
    print(f"\nwrote {', '.join(str(p) for p in paths.values())}", file=sys.stderr)


if __name__ == "__main__":
    main()
