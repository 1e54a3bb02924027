"""One core, bytes in memory: each decode backend and the decode-aware transforms vs Pillow.

    python benchmarks/decode_backends.py [IMAGE_FOLDER] [--rounds 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import io
import os
import sys

import numpy as np
from PIL import Image

from fastdata import rng
from fastdata.bench.harness import Variant, run_interleaved
from fastdata.bench.report import table, write_all
from fastdata.decode import available_backends, decode
from fastdata.transforms import Compose, EncodedImage, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop, sample_resized_crop

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera", "train")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder", nargs="?", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="bench-results/decode")
    args = ap.parse_args()
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}) if hasattr(os, "sched_setaffinity") else None
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.folder) for f in fs if f.lower().endswith((".jpg", ".jpeg")))
    data = [open(f, "rb").read() for f in files]
    enc = [EncodedImage(d, f) for d, f in zip(data, files)]

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

    train, evaluate = Compose([RandomResizedCrop(224), RandomHorizontalFlip()]), ResizedCenterCrop(256, 224)

    def each(fn):
        def run():
            with rng.use(np.random.default_rng(0)):
                for x in enc:
                    fn(x)
            return len(enc)
        return run

    base = "Pillow open + convert RGB"
    variants = [Variant(base, "decode", lambda: sum(1 for d in data if pil_rgb(d).load() is not None))]
    for b in available_backends():
        variants.append(Variant(f"fastdata decode, backend={b}", "decode",
                                (lambda b=b: sum(1 for d in data if decode(d, backend=b) is not None)), baseline=base))
    variants += [Variant("Pillow decode + RandomResizedCrop(224)", "train", pil_rrc),
                 Variant("fastdata decode-aware RRC(224) + flip", "train", each(train), baseline="Pillow decode + RandomResizedCrop(224)"),
                 Variant("Pillow Resize(256)+CenterCrop(224)", "eval", pil_eval),
                 Variant("fastdata eval Resize(256)+CenterCrop(224)", "eval", each(evaluate), baseline="Pillow Resize(256)+CenterCrop(224)")]
    results = run_interleaved(variants, rounds=args.rounds, warmup=1, progress=lambda m: print(m, file=sys.stderr))
    print(table(results))
    write_all(results, {"folder": args.folder, "images": len(data), "one_core": True}, args.out)


if __name__ == "__main__":
    main()
