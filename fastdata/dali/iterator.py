"""``DALILoader``: a DALI pipeline as an epoch iterator of ``(images, labels)`` torch tensors."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import Any

import torch

from .._optional import require
from ..errors import ConfigError, DecodeError, FastDataError
from .pipelines import READER_NAME, build_pipeline

AUTO = "auto"


class DALILoader:
    """Iterate a converted directory through DALI, one epoch per ``for`` loop.

    Yields ``(images, labels)`` like fastdata's CUDAPrefetcher: ``images`` is a
    float (N, 3, size, size) normalised tensor, ``labels`` int64 (N,), 0-based;
    both on ``cuda:<device_id>`` for a GPU pipeline, in host memory for a CPU one.

    Last batch (DALI's ``LastBatchPolicy``), as ``make_loader``'s ``drop_last``:
    training drops it (``DROP``), so every batch is full and ``len()`` is
    ``(samples // num_shards) // batch_size`` on every rank (DDP ranks stay in
    step even with uneven shards); evaluation, or ``drop_last=False``, keeps it
    (``PARTIAL``, the reader's padding removed), so each sample of the shard is
    seen exactly once and the last batch may be smaller.

    A new ``for`` loop starts the next epoch. DALI cannot restart mid-epoch:
    after a ``break``, the next loop first yields the rest of the unfinished
    epoch.

    Args:
        path: converted dataset directory (recordio, tfrecord or lmdb).
        batch_size: samples per batch.
        train: training preset (drops the last partial batch by default), or
            evaluation preset (keeps it).
        drop_last: ``None`` = ``train``. Dropping needs at least one full
            batch in the smallest shard: ``samples // num_shards >= batch_size``.
        device_id: CUDA device; ``"auto"`` (default) takes
            ``torch.cuda.current_device()`` when CUDA is available and
            ``device`` is not ``"cpu"``, else None (CPU pipeline). None forces
            a CPU pipeline.
        **pipeline: the :func:`build_pipeline` keywords: ``device``,
            ``num_threads``, ``seed``, ``shard_id``/``num_shards`` (default:
            the torch.distributed rank and world size), ``crop=Crop(...)``,
            ``normalize=Normalize(...)`` (mean/std in 0-1 units),
            ``reading=Reading(...)``.

    Raises:
        MissingDependencyError: DALI is not installed.
        ConfigError: from :func:`build_pipeline`, or the last partial batch is
            dropped and a shard holds fewer samples than one batch.
        ManifestError, FormatError: from :func:`build_pipeline` (a missing
            index, a shard missing or truncated since conversion).
        DecodeError / FastDataError (while iterating): DALI failed on a record;
            the pipeline cannot continue after that.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        batch_size: int,
        *,
        train: bool = True,
        drop_last: bool | None = None,
        device_id: int | str | None = AUTO,
        **pipeline: Any,
    ) -> None:
        if device_id == AUTO:
            on_gpu = pipeline.get("device") != "cpu" and torch.cuda.is_available()
            device_id = torch.cuda.current_device() if on_gpu else None
        elif isinstance(device_id, str):
            raise ConfigError(f"device_id must be a GPU index, None (the CPU) or {AUTO!r}, got {device_id!r}")
        self.path = os.fspath(path)
        self.batch_size = batch_size
        self.train = train
        self.drop_last = train if drop_last is None else bool(drop_last)
        self.pipeline = build_pipeline(path, batch_size, train=train, device_id=device_id, **pipeline)
        plugin = require(
            "nvidia.dali.plugin.pytorch", extra="dali", purpose="fastdata.dali.DALILoader", package="nvidia-dali-cuda130"
        )
        with _dali_errors(self.path):
            self.pipeline.build()
            meta = self.pipeline.reader_meta(READER_NAME)
        if self.drop_last:
            why = "train=True" if drop_last is None else "drop_last=True"
            _check_full_batch(self.path, meta["epoch_size"], meta["number_of_shards"], batch_size, why)
        policy = plugin.LastBatchPolicy.DROP if self.drop_last else plugin.LastBatchPolicy.PARTIAL
        with _dali_errors(self.path):
            self._iterator = plugin.DALIGenericIterator(
                [self.pipeline],
                ["images", "labels"],
                reader_name=READER_NAME,
                last_batch_policy=policy,
                auto_reset=True,
            )

    def __len__(self) -> int:
        """Batches per epoch for this shard."""
        return len(self._iterator)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        it = iter(self._iterator)
        while True:
            with _dali_errors(self.path):
                try:
                    batch = next(it)[0]
                except StopIteration:  # auto_reset has already rewound to the next epoch
                    return
            yield batch["images"], batch["labels"]


def _check_full_batch(path: str, samples: int, num_shards: int, batch_size: int, why: str) -> None:
    """Refuse a dropped last batch when a shard holds less than one batch.

    DALI itself would fail with a message about ``last_batch_policy`` that names
    neither the dataset nor the fix. Shards differ by at most one sample and each
    rank moves to the next shard every epoch, so the smallest one decides.
    """
    smallest = samples // num_shards
    if smallest < batch_size:
        raise ConfigError(
            f"{path}: {samples} samples over {num_shards} shard(s) give {smallest} per shard, not one full batch "
            f"of {batch_size}, and the last partial batch is dropped ({why}): pass a smaller batch_size, "
            "or drop_last=False to keep the partial batch"
        )


@contextlib.contextmanager
def _dali_errors(path: str) -> Iterator[None]:
    """Re-raise DALI's RuntimeError as a fastdata error naming the dataset."""
    try:
        yield
    except FastDataError:
        raise
    except RuntimeError as exc:
        raw = str(exc)
        op = re.search(r"operator `([^`]+)`", raw)
        reason = " ".join(raw.split("encountered:", 1)[-1].replace(_DEAD, "").split())[:300]
        where = f" in {op.group(1)}" if op else ""
        if op and ".decoders." in op.group(1):
            raise DecodeError(
                f"{path}: DALI could not decode an image ({reason}). DALI decodes JPEG, PNG, TIFF, BMP, "
                "WebP, JPEG 2000 and PNM, not GIF: re-convert with such images re-encoded, or read the "
                "directory with fastdata's own datasets. This pipeline cannot continue; build a new DALILoader"
            ) from exc
        raise FastDataError(f"{path}: the DALI pipeline failed{where} ({reason})") from exc


_DEAD = "Current pipeline object is no longer valid."
