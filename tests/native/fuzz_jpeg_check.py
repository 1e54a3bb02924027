"""Run the compiled JPEG structure check (fastdata/formats/_native/jpeg_check.c)
under AddressSanitizer + UndefinedBehaviorSanitizer over real, crafted and
mutated files, each in a buffer of exactly its size (any read past the end is
reported), and compare every answer with the Python reference.

    python tests/native/fuzz_jpeg_check.py [--mutants-per-file 100] [--files 200] [--seed 99]

Passes when the sanitizers report nothing and all answers match.
tests/native/test_jpeg_check_twin.py runs a small round of it in CI.
"""

from __future__ import annotations

import argparse
import random
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCES = ROOT / "fastdata" / "formats" / "_native"
MARKERS = ROOT / "fastdata" / "jpeg" / "_native"  # markers.h: the marker walk jpeg_check.c shares

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jpeg_check.h"
int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb");
    if (!in) return 2;
    unsigned len;
    while (fread(&len, 4, 1, in) == 1) {
        unsigned char *exact = malloc(len ? len : 1);
        if (len && fread(exact, 1, len, in) != len) return 2;
        unsigned h = 0, w = 0;
        int yes = fd_jpeg_passthrough(exact, len, 1, 89478485ull, &h, &w);
        printf("%d %u %u\n", yes, yes ? h : 0, yes ? w : 0);
        free(exact);
    }
    return 0;
}
"""


def compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("gcc") or shutil.which("cc")


def run(shared_data: Path, files: int, mutants: int, seed: int, workdir: Path) -> tuple[int, list[str]]:
    """``(inputs checked, problems)``; problems are sanitizer reports or differing answers."""
    sys.path.insert(0, str(HERE))
    import test_jpeg_check_twin as twin  # the seeds and the mutator of the differential test
    from PIL import Image

    from fastdata.converters.jpeg_check import _passthrough_size_py

    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler")
    (workdir / "harness.c").write_text(HARNESS)
    exe = workdir / "harness"
    subprocess.run([cc, "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{SOURCES}", f"-I{MARKERS}", str(workdir / "harness.c"), str(SOURCES / "jpeg_check.c"),
                    "-o", str(exe)],
                   check=True, capture_output=True)
    rng = random.Random(seed)
    seeds = twin._seeds(shared_data)
    inputs = list(seeds) + [c for s in seeds[:40] for c in twin._crafted(s)]
    for s in rng.sample(seeds, min(files, len(seeds))):
        inputs += twin._mutants(rng, s, mutants)
    limit = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = 89478485  # the harness's limit
    try:
        want = [_passthrough_size_py(d) for d in inputs]
    finally:
        Image.MAX_IMAGE_PIXELS = limit
    with open(workdir / "inputs.bin", "wb") as f:
        for d in inputs:
            f.write(struct.pack("<I", len(d)) + d)
    proc = subprocess.run([str(exe), str(workdir / "inputs.bin")], capture_output=True, text=True)
    problems = []
    if proc.returncode != 0 or "runtime error" in proc.stderr or "Sanitizer" in proc.stderr:
        problems.append(f"harness exited {proc.returncode}: {proc.stderr[-3000:]}")
    got = proc.stdout.splitlines()
    for i, (line, answer) in enumerate(zip(got, want)):
        expected = f"1 {answer[0]} {answer[1]}" if answer else "0 0 0"
        if line != expected:
            problems.append(f"input {i}: compiled {line!r}, python {expected!r}: {inputs[i][:64].hex()}")
    if len(got) != len(inputs) and not problems:
        problems.append(f"harness answered {len(got)} of {len(inputs)} inputs")
    return len(inputs), problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200, help="seed files to mutate")
    ap.add_argument("--mutants-per-file", type=int, default=100)
    ap.add_argument("--seed", type=int, default=99)
    ap.add_argument("--shared-data", type=Path, default=(ROOT / ".." / "shared" / "data").resolve())
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        checked, problems = run(args.shared_data, args.files, args.mutants_per_file, args.seed, Path(tmp))
    for p in problems[:20]:
        print(p)
    print(f"{checked} inputs, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
