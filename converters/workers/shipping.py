"""``fastdata convert --engine`` on a cluster of several machines whose nodes
share no folder with this one (a URL SRC or OUT): :class:`ShippingPool`.

The conversion keeps everything it keeps on one machine in this process's
folder (the plan, the done records, the shards: the staging folder of a URL
OUT, or OUT itself): ``--resume``, the joins of cut shards and the manifest
work as they do there, and the output is byte for byte the same. Only the
shard tasks run elsewhere: each writes its shard into a temporary folder of
the node it runs on, reading its images from the bucket where it runs
(:func:`..conversion.work.use_source`; a folder SRC must be mounted on every
node at the same path), and hands the shard's files back with its record;
this process puts them where the task would have written them. A task that
dies leaves nothing here; the engine runs it again. The joins of a cut
shard's pieces run here, where the pieces are.

The shard's bytes travel once through the engine (Ray's object store,
Spark's task results): this process's link carries the output, the nodes do
the reading, checking and re-encoding.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastdata.errors import FastDataError
from fastdata.remote.urls import is_url

from .pool import Outcome, Pool

#: Names a shard's file as this process writes it from what a task handed back, until whole.
LANDING = ".landing"


def run_elsewhere(fn: Callable[..., Any], job: Any) -> tuple[Any, dict[str, bytes]]:
    """``fn(job)`` with the job's shard written in a temporary folder of this
    node; returns its value and the files it wrote (name relative to the
    shard's folder -> bytes).

    Raises:
        FastDataError: the job's folder SRC is not on this node.
    """
    root = getattr(job, "sources_root", None)
    if root is not None and not is_url(root) and not os.path.isdir(root):
        raise FastDataError(f"the source folder {root} is not on node {os.uname().nodename}: give SRC as a URL, or "
                            "mount it on every node at the same path")
    with tempfile.TemporaryDirectory(prefix="fastdata-shard-") as tmp:
        folder = Path(tmp)
        value = fn(dataclasses.replace(job, path=str(folder / Path(job.path).name)))
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return value, files


def land(files: dict[str, bytes], folder: Path) -> None:
    """Write ``files`` into ``folder``, each under its final name only once whole."""
    for name, data in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + LANDING)
        partial.write_bytes(data)
        os.replace(partial, target)


class ShippingPool:
    """``inner`` (an engine's pool) whose shard tasks run with :func:`run_elsewhere`
    and whose joins run in this process (see the module docstring)."""

    def __init__(self, inner: Pool) -> None:
        self._pool = inner
        self._tokens = itertools.count()
        self._mine: dict[int, tuple[int, Path]] = {}  # inner token -> (this pool's token, the shard's folder)
        self._inner: dict[int, int] = {}  # this pool's token -> the inner one, while it runs there
        self._done: list[tuple[int, Outcome]] = []  # joins run here, answered at the next completed()
        self.shipped = 0  # bytes handed back by tasks

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        token = next(self._tokens)
        job: Any = args[0] if args else None
        if not hasattr(job, "path"):  # a join: its pieces are here
            started = time.monotonic()
            try:
                self._done.append((token, Outcome(fn(*args), seconds=time.monotonic() - started)))
            except Exception as exc:  # noqa: BLE001 - raised again by the caller, as a worker's error is
                self._done.append((token, Outcome(error=exc, seconds=time.monotonic() - started)))
            return token
        inner = self._pool.submit(run_elsewhere, fn, job)
        self._mine[inner], self._inner[token] = (token, Path(job.path).parent), inner
        return token

    def idle(self) -> int:
        return self._pool.idle()

    def started(self, token: int) -> float | None:
        inner = self._inner.get(token)
        return self._pool.started(inner) if inner is not None else None

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        done, self._done = self._done, []
        if done:
            timeout = 0.0  # answered without waiting for the engine
        if self._mine:
            for inner, outcome in self._pool.completed(timeout):
                token, folder = self._mine.pop(inner)
                del self._inner[token]
                if outcome.error is None:
                    value, files = outcome.value
                    land(files, folder)
                    self.shipped += sum(len(d) for d in files.values())
                    outcome = Outcome(value, seconds=outcome.seconds)
                done.append((token, outcome))
        return done

    def reports(self) -> Iterator[Any]:
        return self._pool.reports()

    def __enter__(self) -> ShippingPool:
        self._pool.__enter__()
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self._pool.__exit__(kind, *exc)
