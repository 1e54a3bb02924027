"""What an output directory holds between runs: finished, unfinished, or not ours.

An unfinished conversion is ``OUT/.fastdata-plan.json`` plus one small JSON
record per finished shard in ``OUT/.fastdata-state/``. A shard counts as
done only when both its record and its final-named file exist, and the
record is written after the shard file is renamed into place; anything
under a ``.partial`` name is discarded on resume. The manifest(s) are written
last and the plan and records are removed after them, so a directory with a
manifest and no plan is finished.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastdata.errors import ConfigError
from fastdata.formats._atomic import PARTIAL_SUFFIX, remove, write_text_atomic
from fastdata.formats.manifest import MANIFEST_NAME

from .plan import PLAN_NAME, Plan, ShardPlan

STATE_DIR = ".fastdata-state"
LOCK_NAME = ".fastdata-finalize.lock"
SPLIT_NAMES = ("train", "val")

NEW, FINISHED, UNFINISHED, FOREIGN = "new", "finished", "unfinished", "foreign"


def classify(out: str | os.PathLike[str]) -> str:
    """``"new"`` (missing or empty), ``"unfinished"`` (a plan is there),
    ``"finished"`` (a manifest in OUT or OUT/train, OUT/val) or ``"foreign"``
    (a non-empty directory fastdata did not write).

    Raises:
        ConfigError: ``out`` exists and is not a directory.
    """
    out = Path(out)
    if not out.exists():
        return NEW
    if not out.is_dir():
        raise ConfigError(f"{out}: output path exists and is not a directory")
    if (out / PLAN_NAME).exists():
        return UNFINISHED
    if (out / MANIFEST_NAME).exists() or any((out / s / MANIFEST_NAME).exists() for s in SPLIT_NAMES):
        return FINISHED
    return FOREIGN if any(out.iterdir()) else NEW


def wipe(out: str | os.PathLike[str]) -> None:
    """Empty an output directory that :func:`classify` says fastdata wrote."""
    for child in Path(out).iterdir():
        remove(child)


def record_path(out: str | os.PathLike[str], shard: ShardPlan) -> Path:
    return Path(out) / STATE_DIR / f"{shard.key}.json"


def write_record(out: str | os.PathLike[str], shard: ShardPlan, record: dict[str, Any]) -> None:
    """Mark ``shard`` done (call after its file has its final name)."""
    path = record_path(out, shard)
    path.parent.mkdir(exist_ok=True)
    write_text_atomic(path, json.dumps(record, sort_keys=True, ensure_ascii=True) + "\n")


def read_record(out: str | os.PathLike[str], plan: Plan, shard: ShardPlan) -> dict[str, Any] | None:
    """The shard's record when the shard is done, else None."""
    path = record_path(out, shard)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # torn or unreadable: the shard is simply redone
    if record.get("info") is not None and not (plan.split_dir(out, shard.split) / shard.file).exists():
        return None
    return record


def done_records(out: str | os.PathLike[str], plan: Plan) -> dict[str, dict[str, Any]]:
    return {s.key: r for s in plan.shards if (r := read_record(out, plan, s)) is not None}


def clear_shard(out: str | os.PathLike[str], plan: Plan, shard: ShardPlan) -> None:
    """Remove whatever an interrupted attempt left of ``shard``: its record,
    its final-named files (and index) and its ``.partial`` files."""
    remove(record_path(out, shard))
    directory = plan.split_dir(out, shard.split)
    stem = shard.file.rsplit(".", 1)[0]
    if directory.is_dir():
        for leftover in directory.glob(f"{stem}.*"):
            remove(leftover)


def remove_partials(out: str | os.PathLike[str], plan: Plan) -> None:
    """Discard every ``.partial`` file of the plan's split directories (single-node resume)."""
    for split in plan.splits:
        directory = plan.split_dir(out, split)
        if directory.is_dir():
            for leftover in directory.glob(f"*{PARTIAL_SUFFIX}"):
                remove(leftover)


def try_lock(out: str | os.PathLike[str], *, force: bool = False) -> bool:
    """Take the finalize lock; False if another node holds it. ``force`` breaks a stale lock."""
    path = Path(out) / LOCK_NAME
    if force:
        remove(path)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return True


def cleanup(out: str | os.PathLike[str]) -> None:
    """Remove the plan, the records and the lock once the manifests are written."""
    out = Path(out)
    remove(out / STATE_DIR)
    remove(out / PLAN_NAME)
    remove(out / LOCK_NAME)
