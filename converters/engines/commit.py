"""What the Spark and the Ray writers share: one task attempt writing one
shard under a folder of its own (:func:`write_attempt`), and the driver's
commit of the attempts the engine counted (:func:`commit`).

The rule: an attempt writes ``OUT/.fastdata-attempts/<shard>-<uuid>/`` and
returns an :class:`Attempt`; only the attempts the engine hands back as its
job's result are moved into OUT; every other (a retried task's, a killed
worker's half shard, a speculative copy's) goes with the attempts folder,
which is removed whether the job finished or not; the manifest is written
last, so a job that fails leaves no dataset that reads as whole. On object
storage (OUT a URL) the same rule runs as uploads, copies and deletes
(:mod:`.bucket`).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fastdata.errors import ConfigError
from fastdata.formats import dataset_writer, registry
from fastdata.formats.sample import Sample, ShardInfo
from fastdata.remote.urls import is_url

from ..conversion.normalize import EncodeOptions, prepare
from ..planning.scan import SkippedFile

#: Where task attempts write, under OUT; removed before the manifest is written.
ATTEMPTS = ".fastdata-attempts"

#: One row as a task hands it to :func:`write_attempt`: (sample id, image bytes or the path or URL
#: of the image file, label, name or None).
Row = tuple[int, "bytes | str", int, "str | None"]


@dataclasses.dataclass(frozen=True)
class ShardOptions:
    """How every task writes its shard (picklable: shipped to the engine's workers)."""

    format: str
    encode: EncodeOptions = dataclasses.field(default_factory=EncodeOptions)
    on_error: str = "skip"
    classes: list[str] | None = None


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What one task attempt wrote: ``order`` places its shard among the
    others; ``folder`` is its attempt folder ("" when it wrote nothing);
    ``info`` the shard (None: every row skipped, or no rows); ``top`` the
    largest label written (-1: none). ``folder`` is a path, or under a URL
    output an object prefix relative to OUT."""

    order: int
    folder: str
    info: ShardInfo | None
    images: int
    skipped: list[tuple[str, str]]
    top: int
    files: tuple[str, ...] = ()  # every file in ``folder``, relative to it


def check_options(who: str, columns: list[str], wanted: list[str | None], on_error: str) -> None:
    """Refuse a missing column or an unknown ``on_error`` before any task runs.

    Raises:
        ConfigError: naming the missing columns and those there are.
    """
    missing = [c for c in wanted if c is not None and c not in columns]
    if missing:
        raise ConfigError(f"{who}: the data has no column {', '.join(map(repr, missing))} "
                          f"(it has {', '.join(columns)})")
    if on_error not in ("skip", "raise"):
        raise ConfigError(f"{who}: on_error must be 'skip' or 'raise', got {on_error!r}")


@dataclasses.dataclass(frozen=True)
class Output:
    """Where a job writes (picklable: shipped to the tasks): ``out``, an
    absolute folder every worker sees or a URL; ``storage`` the fsspec
    options of a URL, without credentials (``endpoint_url``...)."""

    out: str
    storage: dict[str, Any] | None = None

    @property
    def is_url(self) -> bool:
        return is_url(self.out)

    @property
    def attempts(self) -> str:
        """Where task attempts write: a folder, or under a URL the prefix (relative to ``out``)."""
        return ATTEMPTS if self.is_url else os.path.join(self.out, ATTEMPTS)

    def store(self) -> Any:
        from fastdata.remote.store import Store

        return Store(self.out, dict(self.storage or {}))


def prepare_output(out: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> Output:
    """``out`` checked and readied: a folder made absolute with its attempts
    folder created; a URL checked writable (see :func:`.bucket.open_bucket`).

    Raises:
        ConfigError: ``out`` already holds a finished dataset, or is a
            read-only URL; ``storage_options`` hold credentials.
    """
    if is_url(os.fspath(out)):
        from fastdata.remote.store import without_credentials

        from .bucket import open_bucket

        options = without_credentials(storage_options, (
            "they would travel to every task of write_shards; give them through the workers' environment instead: an "
            "instance role, spark.executorEnv.AWS_ACCESS_KEY_ID (and ..._SECRET_ACCESS_KEY) for Spark, "
            "ray_remote_args={'runtime_env': {'env_vars': {...}}} for Ray"))
        output = Output(os.fspath(out).rstrip("/"), options)
        open_bucket(output.store(), output.attempts)
        return output
    folder = Path(out).absolute()
    if (folder / "manifest.json").exists():
        raise ConfigError(f"{folder} already holds a finished dataset; write into another folder")
    (folder / ATTEMPTS).mkdir(parents=True, exist_ok=True)
    return Output(str(folder))


def abandon(output: Output) -> None:
    """Remove every attempt of a job that did not finish (no manifest is written)."""
    if output.is_url:
        from .bucket import remove_prefix

        remove_prefix(output.store(), output.attempts)
    else:
        shutil.rmtree(output.attempts, ignore_errors=True)


def write_attempt(output: Output, shard: str, order: int, rows: Iterable[Row], options: ShardOptions) -> Attempt:
    """Write ``rows`` (ids increasing) as the shard ``shard-<shard>`` in an
    attempt folder of its own under ``output``'s attempts (for a URL: written
    locally, then uploaded there). An unreadable image is left out and
    listed (``on_error="skip"``) or fails the task (``"raise"``)."""
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return Attempt(order, "", None, 0, [], -1)
    name = f"{shard}-{uuid.uuid4().hex}"
    if not output.is_url:
        folder = Path(output.attempts) / name
        folder.mkdir(parents=True)
        return _write_shard(folder, shard, order, itertools.chain([first], rows), options)
    from .bucket import upload_attempt

    with tempfile.TemporaryDirectory(prefix="fastdata-attempt-") as tmp:
        folder = Path(tmp) / name
        folder.mkdir()
        attempt = _write_shard(folder, shard, order, itertools.chain([first], rows), options)
        prefix = upload_attempt(output.store(), output.attempts, folder, attempt.files) if attempt.info else ""
    return dataclasses.replace(attempt, folder=prefix)


def _write_shard(folder: Path, shard: str, order: int, rows: Iterator[Row], options: ShardOptions) -> Attempt:
    skipped: list[tuple[str, str]] = []
    top = [-1]
    classes = options.classes

    def samples() -> Iterator[Sample]:
        for sample_id, data, label, name in rows:
            label = int(label)
            shown = str(name) if name is not None else data if isinstance(data, str) else f"row {sample_id}"
            try:
                img = prepare(image_bytes(data), shown, options.encode)
            except SkippedFile as exc:
                if options.on_error == "raise":
                    raise
                skipped.append((shown, exc.reason))
                continue
            top[0] = max(top[0], label)
            yield Sample(image=img.data, label=label, id=sample_id, filename=shown, height=img.height,
                         width=img.width, class_text=classes[label] if classes and 0 <= label < len(classes) else "")

    spec = registry.get(options.format)
    info = spec.write_shard(str(folder / f"shard-{shard}{spec.suffix}"), samples())
    files = tuple(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()))
    # an all-skipped shard is left out (DALI's mxnet index cannot hold an empty one)
    return Attempt(order, str(folder), info if info.records else None, info.records, skipped, top[0], files)


def image_bytes(value: Any) -> bytes:
    """An image column's value: its bytes, or for a string the file it names
    (a path every worker sees, or a URL fsspec opens: ``s3://``, ``gs://``...)
    read by the task.

    Raises:
        SkippedFile: the file cannot be read (named, with why).
    """
    if not isinstance(value, str):
        return bytes(value)
    try:
        if "://" in value:
            import fsspec

            with fsspec.open(value, "rb") as f:
                return f.read()
        with open(value, "rb") as f:
            return f.read()
    except (OSError, ValueError) as exc:  # fsspec names an unknown protocol with a ValueError
        raise SkippedFile(value, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None


def commit(output: Output, counted: list[Attempt], options: ShardOptions, engine: str, *,
           renumber: bool = False) -> dict[str, Any]:
    """Move the counted attempts' files into ``output`` (in ``order``; on a
    URL, copy them), remove every attempt (those not counted with them),
    write the manifest last; return the summary (``shards``, ``images``,
    ``skipped``).

    ``renumber``: the shards are named ``shard-00000...`` in ``order`` as
    they are moved (an engine whose tasks cannot know their shard's place).
    """
    counted = sorted(counted, key=lambda a: a.order)
    suffix = registry.get(options.format).suffix
    infos: list[ShardInfo] = []
    moves: list[tuple[str, str]] = []  # (attempt's file, its final name), relative to the attempt and to OUT
    for attempt in counted:
        if attempt.info is None:
            continue
        old = attempt.info.file[: -len(suffix)] if suffix else attempt.info.file
        new = dataset_writer.shard_name(options.format, len(infos))[: -len(suffix) or None] if renumber else old
        moves += [(f"{attempt.folder}/{name}", _renamed(name, old, new)) for name in attempt.files]
        infos.append(_renamed_info(attempt.info, old, new))
    top = max((a.top for a in counted), default=-1)
    names = options.classes if options.classes is not None else [str(c) for c in range(top + 1)]
    extra = {"converter": {"engine": engine}}
    if output.is_url:
        from .bucket import commit_objects, finish

        store = output.store()
        commit_objects(store, moves, output.attempts)
        finish(store, options.format, infos, names, extra)
    else:
        try:
            for old_path, new_name in moves:
                target = Path(output.out) / new_name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(old_path, target)
        finally:
            abandon(output)
        dataset_writer.finish_dataset(output.out, options.format, infos, names, extra=extra)
    return {"shards": len(infos), "images": sum(a.images for a in counted),
            "skipped": [s for a in counted for s in a.skipped]}


def _renamed(name: str, old: str, new: str) -> str:
    """A shard file's name (``shard-x.rec``, ``shard-x.rec.crc``, ``shard-x.lmdb/data.mdb``) with the stem ``new``."""
    return new + name[len(old):] if name.startswith(old + ".") else name


def _renamed_info(info: ShardInfo, old: str, new: str) -> ShardInfo:
    if old == new:
        return info
    return dataclasses.replace(
        info, file=_renamed(info.file, old, new),
        index=None if info.index is None else _renamed(info.index, old, new),
        checksums=None if info.checksums is None else _renamed(info.checksums, old, new),
        digests={_renamed(k, old, new): v for k, v in info.digests.items()})
