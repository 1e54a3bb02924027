"""What TF32 would change in decode="cuda"'s pixels.

The resample's two batched matrix products run in float32; on an Ampere or
Hopper GPU PyTorch runs float32 matmuls as TF32 when the user allows it
(``torch.backends.cuda.matmul.allow_tf32 = True`` or
``torch.set_float32_matmul_precision("high")``), and fastdata leaves that
global setting as the user has it. TF32 keeps 10 bits of each operand's
mantissa and accumulates in float32; this script rounds the operands the same
way on the CPU and counts the output pixels (0-255 after rounding) that change.

    python benchmarks/gpu_tf32_pixels.py [PHOTOS] [--images 64] [--size 224] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from photos import print_result

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.environ.get("FASTDATA_PHOTOS", os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera"))


def tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 rounded to TF32's 10-bit mantissa (round to nearest, ties away)."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + (1 << 12)) & ~((1 << 13) - 1)).view(torch.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", nargs="?", default=os.path.join(PHOTOS, "train"))
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.photos):
        print(f"gpu_tf32_pixels: no photo folder at {args.photos}: pass an ImageFolder tree (root/<class>/<image>)")
        return 2
    import warnings

    from fastdata import make_loader, transforms
    from fastdata.datasets import ImageFolder

    folder = ImageFolder(args.photos, transform=transforms.Compose([transforms.RandomResizedCrop(args.size),
                                                                    transforms.RandomHorizontalFlip()]))
    data = torch.utils.data.Subset(folder, [i % len(folder) for i in range(args.images)])
    outputs = {}
    plain_bmm = torch.bmm
    for mode in ("float32", "tf32"):
        if mode == "tf32":
            torch.bmm = lambda a, b: plain_bmm(tf32(a), tf32(b))  # type: ignore[assignment]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                loader = make_loader(data, args.images, seed=0, workers=0, decode="cuda")
            with loader:
                outputs[mode] = next(iter(loader))[0].int()
        finally:
            torch.bmm = plain_bmm
    diff = (outputs["tf32"] - outputs["float32"]).abs()
    result = {
        "images": args.images, "size": args.size,
        "pixels_changed_pct": round(100 * float((diff > 0).float().mean()), 3),
        "max_diff": int(diff.max()), "mean_diff": round(float(diff.float().mean()), 5),
        "torch": torch.__version__,
    }
    print_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
