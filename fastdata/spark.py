"""A Spark DataFrame of images written as a fastdata dataset: :func:`write_shards`.

Each partition's task writes one whole shard under an attempt folder of its
own; the driver commits the attempts Spark counted and writes the one
manifest last (the engine is ``fastdata.converters.engines.spark``).

Needs the extra ``fastdata[spark]`` and the converters (installed with
fastdata); importing :mod:`fastdata` never imports Spark.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import ConfigError

__all__ = ["write_shards"]


def write_shards(df: Any, out: str | os.PathLike[str], *, format: str, image: str = "content",
                 label: str = "label", name: str | None = "path", classes: list[str] | None = None,
                 encode: Any = None, on_error: str = "skip",
                 storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the Spark DataFrame ``df`` into the dataset folder ``out`` (or a
    URL: ``s3://bucket/prefix``, with ``storage_options``), one shard a partition, and return a summary (``shards``, ``images``, ``skipped``).

    Sample ids follow the partitions' order, then the rows'. A task attempt
    that fails or is duplicated leaves nothing behind; a job that fails
    leaves no manifest. See ``fastdata.converters.engines.spark.write_shards``
    for each argument (``image``: the column of the image bytes, ``content``
    as ``spark.read.format("binaryFile")`` names it, or of each file's path
    or URL, read by the tasks).

    Raises:
        ConfigError: PySpark or the converters are not installed; an unknown
            format, a missing column, or ``out`` already finished (or a read-only URL).
    """
    try:
        import pyspark  # noqa: F401 -- imported here so that its absence is named

        from fastdata.converters.engines import spark
    except ModuleNotFoundError as exc:
        raise ConfigError(f"fastdata.spark.write_shards needs {_missing(exc)}") from None
    return spark.write_shards(df, out, format=format, image=image, label=label, name=name, classes=classes,
                              encode=encode, on_error=on_error, storage_options=storage_options)


def _missing(exc: ModuleNotFoundError) -> str:
    """What to install for the module ``exc`` names."""
    if (exc.name or "").startswith("fastdata.converters"):
        return ("fastdata.converters, which a source checkout imported from its root lacks: "
                "pip install -e . (or run from another directory)")
    return f"PySpark ({exc.name} is missing): pip install 'fastdata[spark]'"
