"""What an output directory holds between runs: finished, unfinished, or not ours.

An unfinished conversion is ``OUT/.fastdata-plan.json`` plus one small JSON
record per finished shard in ``OUT/.fastdata-state/`` (a
:class:`.record.ShardRecord`). A shard counts as
done only when both its record and its final-named file exist, and the
record is written after the shard file is renamed into place; anything
under a ``.partial`` name is discarded on resume. The manifest(s) are written
last and the plan and records are removed after them, so a directory with a
manifest and no plan is finished.

Nothing here waits for the disk unless ``--fsync`` is given (see
``fastdata/formats/_atomic.py``), so after a power cut a record may outlive
the bytes it describes. That is why a record carries the size and CRC32C
digests of its shard's files, and why the run that picks a shard up again
(:func:`read_record` with ``check=True``) trusts the record only when the
files still match them: a shard cut short or zeroed is written again.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from fastdata.errors import ConfigError, ManifestError
from fastdata.formats import checksums
from fastdata.formats._atomic import PARTIAL_SUFFIX, remove, write_text_atomic
from fastdata.formats.dataset_writer import written_files
from fastdata.formats.manifest import MANIFEST_NAME, Manifest
from fastdata.formats.sample import ShardInfo

from ..planning.layout import PLAN_NAME, Plan, ShardPlan
from .record import ShardRecord

STATE_DIR = ".fastdata-state"
LOCK_NAME = ".fastdata-finalize.lock"
SPLIT_NAMES = ("train", "val")

NEW, FINISHED, UNFINISHED, FOREIGN = "new", "finished", "unfinished", "foreign"


@dataclasses.dataclass(frozen=True)
class Survey:
    """What OUT holds: its :func:`classify` kind, the fastdata manifests read
    there (by dataset directory) and, for a foreign one, why."""

    kind: str
    manifests: dict[Path, Manifest] = dataclasses.field(default_factory=dict)
    problem: str | None = None


def survey(out: str | os.PathLike[str]) -> Survey:
    """Classify OUT, reading each manifest there once (see :func:`classify`).

    Raises:
        ConfigError: ``out`` exists and is not a directory.
    """
    out = Path(out)
    if not out.exists():
        return Survey(NEW)
    if not out.is_dir():
        raise ConfigError(f"{out}: output path exists and is not a directory")
    if (out / PLAN_NAME).exists():
        return Survey(UNFINISHED)
    if not manifest_dirs(out):
        return Survey(FOREIGN if any(out.iterdir()) else NEW)
    manifests, problem = _read_manifests(out)
    return Survey(FOREIGN, problem=problem) if problem else Survey(FINISHED, manifests)


def classify(out: str | os.PathLike[str]) -> str:
    """``"new"`` (missing or empty), ``"unfinished"`` (a plan is there),
    ``"finished"`` (a fastdata manifest in OUT or OUT/train, OUT/val) or
    ``"foreign"`` (a non-empty directory fastdata did not write, or one
    holding a ``manifest.json`` that is not fastdata's).

    Raises:
        ConfigError: ``out`` exists and is not a directory.
    """
    return survey(out).kind


def manifest_dirs(out: str | os.PathLike[str]) -> list[Path]:
    """The dataset directories of OUT that hold a ``manifest.json``: OUT itself, OUT/train, OUT/val."""
    out = Path(out)
    return [d for d in (out, *(out / s for s in SPLIT_NAMES)) if (d / MANIFEST_NAME).exists()]


def _read_manifests(out: Path) -> tuple[dict[Path, Manifest], str | None]:
    manifests = {}
    for directory in manifest_dirs(out):
        try:
            manifests[directory] = Manifest.read(directory)
        except (ManifestError, OSError, UnicodeDecodeError) as exc:
            path = str(directory / MANIFEST_NAME)
            reason = str(exc).removeprefix(f"{path}: ")
            return {}, f"{path}: {reason.split(';')[0]}"
    return manifests, None


def wipe(out: str | os.PathLike[str], found: Survey | None = None) -> None:
    """Delete what fastdata wrote in OUT and nothing else: the files its
    manifests and its plan list (shards, indexes, extra files, partial files
    of those), the manifests, the plan and the state records. Split folders
    left empty are removed; files a user put beside the shards stay.
    ``found``: OUT's :func:`survey`, when the caller just made it (each
    manifest is then read once in all).

    Raises:
        ConfigError: a ``manifest.json`` there is not fastdata's (nothing is deleted).
    """
    out = Path(out)
    if found is not None and found.kind == FINISHED:
        manifests, problem = found.manifests, found.problem
    else:  # an unfinished OUT may hold the manifests of a run that stopped while finishing
        manifests, problem = _read_manifests(out)
    if problem:
        raise ConfigError(f"{problem}, {NOT_OURS}")
    doomed = [path for directory, manifest in manifests.items() for path in written_files(directory, manifest)]
    try:
        plan = Plan.load(out) if (out / PLAN_NAME).exists() else None
    except (ManifestError, OSError, UnicodeDecodeError):
        plan = None  # unreadable: its shards cannot be named, so they stay (a new run replaces same-named ones)
    if plan is not None:
        for shard in plan.shards:
            doomed += shard_files(plan.split_dir(out, shard.split), shard.file)
    doomed += [out / STATE_DIR, out / LOCK_NAME, out / PLAN_NAME, *out.glob(f"{PLAN_NAME}.*{PARTIAL_SUFFIX}")]
    for path in doomed:
        remove(path)
    for split in SPLIT_NAMES:
        directory = out / split
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()


#: Why fastdata refuses an output folder it did not write, even with --overwrite.
NOT_OURS = (
    "so this output directory was not written by fastdata, and fastdata never deletes files it did not write "
    "(even with --overwrite): choose a new or empty output directory"
)


def shard_files(directory: Path, file: str) -> list[Path]:
    """Every name a shard's writer may leave in ``directory``: the shard, its
    index (``shard-00000.idx`` for RecordIO, ``shard-00000.tfrecord.idx`` for
    TFRecord), its record checksums (``<shard>.crc``) and their ``.partial`` names."""
    stem = file.rsplit(".", 1)[0]
    names = dict.fromkeys([file, f"{stem}.idx", f"{file}.idx", os.fspath(checksums.sidecar_path(file))])
    return [directory / (name + suffix) for name in names for suffix in ("", PARTIAL_SUFFIX)]


def pieces_of(out: str | os.PathLike[str], shard: ShardPlan) -> Path:
    """The folder of the pieces of a shard cut into pieces (see :mod:`.tail`)."""
    return Path(out) / STATE_DIR / "pieces" / shard.key


def piece_dir(out: str | os.PathLike[str], shard: ShardPlan, piece: int) -> Path:
    """Where piece ``piece`` of a shard is written."""
    return pieces_of(out, shard) / str(piece)


def record_path(out: str | os.PathLike[str], shard: ShardPlan) -> Path:
    return Path(out) / STATE_DIR / f"{shard.key}.json"


def write_record(out: str | os.PathLike[str], shard: ShardPlan, record: ShardRecord) -> None:
    """Mark ``shard`` done (call after its file has its final name)."""
    path = record_path(out, shard)
    path.parent.mkdir(exist_ok=True)
    write_text_atomic(path, json.dumps(record.to_json(), sort_keys=True, ensure_ascii=True) + "\n")


def read_record(out: str | os.PathLike[str], plan: Plan, shard: ShardPlan, *, check: bool = False) -> ShardRecord | None:
    """The shard's record when the shard is done, else None.

    ``check`` also reads the shard's files back and requires the size and
    digests the record holds (what a run about to skip the shard does: the
    record may have reached the disk while the shard's bytes did not).
    """
    path = record_path(out, shard)
    if not path.is_file():
        return None
    try:
        record = ShardRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None  # torn, unreadable or not a record: the shard is simply redone
    if record.info is None:
        return record
    directory = plan.split_dir(out, shard.split)
    if not (directory / shard.file).exists():
        return None
    if check and not _intact(directory, record.info):
        return None
    return record


def _intact(directory: Path, info: ShardInfo) -> bool:
    """Whether the shard's files still have the size and digests its record holds."""
    digests = info.digests or {}
    if not digests:  # a record from before digests: its shard was fsynced when it was written
        return True
    data = next((name for name in digests if name == info.file or name.startswith(f"{info.file}/")), None)
    try:
        if data is not None and (directory / data).stat().st_size != info.bytes:
            return False
        return all(checksums.matches(directory / name, digest) for name, digest in digests.items())
    except OSError:
        return False


def done_records(out: str | os.PathLike[str], plan: Plan) -> dict[str, ShardRecord]:
    return {s.key: r for s in plan.shards if (r := read_record(out, plan, s)) is not None}


def clear_shard(out: str | os.PathLike[str], plan: Plan, shard: ShardPlan, present: set[str] | None = None) -> None:
    """Remove whatever an interrupted attempt left of ``shard``: its record,
    its final-named files (and index), its ``.partial`` files and its pieces.

    ``present``: the names among them that exist (see :func:`present_names`);
    None looks at each (one ``lstat`` a name)."""
    names = [record_path(out, shard), pieces_of(out, shard), *shard_files(plan.split_dir(out, shard.split), shard.file)]
    for leftover in names:
        if present is None or os.fspath(leftover) in present:
            remove(leftover)


def present_names(out: str | os.PathLike[str], plan: Plan, shards: list[ShardPlan]) -> set[str]:
    """Every name now in the folders where :func:`clear_shard` looks for ``shards``'
    leftovers: one listing a folder instead of ten ``lstat`` a shard (a fresh
    output has none of them). Valid until this process writes those shards."""
    state = Path(out) / STATE_DIR
    folders = {plan.split_dir(out, s.split) for s in shards} | {state, state / "pieces"}
    present: set[str] = set()
    for folder in map(os.fspath, folders):
        try:
            present.update(os.path.join(folder, name) for name in os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            pass
    return present


def remove_partials(out: str | os.PathLike[str], plan: Plan) -> None:
    """Discard the ``.partial`` files of the plan's shards (single-node resume)."""
    for shard in plan.shards:
        for leftover in shard_files(plan.split_dir(out, shard.split), shard.file):
            if leftover.name.endswith(PARTIAL_SUFFIX):
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
    remove(out / PLAN_NAME)  # first: from here on OUT counts as finished, for a node that starts now
    remove(out / STATE_DIR)
    remove(out / LOCK_NAME)
