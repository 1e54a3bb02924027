"""Filling planned shards: worker processes read and normalise images, this
process writes each shard with the format's ``write_shard`` and records it.
A batch of pass-through JPEGs that the structural check vouches for is read
here instead (:func:`.work.batch_in_parent`): shipping its bytes back from a
worker costs more than reading them.

Workers get batches of paths in plan order and return prepared images in the
same order (:func:`.parallel.ordered_map`), so a shard's bytes do not depend
on how many workers made them. After a shard's file has its final name, a
small JSON record (counts, normalisation reasons, skipped files, ShardInfo)
marks it done; ``--resume`` skips shards that have one. The worker side is
:mod:`.work`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from fastdata.errors import FastDataError
from fastdata.formats import registry
from fastdata.formats.sample import Sample, ShardInfo

from . import state
from .normalize import EncodeOptions
from .parallel import ordered_map
from .plan import Plan, ShardPlan
from .scan import SkippedFile
from .work import Outcome, batch_in_parent, init_worker, process_batch

BATCH = 8  # images per task: small enough to balance, large enough to amortise IPC

@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How this process runs its share of a plan (none of it changes the output).

    Attributes:
        workers: processes that read and encode images (1 = in this process).
        on_error: ``"skip"`` records unreadable images and goes on; ``"raise"`` stops at the first.
        test_delay: seconds slept per image: a test-only hook (hidden option
            ``--test-delay``) that makes a run slow enough to kill mid-way.
        verify_decode: decode every pass-through JPEG instead of checking its
            structure only (see :mod:`.jpeg_check`); it can only add skips.
    """

    workers: int = 1
    on_error: str = "skip"
    test_delay: float = 0.0
    verify_decode: bool = False


@dataclasses.dataclass
class ShardStats:
    """What went into one shard; saved as its done record."""

    written: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    normalised_images: int = 0
    per_label: Counter = dataclasses.field(default_factory=Counter)
    normalised: Counter = dataclasses.field(default_factory=Counter)
    skipped: list[list[str]] = dataclasses.field(default_factory=list)

    def record(self, info: ShardInfo | None) -> dict[str, Any]:
        return {
            "info": dataclasses.asdict(info) if info is not None else None,
            "written": self.written,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "normalised_images": self.normalised_images,
            "per_label": {str(k): v for k, v in sorted(self.per_label.items())},
            "normalised": dict(sorted(self.normalised.items())),
            "skipped": self.skipped,
        }


def write_shards(
    out: str,
    plan: Plan,
    shards: list[ShardPlan],
    run: RunOptions,
    progress: Callable[[int, int], None] = lambda images, nbytes: None,
) -> None:
    """Write ``shards`` (each from scratch) and record each as done.

    ``progress(images, source_bytes)`` is called after every batch.

    Raises:
        SkippedFile: with ``on_error="raise"``, the first image that cannot be converted.
        FastDataError: a worker process died.
    """
    if not shards:
        return
    spec = registry.get(plan.options.format)
    o = plan.options
    encode = EncodeOptions(resize=o.resize, quality=o.quality, reencode=o.reencode, verify_decode=run.verify_decode,
                           restart_markers=o.restart_markers)
    chunks = [[s.items[i : i + BATCH] for i in range(0, len(s.items), BATCH)] for s in shards]
    tasks = ([item.path for item in chunk] for shard_chunks in chunks for chunk in shard_chunks)
    workers = max(1, min(run.workers, sum(len(c) for c in chunks)))
    results = ordered_map(
        process_batch, tasks, workers=workers, init=init_worker, init_args=(encode, run.test_delay), local=batch_in_parent
    )
    try:
        # A first result before any shard file is open: most runs fork their workers by then.
        first = next(results)
        pulled = _Pulled(first, results)
        for shard, shard_chunks in zip(shards, chunks):
            state.clear_shard(out, plan, shard)
            directory = plan.split_dir(out, shard.split)
            directory.mkdir(parents=True, exist_ok=True)
            stats = ShardStats()
            samples = _samples(plan, shard, shard_chunks, pulled, stats, run.on_error, progress)
            info: ShardInfo | None = spec.write_shard(directory / shard.file, samples)
            if stats.written + len(stats.skipped) != len(shard.items):
                raise FastDataError(
                    f"{directory / shard.file}: the {spec.name} writer stopped after "
                    f"{stats.written + len(stats.skipped)} of {len(shard.items)} images (a bug in the format writer)"
                )
            if info.records == 0:  # every image skipped: no empty shard (DALI's mxnet index cannot hold one)
                state.clear_shard(out, plan, shard)
                info = None
            state.write_record(out, shard, stats.record(info))
    except BrokenProcessPool as exc:
        raise FastDataError(
            f"a worker process died while converting into {out} ({exc}); it may have run out of memory. "
            "Finished shards are kept: run the same command with --resume (and fewer --workers)"
        ) from None
    finally:
        results.close()


class _Pulled:
    """The result iterator with its first item already taken."""

    def __init__(self, first: list[Outcome], rest: Iterator[list[Outcome]]) -> None:
        self._first: list[Outcome] | None = first
        self._rest = rest

    def next(self) -> list[Outcome]:
        if self._first is not None:
            value, self._first = self._first, None
            return value
        return next(self._rest)


def _samples(
    plan: Plan,
    shard: ShardPlan,
    chunks: list,
    results: _Pulled,
    stats: ShardStats,
    on_error: str,
    progress: Callable[[int, int], None],
) -> Iterator[Sample]:
    position = 0
    for chunk in chunks:
        outcomes = results.next()
        nbytes = 0
        for item, outcome in zip(chunk, outcomes):
            sample_id = shard.ids[position]
            position += 1
            if isinstance(outcome, str):
                if on_error == "raise":
                    raise SkippedFile(item.path, outcome)
                stats.skipped.append([item.path, outcome])
                continue
            data, height, width, reasons, size = outcome
            nbytes += size
            stats.written += 1
            stats.bytes_in += size
            stats.bytes_out += len(data)
            if isinstance(item.label, int):
                stats.per_label[item.label] += 1
            if reasons:
                stats.normalised_images += 1
                stats.normalised.update(reasons)
            yield Sample(
                image=data,
                label=item.label,
                id=sample_id,
                filename=_printable(item.rel),
                height=height,
                width=width,
                class_text=plan.classes[item.label] if isinstance(item.label, int) and plan.classes else "",
            )
        progress(len(chunk), nbytes)


def _printable(name: str) -> str:
    # File names that are not valid UTF-8 arrive with surrogate escapes; formats store UTF-8.
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
