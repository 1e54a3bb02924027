"""A Spark DataFrame of images written as a fastdata dataset: :func:`write_shards`.

Each partition becomes one shard, written by the executor that holds it:
its rows' image bytes are checked and normalised as ``fastdata convert``
does them (:func:`..conversion.normalize.prepare`) and streamed into the
format's ``write_shard``. The commit rule: a task attempt writes under
``OUT/.fastdata-attempts/<partition>-<attempt id>/``, a name of its own, and
returns its shard's record; the driver takes the one attempt Spark counted
for each partition, moves its files into OUT, removes every other attempt
(a retried task's, a speculative copy's), and writes the one manifest last.
A job that fails leaves no manifest (and removes its attempts).

Installed as ``fastdata.converters.engines.spark`` (the library never imports the converters).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from fastdata.errors import ConfigError
from fastdata.formats import dataset_writer, registry
from fastdata.formats.sample import Sample

from ..conversion.normalize import EncodeOptions, prepare
from ..planning.scan import SkippedFile

__all__ = ["write_shards"]

#: Where task attempts write, under OUT; removed before the manifest is written.
ATTEMPTS = ".fastdata-attempts"


def write_shards(df: Any, out: str | os.PathLike[str], *, format: str, image: str = "content",
                 label: str = "label", name: str | None = "path", classes: list[str] | None = None,
                 encode: EncodeOptions | None = None, on_error: str = "skip") -> dict[str, Any]:
    """Write ``df`` into the dataset folder ``out`` (one shard a partition; an
    empty partition writes none) and return a summary (``shards``, ``images``,
    ``skipped``: ``(name, reason)`` of each image left out).

    Args:
        df: a DataFrame with a binary ``image`` column (``spark.read.format("binaryFile")``
            gives ``content`` and ``path``) and an integer ``label`` column.
            Sample ids follow the partitions' order, then the rows'.
        out: a folder every executor sees at the same path (shared filesystem);
            it must not hold a manifest yet.
        format: a registered format (``recordio``, ``tfrecord``, ``lmdb``...).
        image, label, name: the columns of the bytes, the class index and the
            name shown in messages and stored as the sample's file name (None: none).
        classes: the class names (index = label); default ``["0", "1", ...]``.
        encode: how images are stored (default: as ``fastdata convert --passthrough``).
        on_error: ``"skip"`` leaves unreadable images out (listed in the
            summary); ``"raise"`` fails the job at the first one.

    Raises:
        ConfigError: an unknown format, a missing column, ``out`` already finished.
    """
    spec = registry.get(format)
    missing = [c for c in (image, label, name) if c is not None and c not in df.columns]
    if missing:
        raise ConfigError(f"write_shards: the DataFrame has no column {', '.join(map(repr, missing))} "
                          f"(it has {', '.join(df.columns)})")
    if on_error not in ("skip", "raise"):
        raise ConfigError(f"write_shards: on_error must be 'skip' or 'raise', got {on_error!r}")
    out = Path(out).absolute()
    if (out / "manifest.json").exists():
        raise ConfigError(f"{out} already holds a finished dataset; write into another folder")
    attempts = out / ATTEMPTS
    attempts.mkdir(parents=True, exist_ok=True)
    columns = [image, label] + ([name] if name is not None else [])
    rows = df.select(*columns).rdd
    counts = rows.mapPartitionsWithIndex(lambda k, it: [(k, sum(1 for _ in it))]).collect()
    first = {}
    total = 0
    for k, n in sorted(counts):
        first[k] = total
        total += n
    task = _ShardTask(str(attempts), spec.name, first, encode or EncodeOptions(), on_error, classes)
    try:
        results = sorted(rows.mapPartitionsWithIndex(task).collect())
        for _, folder, info, *_ in results:
            if info is not None:
                for entry in sorted(Path(folder).iterdir()):
                    os.replace(entry, out / entry.name)
    finally:
        shutil.rmtree(attempts, ignore_errors=True)  # every attempt Spark did not count, and the counted ones' folders
    infos = [info for _, _, info, _, _, _ in results if info is not None]
    top = max((r[5] for r in results), default=-1)
    names = classes if classes is not None else [str(c) for c in range(top + 1)]
    dataset_writer.finish_dataset(out, spec.name, infos, names, extra={"converter": {"engine": "spark"}})
    skipped = [s for r in results for s in r[4]]
    return {"shards": len(infos), "images": sum(r[3] for r in results), "skipped": skipped}


class _ShardTask:
    """What each partition's task runs (picklable: Spark ships it to the executors)."""

    def __init__(self, attempts: str, fmt: str, first: dict[int, int], encode: EncodeOptions, on_error: str,
                 classes: list[str] | None) -> None:
        self.attempts, self.fmt, self.first = attempts, fmt, first
        self.encode, self.on_error, self.classes = encode, on_error, classes

    def __call__(self, partition: int, rows: Any) -> list[tuple]:
        rows = list(rows)
        if not rows:
            return [(partition, "", None, 0, [], -1)]
        folder = Path(self.attempts) / f"{partition:05d}-{uuid.uuid4().hex}"
        folder.mkdir(parents=True)
        skipped: list[tuple[str, str]] = []
        top = [-1]

        def samples():
            for i, row in enumerate(rows):
                label = int(row[1])
                shown = str(row[2]) if len(row) > 2 else f"row {self.first[partition] + i}"
                try:
                    img = prepare(bytes(row[0]), shown, self.encode)
                except SkippedFile as exc:
                    if self.on_error == "raise":
                        raise
                    skipped.append((shown, exc.reason))
                    continue
                top[0] = max(top[0], label)
                yield Sample(image=img.data, label=label, id=self.first[partition] + i, filename=shown,
                             height=img.height, width=img.width,
                             class_text=self.classes[label] if self.classes and 0 <= label < len(self.classes) else "")

        spec = registry.get(self.fmt)
        info = spec.write_shard(str(folder / f"shard-{partition:05d}{spec.suffix}"), samples())
        # an all-skipped partition writes no shard (DALI's mxnet index cannot hold an empty one)
        return [(partition, str(folder), info if info.records else None, info.records, skipped, top[0])]
