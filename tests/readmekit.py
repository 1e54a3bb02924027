"""README.md's fenced code blocks, and the workspace its snippets expect (used by test_readme.py).

The snippets name files as a user would have them (an ImageFolder ``train/``,
TensorFlow's ``train-00000-of-01024``, a Caffe ``train_lmdb``...). The
workspace gives each name real data: the hymenoptera photos and the files that
MXNet, TensorFlow and Caffe wrote, from ``../shared/data``.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# A line that only works with a GPU ends in this comment; without CUDA the
# test replaces that line (and only it) by a no-op.
NEEDS_CUDA = "# needs CUDA"
# A shell line run once per machine of a multi-node job: the test runs it
# once per rank with RANK set, as torchrun or SLURM would on each machine.
EACH_MACHINE = re.compile(r"#\s*on each of (\d+) machines")

_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # README line of the opening fence
    section: str  # the ``## `` heading above it

    @property
    def name(self) -> str:
        return f"{self.lang}@README.md:{self.line}"


def blocks(text: str) -> list[Block]:
    """Every fenced block in ``text``, in order. An unclosed fence is an error."""
    out, section, lines = [], "", text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        fence = _FENCE.match(lines[i])
        if fence:
            start = i
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                i += 1
            if i == len(lines):
                raise ValueError(f"README.md:{start + 1}: code fence never closed")
            out.append(Block(fence.group(1), "\n".join(lines[start + 1 : i]) + "\n", start + 1, section))
        i += 1
    return out


def without_cuda_lines(code: str, *, cuda: bool, shell: bool = False) -> str:
    """``code`` with each ``# needs CUDA`` line replaced by a no-op when ``cuda`` is False.

    The indentation is kept so that Python blocks stay valid; line numbers in
    tracebacks still match the README.
    """
    if cuda:
        return code
    noop = ":" if shell else "pass"
    return "".join(
        line[: len(line) - len(line.lstrip())] + f"{noop}  # skipped: no CUDA\n" if NEEDS_CUDA in line else line
        for line in code.splitlines(keepends=True)
    )


def shell_script(code: str) -> str:
    """A bash script for a README shell block: stops at the first failing command.

    A line marked ``# on each of N machines`` runs N times, with RANK=0..N-1.
    """
    out = ["set -euo pipefail"]
    for line in code.splitlines():
        machines = EACH_MACHINE.search(line)
        if machines:
            out.append(f"for RANK in $(seq 0 {int(machines.group(1)) - 1}); do export RANK; {line}\ndone")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def make_workspace(directory: Path, shared: Path) -> Path:
    """Put, under ``directory``, a file or folder for each name the README's snippets read.

    README name            real data (from ../shared/data)
    train/                 photos/hymenoptera/train (ImageFolder, 2 classes, 245 photos, one GIF)
    photo.jpg              one hymenoptera photo
    train-0000{0,1}-of-01024  vectors/train-0000{0,1}-of-00002.tfrecord (written by TensorFlow)
    foreign.tfrecord       vectors/train-00001-of-00002.tfrecord, with no index
    train_lmdb, caffe_train_lmdb  lmdb/caffe_raw_datum/test_lmdb (written by Caffe's convert_imageset)
    imagenet/train.rec/.idx  vectors/im2rec_passthrough.rec/.idx (written by MXNet's im2rec)
    train.lst, imgs/       vectors/im2rec_passthrough.lst and the folder it lists
    """
    photos = shared / "photos" / "hymenoptera" / "train"
    vectors = shared / "vectors"
    (directory / "train").symlink_to(photos, target_is_directory=True)
    shutil.copy(next(p for p in sorted((photos / "ants").iterdir()) if p.suffix == ".jpg"), directory / "photo.jpg")
    for i in range(2):
        shutil.copy(vectors / f"train-0000{i}-of-00002.tfrecord", directory / f"train-0000{i}-of-01024")
    shutil.copy(vectors / "train-00001-of-00002.tfrecord", directory / "foreign.tfrecord")
    for name in ("train_lmdb", "caffe_train_lmdb"):
        shutil.copytree(shared / "lmdb" / "caffe_raw_datum" / "test_lmdb", directory / name)
    (directory / "imagenet").mkdir()
    for suffix in (".rec", ".idx"):
        shutil.copy(vectors / f"im2rec_passthrough{suffix}", directory / "imagenet" / f"train{suffix}")
    shutil.copy(vectors / "im2rec_passthrough.lst", directory / "train.lst")
    (directory / "imgs").symlink_to(vectors / "images", target_is_directory=True)
    return directory
