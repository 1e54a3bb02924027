"""What a worker does: read, prepare and write one whole shard.

A shard is the unit of work: the worker that takes it reads its files, checks
or rewrites each image (:func:`.normalize.prepare`) and streams them into the
format's ``write_shard`` (which writes under a partial name, computes the
shard's checksums and renames it at the end). Only its small record of
counts (:class:`.ShardRecord`) comes back to the parent, so the parent's
work per image is nothing, and the bytes of a shard never cross a process
boundary. A shard's bytes depend only
on its plan, so any number of workers writes the same files.

Kept apart from :mod:`.pack` so that a spawned worker imports only this,
Pillow and the format, not the planning machinery.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from fastdata.errors import ConfigError, FastDataError
from fastdata.formats import registry
from fastdata.formats._atomic import durable, remove
from fastdata.formats.sample import Sample, ShardInfo

from ..output.record import ShardRecord
from ..planning.scan import ITEM_REL, SkippedFile, SourceItem
from .normalize import RESTART_REASON, EncodeOptions, prepare

REPORT_EVERY = 64  # images between progress reports from a worker

#: The progress callback of this process (``report(images, source_bytes)``), installed by :func:`init_worker`.
_REPORT: dict[str, Callable[[int, int], None] | None] = {"fn": None}

#: The shards being written, installed in a worker by :func:`init_worker`: a job
#: names its items by position here (:attr:`ShardJob.ref`) instead of carrying them.
_SHARDS: dict[str, Any] = {"table": None}

#: A source in object storage read where the task runs (``fastdata convert URL OUT --engine``
#: on a cluster of several machines): the plan's paths under ``root`` (a listing of the
#: objects, each a sparse file of its size, on the driver) are read as ``url``/<rel>.
#: Installed by :func:`init_worker` (and :func:`use_source` in the driver).
_SOURCE: dict[str, Any] = {"root": None, "store": None}

#: A test hook, not an option: seconds to sleep per image, so that a test can
#: kill a run mid-way. An environment variable reaches forked and spawned
#: workers alike without travelling in any job or option.
TEST_DELAY_VARIABLE = "FASTDATA_TEST_DELAY"


class ItemRange(NamedTuple):
    """Items ``start:stop`` of the shard at ``position`` in the shards a worker got at start-up."""

    position: int
    start: int
    stop: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShardJob:
    """Everything needed to write one shard (or one piece of one), picklable.

    ``path`` is the shard's final path (its directory exists); ``items`` and
    ``ids`` are the plan's; ``classes`` names the labels (may be empty);
    ``sources_root``: the source's root when the worker is to make the
    shard's lines of ``sources.jsonl`` too (:func:`sources_lines`). In
    a pool, ``items`` and ``ids`` are None and ``ref`` names them in the
    shards the worker got at start-up: pickling every item with its task
    cost the main process about 9 us an image.
    """

    path: str
    format: str
    items: list[SourceItem] | None
    ids: list[int] | None
    classes: list[str]
    encode: EncodeOptions
    on_error: str = "skip"
    fsync: bool = False
    ref: ItemRange | None = None
    sources_root: str | None = None

    def samples(self) -> tuple[list[SourceItem], list[int]]:
        """The items and sample ids to write."""
        if self.items is not None and self.ids is not None:
            return self.items, self.ids
        if self.ref is None or _SHARDS["table"] is None:
            raise FastDataError(f"{self.path}: a shard task without its items (a bug in the converter)")
        shard = _SHARDS["table"][self.ref.position]
        return shard.items[self.ref.start:self.ref.stop], shard.ids[self.ref.start:self.ref.stop]


@dataclasses.dataclass(frozen=True)
class Piece:
    """One written piece of a cut shard: its data file, and its ShardInfo (None when all its images were skipped)."""

    path: str
    info: ShardInfo | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class JoinJob:
    """Joining the pieces of a cut shard into ``target`` (picklable).

    ``pieces`` in order; ``leftovers``: the folder they were written in,
    removed once joined; ``fsync``: as :attr:`ShardJob.fsync`.
    """

    format: str
    target: str
    pieces: list[Piece]
    leftovers: str
    fsync: bool = False


def join_pieces(job: JoinJob) -> ShardInfo | None:
    """Join ``job``'s pieces with the format's ``join`` into exactly the bytes
    one writer would have written, remove the folder they were written in, and
    return the shard's ShardInfo (None when every piece is empty)."""
    written = [(Path(piece.path), piece.info) for piece in job.pieces if piece.info is not None]
    join = registry.get(job.format).join
    if written and join is None:
        raise ConfigError(f"the {job.format} format has no join: its shards cannot be written in pieces")
    with durable(job.fsync):
        info = join(job.target, written) if written and join is not None else None
    remove(job.leftovers)
    return info


def init_worker(report: Any = None, shards: Any = None, source: tuple[str, str] | None = None) -> None:
    """Install the progress channel of a worker process (a queue that gets
    ``(images, source_bytes)`` every :data:`REPORT_EVERY` images, or None),
    the shards its tasks name (:attr:`ShardJob.ref`) and the source they read
    (see :func:`use_source`)."""
    _REPORT["fn"] = (lambda images, nbytes: report.put((images, nbytes))) if report is not None else None
    _SHARDS["table"] = shards
    use_source(source)


def use_source(source: tuple[str, str] | None) -> None:
    """Read the files under ``source[0]`` (a listing of a bucket's objects) as
    the objects under the URL ``source[1]``; None: every path is a file."""
    if source is None:
        _SOURCE.update(root=None, store=None)
        return
    from fastdata.remote.store import Store

    _SOURCE.update(root=os.path.join(source[0], ""), store=Store(source[1]))


def read_item(path: str) -> bytes:
    """The bytes of the plan's ``path``: a file (:func:`read_file`), or under a
    source in object storage (:func:`use_source`) the object it lists.

    Raises:
        SkippedFile: it cannot be read (a missing object: deleted since it was listed).
        RemoteError: the store cannot be reached: the task fails (the engine retries it).
    """
    root = _SOURCE["root"]
    if root is None or not path.startswith(root):
        return read_file(path)
    name = path[len(root):].replace(os.sep, "/")
    try:
        return _SOURCE["store"].read_bytes(name)
    except FileNotFoundError:
        raise SkippedFile(_SOURCE["store"].url_of(name), "was listed but is gone from the bucket") from None


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def read_file(path: str) -> bytes:
    """The file's bytes, or SkippedFile saying why it cannot be read.

    A ``read`` of the size ``fstat`` gives, then reads until one returns
    nothing (a FUSE or network filesystem may return less than asked): no
    buffered file object, a quarter less than ``open().read()`` for a 100 kB
    photo in the page cache.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
        try:
            data = os.read(fd, os.fstat(fd).st_size or 1 << 16)
            if data:
                parts = [data]
                while chunk := os.read(fd, 1 << 20):
                    parts.append(chunk)
                if len(parts) > 1:
                    data = b"".join(parts)
        finally:
            os.close(fd)
    except IsADirectoryError:
        raise SkippedFile(path, "is a directory, not an image file") from None
    except OSError as exc:
        raise SkippedFile(path, f"cannot read: {exc.strerror or exc}") from None
    return data


def write_shard_job(job: ShardJob, report: Callable[[int, int], None] | None = None) -> tuple[ShardRecord, str]:
    """Write ``job``'s shard; returns its done record and its lines of
    ``sources.jsonl`` (empty unless ``job.sources_root`` is given).

    An all-skipped shard records ``info`` None; the caller removes its files
    (DALI's mxnet index cannot hold an empty shard).

    Raises:
        SkippedFile: with ``on_error="raise"``, the first image that cannot be converted.
        FastDataError: the format's writer stopped early (a bug).
    """
    report = report if report is not None else _REPORT["fn"]
    spec = registry.get(job.format)
    record = ShardRecord()
    items, ids = job.samples()
    with durable(job.fsync):  # a spawned worker does not inherit the parent's setting
        info = spec.write_shard(job.path, _samples(job, items, ids, record, report))
    done = record.written + len(record.skipped)
    if done != len(items):
        raise FastDataError(
            f"{job.path}: the {spec.name} writer stopped after {done} of {len(items)} images (a bug in the format writer)"
        )
    # an all-skipped shard is removed by the caller (state.clear_shard knows every name it may have)
    record.info = info if info.records else None
    # made here, beside the other workers, rather than in the parent
    lines = sources_lines(job.sources_root, items, record.skipped) if job.sources_root is not None else ""
    return record, lines


def sources_lines(root: str, items: list[SourceItem], skipped: list[tuple[str, str]]) -> str:
    """The lines of ``sources.jsonl`` for ``items`` written (``skipped``: the
    ``(path, reason)`` of those that were not): the JSON string of each one's
    file, ``root`` joined with its ``rel``."""
    if skipped:
        gone = {path for path, _ in skipped}
        rels = [item.rel for item in items if item.path not in gone]
    else:
        rels = list(map(ITEM_REL, items))
    if not rels:
        return ""
    if os.sep == "/" and not any(map(str.startswith, rels, itertools.repeat("/"))):  # then join(root, rel) is prefix + rel
        prefix = os.path.join(root, "")
        paths = list(map(prefix.__add__, rels))
    else:
        paths = [os.path.join(root, rel.replace("/", os.sep)) for rel in rels]
    if not all(map(str.isascii, paths)):  # undecodable bytes arrive as surrogate escapes; JSON holds UTF-8
        paths = [p if p.isascii() else p.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for p in paths]
    # what json.dumps does for one string, mapped in C over all of them (a call of
    # json.dumps per line was most of the time)
    return "\n".join(map(_JSON_STRING, paths)) + "\n"


_JSON_STRING = json.encoder.encode_basestring_ascii


def _samples(job: ShardJob, items: list[SourceItem], ids: list[int], record: ShardRecord,
             report: Callable[[int, int], None] | None) -> Iterator[Sample]:
    encode, classes = job.encode, job.classes
    delay = _test_delay()
    pending_images = pending_bytes = 0
    for item, sample_id in zip(items, ids):
        if delay:
            time.sleep(delay)
        try:
            data = read_item(item.path)
            img = prepare(data, item.path, encode)
        except SkippedFile as exc:
            if job.on_error == "raise":
                raise
            record.skipped.append((item.path, exc.reason))
            pending_images += 1
            continue
        size = len(data)
        record.written += 1
        record.bytes_in += size
        record.bytes_out += len(img.data)
        label = item.label
        if isinstance(label, int):
            record.per_label[label] += 1
        if img.reasons:
            normalised = [r for r in img.reasons if r != RESTART_REASON]
            # a lossless rewrite keeps the source's pixels; a re-encoded image (a PNG,
            # a CMYK JPEG) is counted as normalised, with or without markers
            if len(normalised) < len(img.reasons) and not normalised:
                record.restart_marked += 1
            if normalised:
                record.normalised_images += 1
                record.normalised.update(normalised)
        if report is not None:
            pending_images += 1
            pending_bytes += size
            if pending_images >= REPORT_EVERY:
                report(pending_images, pending_bytes)
                pending_images = pending_bytes = 0
        yield Sample(
            image=img.data,
            label=label,
            id=sample_id,
            filename=_printable(item.rel),
            height=img.height,
            width=img.width,
            class_text=classes[label] if isinstance(label, int) and classes else "",
        )
    if report is not None and (pending_images or pending_bytes):
        report(pending_images, pending_bytes)


def _test_delay() -> float:
    """The seconds :data:`TEST_DELAY_VARIABLE` asks to sleep per image (0 when unset)."""
    value = os.environ.get(TEST_DELAY_VARIABLE)
    return float(value) if value else 0.0


def _printable(name: str) -> str:
    # File names that are not valid UTF-8 arrive with surrogate escapes; formats store UTF-8.
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
