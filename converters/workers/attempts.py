"""What runs inside an engine's task (Ray, Spark): the pool's ``init`` once per
worker process, then the task, with the commit rule of a cluster.

On one machine a shard's task runs once, or is redone after its worker died.
On a cluster an attempt may be retried while its first try still runs
somewhere (a node that lost contact, Spark's speculative copy), so two
attempts of a shard must never write the same file. A task whose first
argument is a shard job (a frozen dataclass with a ``path``: :class:`.work.ShardJob`;
or a ``target``: the join of a cut shard's pieces, :class:`.work.JoinJob`)
writes its files in a folder of its own beside the shard,
``.fastdata-attempt-<random>/``, and only an attempt that finished moves them
to their final names (one ``rename`` each). A shard's bytes depend only on its
plan, so a second attempt that finishes replaces the files with the same
bytes; an attempt that dies leaves only its own folder, which the pool
removes (:func:`remove_attempts`) before the manifest is written.

Kept free of ``ray`` and ``pyspark``: both pools use it, and their workers import it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: Names the folder of one attempt of a shard, beside the shard's final files.
ATTEMPT_PREFIX = ".fastdata-attempt-"

#: The fields that name where a job writes its shard, by kind of job.
_OUTPUT_FIELDS = ("path", "target")

#: The init already run in this worker process, by the key of its arguments
#: (a worker process outlives a conversion: Ray and Spark reuse them).
_INITIALISED: dict[str, Any] = {"key": None}


def run_task(cwd: str, init: Callable[..., None], init_key: str, get_args: Callable[[], tuple],
             fn: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
    """Run ``fn(*args)`` in a worker of an engine, after ``init(None, *get_args())``
    unless this process ran it already for ``init_key``; returns ``(True, value)``
    or ``(False, error)``: an error of the task itself travels back as a value
    (the engine would retry it, and Spark would turn it into a Java
    exception's text), while a dead worker is left to the engine to retry.

    ``cwd``: the driver's working folder, so that relative paths name the same
    files on every node of a shared filesystem; a node without it (one that
    hands its shards back, :mod:`.shipping`, whose jobs name no relative
    path it reads) stays where it is.
    """
    if os.getcwd() != cwd and os.path.isdir(cwd):
        os.chdir(cwd)
    if _INITIALISED["key"] != init_key:
        init(None, *get_args())
        _INITIALISED["key"] = init_key
    try:
        field = _output_field(args)
        return True, (_isolated(fn, args, field) if field is not None else fn(*args))
    except Exception as exc:  # noqa: BLE001 - raised again by the driver, as a local pool does
        return False, exc


def _output_field(args: tuple) -> str | None:
    """The field of a shard job (the task's first argument) that names its output, or None."""
    if args and dataclasses.is_dataclass(args[0]):
        for field in _OUTPUT_FIELDS:
            if isinstance(getattr(args[0], field, None), str):
                return field
    return None


def _isolated(fn: Callable[..., Any], args: tuple, field: str) -> Any:
    """``fn(job, *rest)`` with the file ``job.<field>`` names moved into an
    attempt folder of its own; the files it leaves there get their final names
    once it returns."""
    job, rest = args[0], args[1:]
    final = Path(getattr(job, field))
    attempt = final.parent / f"{ATTEMPT_PREFIX}{uuid.uuid4().hex}"
    attempt.mkdir()
    try:
        value = fn(dataclasses.replace(job, **{field: str(attempt / final.name)}), *rest)
        for entry in sorted(attempt.iterdir()):
            _commit(entry, final.parent / entry.name)
    finally:
        shutil.rmtree(attempt, ignore_errors=True)
    return value


def _commit(entry: Path, target: Path) -> None:
    try:
        os.replace(entry, target)
    except OSError:
        if not (entry.is_dir() and target.is_dir()):
            raise
        # a folder shard (LMDB) another attempt committed first: the same bytes, keep the first
        shutil.rmtree(entry, ignore_errors=True)


def remove_attempts(folders: Iterable[str | os.PathLike[str]]) -> int:
    """Remove the attempt folders left in ``folders`` by attempts that never
    finished (a killed worker, a lost node, a cancelled speculative copy);
    returns how many were removed."""
    removed = 0
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(ATTEMPT_PREFIX):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed += 1
    return removed


def job_folder(args: tuple) -> str | None:
    """The folder a task's attempts write in (None for a task that is not a shard job)."""
    field = _output_field(args)
    return os.path.abspath(os.path.dirname(getattr(args[0], field))) if field is not None else None
