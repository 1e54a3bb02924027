"""One core, bytes in memory: each decode backend, and the decode-aware transforms
on the pure-Python and the compiled crop-decode paths, vs Pillow.

    python benchmarks/decode_backends.py [IMAGE_FOLDER] [--rounds 5] [--clock cpu|wall] [--agreement] [--out DIR]
    python benchmarks/decode_backends.py --quick    # a check that it runs: 16 generated photos, 1 round

Without IMAGE_FOLDER it times ``--generate`` photo-like JPEGs (``fastdata bench``'s
default set); RESULTS.md's figures read ``../shared/data/photos/hymenoptera/train``.

Rounds interleave every variant. ``--clock cpu`` (default) rates each pass by
this process's CPU time, which other processes on a shared machine disturb
less than the wall clock. ``--agreement`` also prints how close the compiled
path's pixels are to the pure-Python path's (same seed, same boxes) and both
to Pillow on the full-size decode (torchvision's antialiased filter).
With the compiled path, two rows decode restart-marked copies of the same
photos (``fastdata.decode.native.add_restarts``): compare them with the
compiled rows on the originals.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time

import numpy as np
from PIL import Image

from fastdata import rng
from fastdata.bench.harness import Result, Variant, run_interleaved
from fastdata.bench.report import table, write_all
from fastdata.decode import available_backends, decode, native_available, native_status
from fastdata.transforms import Compose, EncodedImage, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop, sample_resized_crop

from photos import add_folder_arguments, resolve_folder


def restart_marked(data: list[bytes], files: list[str]) -> list[EncodedImage]:
    """The same photos losslessly rewritten with restart markers (what
    ``fastdata convert --restart-markers`` writes); the compiled path then
    decodes only the restart segments a crop covers."""
    from fastdata.decode.native import add_restarts

    marked = [add_restarts(d) or d for d in data]
    print(f"restart-marked copies: {sum(m is not d for m, d in zip(marked, data))}/{len(data)} rewritten, "
          f"{sum(map(len, marked)) / sum(map(len, data)):.3f}x the bytes", file=sys.stderr)
    return [EncodedImage(m, f) for m, f in zip(marked, files)]


def variants(data: list[bytes], enc: list[EncodedImage], marked: list[EncodedImage] | None = None) -> list[Variant]:
    def pil_rgb(d):
        return Image.open(io.BytesIO(d)).convert("RGB")

    def pil_rrc():
        g = np.random.default_rng(0)
        for d in data:
            img = pil_rgb(d)
            t, left, h, w = sample_resized_crop(img.height, img.width, (0.08, 1.0), (3 / 4, 4 / 3), g)
            np.asarray(img.resize((224, 224), Image.BILINEAR, box=(left, t, left + w, t + h)))
        return len(data)

    def pil_eval():
        for d in data:
            img = pil_rgb(d)
            scale = 256 / min(img.size)
            img = img.resize((max(256, round(img.width * scale)), max(256, round(img.height * scale))), Image.BILINEAR)
            left, top = (img.width - 224) // 2, (img.height - 224) // 2
            np.asarray(img.crop((left, top, left + 224, top + 224)))
        return len(data)

    def each(fn, images=enc):
        def run():
            with rng.use(np.random.default_rng(0)):
                for x in images:
                    fn(x)
            return len(images)
        return run

    base = "Pillow open + convert RGB"
    out = [Variant(base, "decode", lambda: sum(1 for d in data if pil_rgb(d).load() is not None))]
    if "simplejpeg" in available_backends():
        import simplejpeg

        out.append(Variant("simplejpeg.decode_jpeg, full decode", "decode",
                           lambda: sum(1 for d in data if simplejpeg.decode_jpeg(d) is not None), baseline=base))
    for b in available_backends():
        out.append(Variant(f"fastdata decode, backend={b}", "decode",
                           (lambda b=b: sum(1 for d in data if decode(d, backend=b) is not None)), baseline=base))
    pure = available_backends()[0]
    paths = [(f"pure-Python ({pure})", pure)] + ([("compiled", "native")] if native_available() else [])
    train_base, eval_base = "Pillow decode + RandomResizedCrop(224)", "Pillow Resize(256)+CenterCrop(224)"
    out.append(Variant(train_base, "train", pil_rrc))
    for label, b in paths:
        out.append(Variant(f"fastdata RRC(224), {label}", "train", each(RandomResizedCrop(224, backend=b)), baseline=train_base))
        out.append(Variant(f"fastdata RRC(224)+flip, {label}", "train",
                           each(Compose([RandomResizedCrop(224, backend=b), RandomHorizontalFlip()])), baseline=train_base))
    if marked:
        out.append(Variant("fastdata RRC(224)+flip, compiled, restart-marked JPEGs", "train",
                           each(Compose([RandomResizedCrop(224, backend="native"), RandomHorizontalFlip()]), marked),
                           baseline=train_base))
    out.append(Variant(eval_base, "eval", pil_eval))
    for label, b in paths:
        out.append(Variant(f"fastdata Resize(256)+CenterCrop(224), {label}", "eval",
                           each(ResizedCenterCrop(256, 224, backend=b)), baseline=eval_base))
    if marked:
        out.append(Variant("fastdata Resize(256)+CenterCrop(224), compiled, restart-marked JPEGs", "eval",
                           each(ResizedCenterCrop(256, 224, backend="native"), marked), baseline=eval_base))
    return out


def run_cpu_clock(vs: list[Variant], rounds: int, warmup: int = 1) -> list[Result]:
    """run_interleaved's rounds, rated by this process's CPU time (no workers here)."""
    results = [Result(v.name, v.group, v.unit, [], 0.0, v.baseline, v.note, v.bytes_per_item) for v in vs]
    for rnd in range(warmup + rounds):
        print(f"round {rnd + 1 - warmup}/{rounds}" if rnd >= warmup else "warm-up", file=sys.stderr)
        for v, res in zip(vs, results):
            t0 = time.process_time()
            n = v.run()
            dt = time.process_time() - t0
            if rnd >= warmup:
                res.rates.append(n / dt if dt > 0 else 0.0)
    return results


def agreement(enc: list[EncodedImage]) -> None:
    """Compiled vs pure-Python pixels on the same boxes, and both vs Pillow."""
    pure = available_backends()[0]
    boxes: list[tuple[int, int, int, int]] = []

    class Fixed(RandomResizedCrop):
        def get_params(self, height, width):
            return boxes[-1]

    stats: dict[str, list[tuple[float, int]]] = {k: [] for k in ("rrc", "rrc_fast_ref", "rrc_pure_ref", "eval")}
    g = np.random.default_rng(7)
    for x in enc:
        full = decode(x.data)
        boxes.append(sample_resized_crop(full.shape[0], full.shape[1], (0.08, 1.0), (3 / 4, 4 / 3), g))
        t, left, h, w = boxes[-1]
        ref = np.asarray(Image.fromarray(full).resize((224, 224), Image.BILINEAR, box=(left, t, left + w, t + h)))
        fast, slow = Fixed(224, backend="native")(x), Fixed(224, backend=pure)(x)
        for key, a, b in (("rrc", fast, slow), ("rrc_fast_ref", fast, ref), ("rrc_pure_ref", slow, ref)):
            diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
            stats[key].append((float(diff.mean()), int(diff.max())))
        fast, slow = ResizedCenterCrop(256, 224, backend="native")(x), ResizedCenterCrop(256, 224, backend=pure)(x)
        diff = np.abs(fast.astype(np.int16) - slow.astype(np.int16))
        stats["eval"].append((float(diff.mean()), int(diff.max())))
    labels = {
        "rrc": "RandomResizedCrop(224), compiled vs pure-Python",
        "rrc_fast_ref": "RandomResizedCrop(224), compiled vs Pillow on the full decode",
        "rrc_pure_ref": "RandomResizedCrop(224), pure-Python vs Pillow on the full decode",
        "eval": "Resize(256)+CenterCrop(224), compiled vs pure-Python",
    }
    print(f"\npixel agreement over {len(enc)} images (mean |difference| in grey levels, same boxes):")
    for key, label in labels.items():
        means, maxes = np.array([m for m, _ in stats[key]]), [m for _, m in stats[key]]
        print(f"  {label}: mean {means.mean():.3f}, worst image {means.max():.3f}, "
              f"images over 1: {(means > 1).sum()}, largest pixel difference {max(maxes)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_folder_arguments(ap)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--agreement", action="store_true")
    ap.add_argument("--out", default="bench-results/decode")
    args = ap.parse_args()
    resolve_folder("decode_backends", args)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}) if hasattr(os, "sched_setaffinity") else None
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.folder) for f in fs if f.lower().endswith((".jpg", ".jpeg")))
    data = [open(f, "rb").read() for f in files]
    enc = [EncodedImage(d, f) for d, f in zip(data, files)]
    print(f"crop decode: {native_status()}", file=sys.stderr)
    vs = variants(data, enc, restart_marked(data, files) if native_available() else None)
    if args.clock == "cpu":
        results = run_cpu_clock(vs, args.rounds)
    else:
        results = run_interleaved(vs, rounds=args.rounds, warmup=1, progress=lambda m: print(m, file=sys.stderr))
    print(table(results))
    full = next((r.median for r in results if r.name.startswith("simplejpeg.decode_jpeg")), None)
    if full:
        print("\nx one core's simplejpeg full decode:")
        for r in results:
            if r.group in ("train", "eval") and r.name.startswith("fastdata"):
                print(f"  {r.name}: {r.median / full:.2f}")
    write_all(results, {"folder": args.folder, "images": len(data), "one_core": True, "clock": args.clock,
                        "crop_decode": native_status()}, args.out)
    if args.agreement and native_available():
        agreement(enc)


if __name__ == "__main__":
    main()
