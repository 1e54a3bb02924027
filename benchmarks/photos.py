"""The photos a script here reads: the folder you name, else photo-like JPEGs generated once;
and those photos as a converted dataset. Also how a script prints its result (:func:`print_result`).

Not a script: the scripts beside it import it. Every script runs from a fresh clone, so none
reads a folder outside the checkout unless told to; RESULTS.md's figures were measured on
:data:`MEASURED_ON` (244 JPEGs in 2 classes), which you name to compare with them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MEASURED_ON = "../shared/data/photos/hymenoptera/train"


def photo_folder(script: str, given: str | Path | None, generate: int, flag: str = "--photos") -> Path:
    """``given`` when it is a folder; ``generate`` generated JPEGs in 2 class folders when it is None
    (``fastdata bench``'s default set, kept in ``~/.cache/fastdata/bench``); one line and exit 1 otherwise."""
    if given is not None:
        if not Path(given).is_dir():
            raise SystemExit(f"{script}: {flag} {given}: no such folder; give a folder of JPEGs, "
                             f"or leave {flag} out to generate photos")
        return Path(given)
    from fastdata.bench.default_data import default_dataset  # photo-like JPEGs, made with Pillow

    print(f"{script}: no {flag}: {generate} generated photos (the published figures read {MEASURED_ON})",
          file=sys.stderr)
    return default_dataset(generate)


def add_folder_arguments(ap, *, generate: int = 240, rounds: int = 5) -> None:
    """The arguments of a script that times something over a folder of JPEGs: the folder
    (optional), ``--generate``, ``--rounds`` and ``--quick``; :func:`resolve_folder` reads them."""
    ap.add_argument("folder", nargs="?", help="a folder of JPEGs (default: --generate generated photos)")
    ap.add_argument("--generate", type=int, default=generate, metavar="N", help="photos to generate without a folder")
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--quick", action="store_true", help="a check that it runs, not a measurement: 16 photos, 1 round")


def resolve_folder(script: str, args) -> None:
    """After :func:`add_folder_arguments`: ``--quick``'s 1 round of 16 photos, and ``args.folder``
    the folder to read (generated photos when none was given)."""
    if args.quick:
        args.rounds, args.generate = 1, 16
    args.folder = str(photo_folder(script, args.folder, args.generate, flag="IMAGE_FOLDER"))


def as_dataset(photos: Path, out: Path, shards: int = 1) -> Path:
    """The JPEGs of ``photos``' class folders as a RecordIO dataset in ``out``, in about ``shards`` shards
    (labels: the class folders, in name order). The library's writer, so that ``fastdata.converters`` need
    not be installed; the JPEGs are stored as they are."""
    from fastdata.formats import Sample
    from fastdata.formats.dataset_writer import write_dataset

    classes = sorted(p.name for p in photos.iterdir() if p.is_dir())
    files = [(f, label) for label, c in enumerate(classes) for f in sorted((photos / c).iterdir())
             if f.suffix.lower() in (".jpg", ".jpeg")]
    if not files:
        raise SystemExit(f"{photos}: no JPEGs in class folders; give an ImageFolder "
                         "(one folder of .jpg files per class)")
    per_shard = -(-sum(f.stat().st_size for f, _ in files) // max(shards, 1))
    samples = (Sample(image=f.read_bytes(), label=label, id=i) for i, (f, label) in enumerate(files))
    write_dataset(out, "recordio", samples, classes, shard_bytes=per_shard)
    return out


def print_result(result: dict, json_path: str | None) -> None:
    """Print a script's result as indented JSON and, given ``--json PATH``, write the same there."""
    print(json.dumps(result, indent=1))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1)
