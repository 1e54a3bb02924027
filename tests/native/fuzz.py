"""Fuzz the compiled crop decoder under AddressSanitizer + UndefinedBehaviorSanitizer.

Builds tests/native/fuzz_cropdecode.c with the decoder's C sources twice (SIMD
kernels, and plain C with -DFD_NO_SIMD), both with -fsanitize=address,undefined,
writes seed JPEGs (baseline 4:2:0/4:2:2/4:4:4, progressive, restart markers,
some in the layouts whose crops decode only the segments they need, optimised
Huffman tables, grayscale, CMYK, odd tiny sizes), and runs the same mutations
through both (some through the restart-marker transcode first: its fast path,
or libjpeg's re-encode).
Passes when neither sanitizer reports anything (crashes, memory errors, leaks
at exit), both builds produce the same pixels (hash of every output), the
segment decode equals the whole-file decode, and a transcoded input decodes to
the same pixels as before its transcode.

    python tests/native/fuzz.py [--iterations 10000] [--seed 1] [--workdir DIR]

tests/decode/test_native_fuzz.py runs 300 iterations of it in CI.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "fastdata" / "decode" / "_native"
JPEG = ROOT / "fastdata" / "jpeg" / "_native"  # markers.h, which baseline.h includes
HARNESS = Path(__file__).with_name("fuzz_cropdecode.c")
SOURCES = [NATIVE / f"{name}.c" for name in ("cropdecode", "resample", "kernels", "segments", "restarts", "resegment", "huffman",
                                              "baseline")]
FLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:exitcode=99",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
}


class Unavailable(RuntimeError):
    """No C compiler, sanitizer runtime or libjpeg headers here."""


def build(workdir: Path) -> dict[str, Path]:
    """Compile the SIMD and the plain C harness; raise Unavailable if this machine cannot."""
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise Unavailable("no C compiler (gcc/cc) on PATH")
    binaries = {}
    for variant, extra in (("simd", []), ("plain", ["-DFD_NO_SIMD"])):
        exe = workdir / f"fuzz_{variant}"
        cmd = [cc, *FLAGS, *extra, f"-I{NATIVE}", f"-I{JPEG}", str(HARNESS), *map(str, SOURCES), "-ljpeg", "-lm", "-o", str(exe)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise Unavailable(f"cannot build the ASan harness ({' '.join(cmd[:2])} ...): {done.stderr.strip()[-400:]}")
        binaries[variant] = exe
    return binaries


def write_seeds(workdir: Path) -> list[Path]:
    """Small JPEGs covering the layouts the decoder handles (and CMYK, which it declines)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:120, 0:160]
    base = np.stack([xx * 1.5, yy * 2.0, (xx + yy) % 256], axis=2)
    photo = Image.fromarray(np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8))
    variants = {
        "420.jpg": (photo, {"quality": 80}),
        # Huffman tables fitted to the image: no code for some DC values (the transcode adds them)
        "420_optimized.jpg": (photo, {"quality": 80, "optimize": True}),
        "444_optimized_gray.jpg": (photo.convert("L"), {"quality": 95, "optimize": True}),
        "422.jpg": (photo, {"quality": 90, "subsampling": 1}),
        "444.jpg": (photo, {"quality": 95, "subsampling": 0}),
        "progressive.jpg": (photo, {"quality": 80, "progressive": True}),
        "restart.jpg": (photo, {"quality": 80, "restart_marker_blocks": 2}),
        # Restart intervals the segment decoder takes: whole MCU rows, and a
        # divisor of the MCUs per row (160 px: 10 MCUs at 4:2:0, 20 at 4:4:4).
        "rst_rows_420.jpg": (photo, {"quality": 80, "restart_marker_rows": 1}),
        "rst_cols_420.jpg": (photo, {"quality": 85, "restart_marker_blocks": 5}),
        "rst_cols_444.jpg": (photo, {"quality": 90, "subsampling": 0, "restart_marker_blocks": 4}),
        "rst_rows2_gray.jpg": (photo.convert("L"), {"quality": 85, "restart_marker_rows": 2}),
        "rst_odd_41x27.jpg": (photo.resize((41, 27)), {"quality": 90, "restart_marker_blocks": 1}),
        "gray.jpg": (photo.convert("L"), {"quality": 85}),
        "cmyk.jpg": (photo.convert("CMYK"), {"quality": 85}),
        "tiny_1x1.jpg": (photo.resize((1, 1)), {}),
        "odd_17x9.jpg": (photo.resize((17, 9)), {"quality": 90}),
        "odd_33x65_prog.jpg": (photo.resize((33, 65)), {"progressive": True}),
    }
    paths = []
    for name, (img, opts) in variants.items():
        buf = io.BytesIO()
        img.save(buf, "JPEG", **opts)
        path = workdir / name
        path.write_bytes(buf.getvalue())
        paths.append(path)
    paths.append(workdir / "longest_codes_420.jpg")
    paths[-1].write_bytes(longest_codes_jpeg())
    return paths


def longest_codes_jpeg() -> bytes:
    """A 4:2:0 JPEG whose zero bits decode as the longest codes with the largest
    values (16 + 15 bits per coefficient): data that ends early is read far
    past its end before a block ends, the case a reader's padding must cover."""

    def segment(marker: int, payload: bytes) -> bytes:
        return bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload

    counts = bytes(15) + b"\x02"  # two codes, both 16 bits long
    return b"".join([
        b"\xff\xd8",
        segment(0xDB, b"\x00" + bytes([1] * 64)),
        segment(0xC0, b"\x08\x00\x20\x00\x20\x03" + b"\x01\x22\x00\x02\x11\x00\x03\x11\x00"),
        segment(0xC4, b"\x00" + counts + b"\x0f\x00" + b"\x10" + counts + b"\x0f\x00"),
        segment(0xDA, b"\x03\x01\x00\x02\x00\x03\x00\x00\x3f\x00"),
        b"\x00" * 40,
        b"\xff\xd9",
    ])


def run(iterations: int, seed: int, workdir: Path) -> dict[str, str]:
    """Run both builds; return {variant: summary line}. Raises AssertionError on any finding."""
    binaries = build(workdir)
    seeds = write_seeds(workdir)
    env = {**os.environ, **ENV}
    lines = {}
    for variant, exe in binaries.items():
        done = subprocess.run([str(exe), str(seed), str(iterations), *map(str, seeds)], capture_output=True, text=True, env=env)
        report = (done.stdout + done.stderr).strip()
        assert done.returncode == 0 and "ERROR: " not in report and "runtime error" not in report and "MISMATCH" not in report, (
            f"{variant} build: exit {done.returncode}\n{report[-4000:]}"
        )
        lines[variant] = done.stdout.strip()
    hashes = {v: re.search(r"hash (\w+)", line).group(1) for v, line in lines.items()}  # type: ignore[union-attr]
    assert len(set(hashes.values())) == 1, f"SIMD and plain C kernels disagree: {lines}"
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, help="keep the binaries and seeds here (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            lines = run(args.iterations, args.seed, workdir)
        except Unavailable as exc:
            print(f"fuzz: skipped: {exc}", file=sys.stderr)
            return 2
    for variant, line in lines.items():
        print(f"{variant:5s} {line}")
    print("no sanitizer findings (ASan: memory errors and leaks, UBSan), SIMD == plain C")
    return 0


if __name__ == "__main__":
    sys.exit(main())
