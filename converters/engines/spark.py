"""A Spark DataFrame of images written as a fastdata dataset: :func:`write_shards`.

Each partition becomes one shard, written by the executor that holds it:
its rows' image bytes are checked and normalised as ``fastdata convert``
does them (:func:`..conversion.normalize.prepare`) and streamed into the
format's ``write_shard``. The commit rule: a task attempt writes under
``OUT/.fastdata-attempts/<partition>-<attempt id>/``, a name of its own, and
returns its shard's record; the driver takes the one attempt Spark counted
for each partition, moves its files into OUT (copies them, in a bucket),
removes every other attempt (a retried task's, a speculative copy's), and
writes the one manifest last.
A job that fails leaves no manifest (and removes its attempts). The task
and the commit are :mod:`.commit`'s, shared with :mod:`.ray`.

Installed as ``fastdata.converters.engines.spark`` (the library never imports the converters).
"""

from __future__ import annotations

import os
from typing import Any

from fastdata.formats import registry

from ..conversion.normalize import EncodeOptions
from .commit import (
    ATTEMPTS,
    Attempt,
    Output,
    ShardOptions,
    abandon,
    check_options,
    commit,
    prepare_output,
    write_attempt,
)

__all__ = ["ATTEMPTS", "write_shards"]


def write_shards(df: Any, out: str | os.PathLike[str], *, format: str, image: str = "content",
                 label: str = "label", name: str | None = "path", classes: list[str] | None = None,
                 encode: EncodeOptions | None = None, on_error: str = "skip",
                 storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``df`` into the dataset folder ``out`` (one shard a partition; an
    empty partition writes none) and return a summary (``shards``, ``images``,
    ``skipped``: ``(name, reason)`` of each image left out).

    Args:
        df: a DataFrame with an ``image`` column, binary (``spark.read.format("binaryFile")``
            gives ``content`` and ``path``) or the path or URL of each image file (a
            string column: each task reads its files, a path every executor sees or
            a URL such as ``s3://``), and an integer ``label`` column. Sample ids
            follow the partitions' order, then the rows'.
        out: a folder every executor sees at the same path (shared filesystem),
            or a URL (``s3://bucket/prefix``: each task uploads its shard, the
            driver copies the counted ones into place); it must not hold a
            manifest yet.
        format: a registered format (``recordio``, ``tfrecord``, ``lmdb``...).
        image, label, name: the columns of the image, the class index and the
            name shown in messages and stored as the sample's file name (None: none;
            then a path column's path is the name).
        classes: the class names (index = label); default ``["0", "1", ...]``.
        encode: how images are stored (default: as ``fastdata convert --passthrough``).
        on_error: ``"skip"`` leaves unreadable images out (listed in the
            summary); ``"raise"`` fails the job at the first one.
        storage_options: fsspec options of a URL ``out`` (``endpoint_url``...),
            shipped to the tasks. Credentials come from each executor's
            environment, as everywhere in fastdata (an instance role, or
            ``spark.executorEnv.AWS_ACCESS_KEY_ID``...), never from here.

    Raises:
        ConfigError: an unknown format, a missing column, ``out`` already
            finished or a read-only URL, credentials in ``storage_options``.
    """
    spec = registry.get(format)
    check_options("write_shards", list(df.columns), [image, label, name], on_error)
    output = prepare_output(out, storage_options)
    options = ShardOptions(spec.name, encode or EncodeOptions(), on_error, classes)
    columns = [image, label] + ([name] if name is not None else [])
    rows = df.select(*columns).rdd
    counts = rows.mapPartitionsWithIndex(lambda k, it: [(k, sum(1 for _ in it))]).collect()
    first = {}
    total = 0
    for k, n in sorted(counts):
        first[k] = total
        total += n
    try:
        results = rows.mapPartitionsWithIndex(_ShardTask(output, first, options)).collect()
    except BaseException:
        abandon(output)
        raise
    return commit(output, results, options, "spark")


class _ShardTask:
    """What each partition's task runs (picklable: Spark ships it to the executors)."""

    def __init__(self, output: Output, first: dict[int, int], options: ShardOptions) -> None:
        self.output, self.first, self.options = output, first, options

    def __call__(self, partition: int, rows: Any) -> list[Attempt]:
        start = self.first[partition]
        numbered = ((start + i, row[0], row[1], row[2] if len(row) > 2 else None) for i, row in enumerate(rows))
        return [write_attempt(self.output, f"{partition:05d}", partition, numbered, self.options)]
