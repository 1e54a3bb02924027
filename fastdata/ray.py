"""A fastdata dataset as a Ray Data ``Dataset`` (:func:`read_shards`), and a
``Dataset`` of images written as one (:func:`write_shards`).

So that a Ray cluster's CPU-only nodes can decode and crop for GPU nodes, a
read task builds each sample exactly as a loader does: ``dataset[key]``
under the sample's key ``(index, seed, epoch)``, whose generator
(:func:`fastdata.order.seeds.sample_generator`, made current by
:class:`fastdata.order.KeyScope`) draws the crop and flip. For a seed and
an epoch the rows, in order, are the samples ``make_loader(dataset,
seed=seed, rank=rank, world_size=world_size)`` deals that rank in that
epoch, with the same pixels.

:func:`write_shards` is the engine ``fastdata.converters.engines.ray``
(Ray Data's ``Datasink``: each write task writes whole shards under an
attempt folder of its own; the driver commits the attempts Ray Data counted
and writes the one manifest last).

Needs the extra ``fastdata[ray]``; importing :mod:`fastdata` never imports Ray.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from .datasets.open import open_dataset
from .errors import ConfigError
from .loading.sampler import ShardedSampler
from .order.generators import SampleKey

__all__ = ["read_shards", "write_shards"]


def read_shards(path: Any, *, seed: int | None = None, epoch: int = 0, rank: int = 0, world_size: int = 1,
                transform: Any = None, tasks: int | None = None, **dataset_options: Any) -> Any:
    """Read the dataset at ``path`` (anything :func:`fastdata.open_dataset`
    opens: a converted directory, shards MXNet or TensorFlow wrote, a URL)
    as a ``ray.data.Dataset``.

    Rows: ``key`` (int64, the sample's index in the dataset), ``target``, and
    ``bytes`` (the stored image, undecoded) without ``transform``, or ``image``
    (uint8, what ``transform`` returns, as a NumPy array) with it.

    Args:
        path: the dataset.
        seed: ``None``: every sample once, in stored order, one read task per
            shard (or a run of whole shards). An int: the samples the loader's
            sampler deals ``rank`` of ``world_size`` in ``epoch`` for this
            seed (shuffled, padded to equal shares, as ``make_loader(...,
            train=True)``), in that order, cut into ``tasks`` runs; a
            ``transform`` then draws each sample's crop from its own stream.
        epoch, rank, world_size: the loader's place and epoch (with ``seed``).
        transform: a fastdata transform (decode-aware ones crop while
            decoding), applied in the read tasks.
        tasks: read tasks (default: one per shard, at most 200). Ray Data keeps
            the rows in the order above when its ``DataContext``'s
            ``execution_options.preserve_order`` is True; otherwise each
            task's rows stay together but tasks may finish in any order.
        **dataset_options: passed to :func:`fastdata.open_dataset` (``on_error``, ``decode``...).

    Raises:
        ConfigError: Ray Data is not installed, or bad ``tasks``/place.
    """
    try:
        from ray.data import read_datasource
        from ray.data.datasource import Datasource
    except ImportError:
        raise ConfigError("fastdata.ray.read_shards needs Ray Data: pip install 'fastdata[ray]'") from None
    if tasks is not None and tasks < 1:
        raise ConfigError(f"read_shards: tasks must be at least 1, got {tasks}")
    dataset = open_dataset(path, transform=transform, **dataset_options)
    keys, runs = _read_runs(dataset, seed, epoch, rank, world_size, tasks)

    class _Shards(Datasource):
        def estimate_inmemory_data_size(self) -> int | None:
            return None

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[Any]:
            from ray.data.block import BlockMetadata
            from ray.data.datasource import ReadTask

            return [ReadTask(_reader(dataset, keys[a:b], transform is not None),
                             BlockMetadata(num_rows=b - a, size_bytes=None, exec_stats=None, input_files=None))
                    for a, b in runs]

    return read_datasource(_Shards(), override_num_blocks=len(runs))


def write_shards(ds: Any, out: str | os.PathLike[str], *, format: str, image: str = "bytes",
                 label: str = "label", name: str | None = "path", classes: list[str] | None = None,
                 encode: Any = None, on_error: str = "skip", storage_options: dict[str, Any] | None = None,
                 ray_remote_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the ``ray.data.Dataset`` ``ds`` into the dataset folder ``out``
    (or a URL: ``s3://bucket/prefix``, with ``storage_options``), one shard a
    block, and return a summary (``shards``, ``images``, ``skipped``).

    Sample ids are the rows' positions in ``ds``'s order (its blocks in
    order, then their rows); ``ds.repartition(n)`` first for ``n`` shards. A
    write task whose worker dies is retried and its first attempt's files
    removed; a job that fails leaves no manifest. See
    ``fastdata.converters.engines.ray.write_shards`` for each argument
    (``image``: the column of the image bytes, ``bytes`` as
    ``ray.data.read_binary_files`` names it, or of each file's path or URL;
    ``name``: ``path`` with ``include_paths=True``).

    Raises:
        ConfigError: Ray Data or the converters are not installed; an unknown
            format, a missing column, or ``out`` already finished (or a read-only URL).
    """
    try:
        import ray.data  # noqa: F401 -- imported here so that its absence is named

        from fastdata.converters.engines import ray as engine
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("fastdata.converters"):
            raise ConfigError("fastdata.ray.write_shards needs fastdata.converters, which a source checkout "
                              "imported from its root lacks: pip install -e . (or run from another directory)") from None
        raise ConfigError(f"fastdata.ray.write_shards needs Ray Data ({exc.name} is missing): "
                          "pip install 'fastdata[ray]'") from None
    return engine.write_shards(ds, out, format=format, image=image, label=label, name=name, classes=classes,
                               encode=encode, on_error=on_error, storage_options=storage_options,
                               ray_remote_args=ray_remote_args)


def _read_runs(dataset: Any, seed: int | None, epoch: int, rank: int, world_size: int,
               tasks: int | None) -> tuple[list[Any], list[tuple[int, int]]]:
    """The keys to read, in order, and the (start, stop) run of them each read
    task takes (see :func:`read_shards`'s ``seed`` and ``tasks``)."""
    if seed is None:
        keys: list[Any] = list(range(len(dataset)))
        cuts = _shard_cuts(dataset, tasks)
    else:
        sampler = ShardedSampler(len(dataset), seed=seed, epoch=epoch, rank=rank, world_size=world_size, keys=True)
        keys = list(sampler)
        count = tasks or min(200, max(1, len(_counts(dataset))))
        cuts = [round(k * len(keys) / count) for k in range(count + 1)]
    runs = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
    return keys, runs


def _shard_cuts(dataset: Any, tasks: int | None) -> list[int]:
    """Where read tasks start and stop in stored order: at shard boundaries,
    whole shards per task (a dataset without shards: even runs)."""
    n = len(dataset)
    counts = _counts(dataset)
    if not counts:
        count = tasks or 1
        return [round(k * n / count) for k in range(count + 1)]
    ends = np.cumsum([0, *counts]).tolist()
    count = min(tasks or min(200, len(counts)), len(counts))
    return [ends[round(k * len(counts) / count)] for k in range(count + 1)]


def _counts(dataset: Any) -> list[int]:
    """The samples of each shard, in order (empty for a dataset without shards: an image folder)."""
    shards = getattr(dataset, "shards", None)
    counts = getattr(shards, "counts", None)
    return [int(c) for c in counts] if counts is not None else []


def _reader(dataset: Any, keys: list[Any], decoded: bool) -> Any:
    """The read function of one task: it builds its block of rows from ``keys``."""

    def read() -> Iterator[Any]:
        from ray.data.block import BlockAccessor

        index, targets, values = [], [], []
        for key in keys:
            i = key.index if isinstance(key, SampleKey) else int(key)
            if decoded:
                image, target = dataset[key]
                values.append(np.asarray(image))
            else:
                data, target, _ = dataset.encoded(i)
                values.append(data)
            index.append(i)
            targets.append(np.asarray(target))
        batch: dict[str, Any] = {"key": np.asarray(index, dtype=np.int64),
                                 "target": np.stack(targets) if targets else np.zeros(0)}
        if decoded:
            batch["image"] = values
        else:
            batch["bytes"] = np.array(values, dtype=object)
        yield BlockAccessor.batch_to_block(batch)

    return read
