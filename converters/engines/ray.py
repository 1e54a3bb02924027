"""A Ray Data ``Dataset`` of images written as a fastdata dataset: :func:`write_shards`.

The same commit rule as :mod:`.spark` (:mod:`.commit`), on Ray Data's
``Datasink``: each write task writes every block it is handed as one whole
shard in an attempt folder of its own (``OUT/.fastdata-attempts/...``) and
returns what it wrote; the driver (``on_write_complete``) moves (in a
bucket, copies) only the attempts Ray Data counted into OUT, removes the
attempts folder (a retried task's, a killed worker's half shard), and
writes the manifest last. A job that fails (``on_write_failed``, or the
write raising) leaves no manifest and no attempts folder.

Sample ids are the rows' positions in the dataset's order: the dataset is
first materialized with ``preserve_order`` (its blocks in their order, run
after run), each block numbered from where the one before it ended; shards
are those blocks, in id order, named ``shard-00000...`` at the commit. A
write task cannot know where its rows fall until every block before it is
counted, hence the materializing: the dataset sits in Ray's object store
(spilled to disk when it outgrows memory) while it is written, as a Spark
DataFrame is computed twice by :mod:`.spark` for the same reason.

Installed as ``fastdata.converters.engines.ray`` (the library never imports the converters).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import ray
from ray.data import Dataset, Datasink, from_arrow_refs
from ray.data.block import BlockAccessor
from ray.data.datasource.datasink import WriteResult

from fastdata.errors import ConfigError
from fastdata.formats import registry

from ..conversion.normalize import EncodeOptions
from .commit import Attempt, Output, Row, ShardOptions, abandon, check_options, commit, prepare_output, write_attempt

__all__ = ["write_shards"]

#: The column of sample ids the driver adds (read by the write tasks, not stored).
ID = "__fastdata_id"


def write_shards(ds: Any, out: str | os.PathLike[str], *, format: str, image: str = "bytes",
                 label: str = "label", name: str | None = "path", classes: list[str] | None = None,
                 encode: EncodeOptions | None = None, on_error: str = "skip",
                 storage_options: dict[str, Any] | None = None,
                 ray_remote_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``ds`` into the dataset folder ``out``, one shard a block, and
    return a summary (``shards``, ``images``, ``skipped``: ``(name, reason)``
    of each image left out).

    Args:
        ds: a ``ray.data.Dataset`` with an ``image`` column, binary
            (``ray.data.read_binary_files(root, include_paths=True)`` gives
            ``bytes`` and ``path``) or each image file's path or URL, and an
            integer ``label`` column. Each of its blocks becomes one shard (an
            empty or all-skipped block none): ``ds.repartition(n)`` first for
            ``n`` shards. Sample ids follow the blocks' order, then the rows'.
        out, format, image, label, name, classes, encode, on_error, storage_options: as for
            :func:`fastdata.converters.engines.spark.write_shards` (``out``: a
            folder every write task sees at the same path, or a URL; the
            write tasks' credentials come from their environment:
            ``ray_remote_args={"runtime_env": {"env_vars": {...}}}`` gives it).
        ray_remote_args: passed to ``Dataset.write_datasink`` for the write
            tasks (``{"max_retries": 5}``...). Ray retries a task whose worker
            died; its first attempt's files are removed, never committed.

    Raises:
        ConfigError: an unknown format, a missing column, ``out`` already
            finished or a read-only URL, credentials in ``storage_options``.
        ray.exceptions.RayError: a write task failed on every attempt (no
            manifest and no attempts folder are left).
    """
    spec = registry.get(format)
    have = list(ds.columns())
    check_options("write_shards", have, [image, label, name], on_error)
    if ID in have:
        raise ConfigError(f"write_shards: the column name {ID!r} is fastdata's own; rename that column")
    columns = [image, label] + ([name] if name is not None else [])
    # ids need each block's rows before any shard is written: the blocks are materialized in the dataset's
    # order (preserve_order, set on a context of its own: the caller's is left as it was), then numbered
    ordered = Dataset.copy(ds, _deep_copy=True)
    ordered.context.execution_options.preserve_order = True
    output = prepare_output(out, storage_options)
    options = ShardOptions(spec.name, encode or EncodeOptions(), on_error, classes)
    sink = _ShardSink(output, columns, options)
    try:
        numbered = _numbered(ordered.select_columns(columns).materialize())
        numbered.write_datasink(sink, ray_remote_args=ray_remote_args)
    except BaseException:
        abandon(output)
        raise
    return commit(output, sink.counted, options, "ray", renumber=True)


def _numbered(blocks: Any) -> Any:
    """``blocks`` (materialized) with the column :data:`ID`: each row's
    position, block after block in their order."""
    number = ray.remote(_number_block)
    refs: list[Any] = []
    first = 0
    for bundle in blocks.iter_internal_ref_bundles():
        for ref, meta in zip(bundle.block_refs, bundle.metadata, strict=True):
            refs.append(number.remote(ref, first))
            first += meta.num_rows
    return from_arrow_refs(refs)


def _number_block(block: Any, first: int) -> Any:
    """One block as an Arrow table with the ids ``first, first + 1, ...`` (runs as a Ray task)."""
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information

    table = BlockAccessor.for_block(block).to_arrow()
    return table.append_column(ID, pa.array(range(first, first + table.num_rows), pa.int64()))


class _ShardSink(Datasink[list[Attempt]]):
    """The write tasks' side (``write``: every block one shard) and the
    driver's (``on_write_complete``: keep what Ray Data counted)."""

    def __init__(self, output: Output, columns: list[str], options: ShardOptions) -> None:
        self.output, self.columns, self.options = output, columns, options
        self.counted: list[Attempt] = []

    def get_name(self) -> str:
        return "fastdata_shards"

    def write(self, blocks: Iterable[Any], ctx: Any) -> list[Attempt]:
        written = []
        for k, block in enumerate(blocks):
            table = BlockAccessor.for_block(block).to_arrow()
            if table.num_rows == 0:
                continue
            ids = table.column(ID).to_pylist()
            # a stem that is unique among the job's attempts; the commit renames it shard-<n>
            written.append(write_attempt(self.output, f"{ctx.task_idx:05d}-{k}", ids[0], _rows(table, ids, self.columns),
                                         self.options))
        return written

    def on_write_complete(self, write_result: WriteResult[list[Attempt]]) -> None:
        self.counted = [attempt for returned in write_result.write_returns for attempt in returned]

    def on_write_failed(self, error: Exception) -> None:
        abandon(self.output)


def _rows(table: Any, ids: list[int], columns: list[str]) -> Iterator[Row]:
    """A block's rows as :func:`.commit.write_attempt` takes them: (id, bytes, label, name or None)."""
    values = [table.column(c).to_pylist() for c in columns]
    names = values[2] if len(values) > 2 else [None] * len(ids)
    return zip(ids, values[0], values[1], names, strict=True)
