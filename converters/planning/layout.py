"""The conversion's layout (its plan): which file goes into which split, in which order, in which shard.

Everything that decides the output bytes is fixed here, before any image is
read, from the scan and the options alone (file sizes stand in for output
sizes). Workers then only fill shards in, so the result is the same for any
worker count, any number of nodes, and after a resume. The plan is saved as
``OUT/.fastdata-plan.json`` while a conversion is unfinished.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastdata.errors import ConfigError, ManifestError
from fastdata.formats import dataset_writer
from fastdata.formats._atomic import commit, partial_path
from fastdata.order.conversion import conversion_generator, conversion_order

from .scan import ITEM_SIZE, ScanResult, SourceItem, without_gc

#: Source bytes per shard unless --shard-size or --shards says otherwise. A shard is
#: one worker's task, so shards small enough that every worker gets several keep
#: them all busy to the end (a 415 MB folder in 256 MB shards kept one of two idle
#: 40 % of the time); 64 MB is also litdata's and MosaicML streaming's chunk size.
DEFAULT_SHARD_BYTES = 64 << 20
PLAN_NAME = ".fastdata-plan.json"
#: 2: items as columns (version 1, one list per item, is still read: see Plan.from_json).
PLAN_VERSION = 2
_VAL_STREAM, _ORDER_STREAM = 0x7A1, 0x0D3


@dataclasses.dataclass(frozen=True)
class PlanOptions:
    """The options that decide the output (anything else, e.g. ``--workers``, does not).

    Attributes:
        format: registry name of the output format.
        shuffle: write samples in a seeded random order instead of scan order.
        seed: seeds the order and the validation split.
        val_fraction: share of each class written to the ``val`` split (0 = no split).
        shard_bytes: start a new shard once this many source bytes are planned into it.
        shards: exact number of shards per split (overrides ``shard_bytes``).
        resize, quality, reencode, restart_markers: how images are encoded (see ``normalize.EncodeOptions``).
    """

    format: str
    shuffle: bool = True
    seed: int = 0
    val_fraction: float = 0.0
    shard_bytes: int = DEFAULT_SHARD_BYTES
    shards: int | None = None
    resize: int | None = None
    quality: int = 90
    reencode: bool = False
    restart_markers: bool = False


@dataclasses.dataclass
class ShardPlan:
    """One shard to write: ``split`` ("" when there is no split), its index in
    the split, its file name, and its items with their sample ids."""

    split: str
    index: int
    file: str
    items: list[SourceItem]
    ids: list[int]

    @property
    def key(self) -> str:
        return f"{self.split or 'all'}-{self.index:05d}"


@dataclasses.dataclass
class Plan:
    """A whole conversion. ``shards`` are in global order (train shards, then val);
    node ``r`` of ``n`` writes the shards whose position ``g`` has ``g % n == r``."""

    options: PlanOptions
    source: dict[str, Any]
    classes: list[str]
    splits: list[str]
    shards: list[ShardPlan]
    skipped: list[tuple[str, str]]
    ignored: list[tuple[str, str]]

    def split_dir(self, out: str | os.PathLike[str], split: str) -> Path:
        return Path(out) / split if split else Path(out)

    def shards_for_node(self, node_rank: int, num_nodes: int) -> list[tuple[int, ShardPlan]]:
        return [(g, s) for g, s in enumerate(self.shards) if g % num_nodes == node_rank]

    def to_json(self) -> str:
        """The plan as JSON (:data:`PLAN_VERSION`): each shard's items as columns
        (``rels``, ``labels``, ``sizes``, and ``paths`` unless each is
        ``path_prefix`` + rel), its sample ids as a range when they are
        consecutive (always, from :func:`make_plan`). Version 1 had
        one ``[path, rel, label, size]`` list per item: columns save in half
        the time and load in a third (benchmarks/results/main_process_cost-2026-11-25.json), and a
        plan is saved by every conversion and read by every resume and node."""
        doc = {
            "plan_version": PLAN_VERSION,
            "options": dataclasses.asdict(self.options),
            "source": self.source,
            "classes": self.classes,
            "splits": self.splits,
            "skipped": self.skipped,
            "ignored": self.ignored,
        }
        with without_gc():
            doc["shards"] = [_shard_doc(s) for s in self.shards]
        return _ENCODE(doc) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> Plan:
        """Read a plan written by :meth:`to_json`, or by fastdata before plan
        version 2 (so a conversion started by an older release resumes).

        Raises:
            ManifestError: not a plan, or a version this release cannot read.
        """
        try:
            doc = json.loads(text)
            version = doc["plan_version"]  # none: not a plan (unreadable, below)
            if version not in _READERS:
                raise ManifestError(
                    f"{source}: plan version {version!r} is not one this fastdata reads "
                    f"({', '.join(map(str, _READERS))}); finish the conversion with the fastdata release that "
                    "started it, or start over with --overwrite"
                )
            read_shard = _READERS[version]
            with without_gc():
                shards = [read_shard(s) for s in doc["shards"]]
            return cls(
                options=PlanOptions(**doc["options"]),
                source=doc["source"],
                classes=list(doc["classes"]),
                splits=list(doc["splits"]),
                shards=shards,
                skipped=[tuple(p) for p in doc["skipped"]],
                ignored=[tuple(p) for p in doc["ignored"]],
            )
        except ManifestError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise ManifestError(
                f"{source}: unreadable conversion plan ({exc!r}); start over with --overwrite"
            ) from exc

    def fingerprint(self) -> str:
        import hashlib  # only when a plan on disk is compared with this one: ~5 ms of start-up otherwise

        return hashlib.sha256(self.to_json().encode("utf-8", "surrogatepass")).hexdigest()

    def save(self, out: str | os.PathLike[str]) -> Path:
        """Write the plan into ``out`` atomically (safe when several nodes race to write it)."""
        target = Path(out) / PLAN_NAME
        tmp = partial_path(target).with_name(f"{PLAN_NAME}.{os.getpid()}.partial")
        tmp.write_text(self.to_json(), encoding="utf-8", errors="surrogatepass")
        commit(tmp, target)
        return target

    @classmethod
    def load(cls, out: str | os.PathLike[str]) -> Plan:
        path = Path(out) / PLAN_NAME
        return cls.from_json(path.read_text(encoding="utf-8", errors="surrogatepass"), str(path))


# check_circular off: the document is built here, with no cycles, and the check
# costs a dict operation per list (there are several per shard)
_ENCODE = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _shard_doc(shard: ShardPlan) -> dict[str, Any]:
    # zip(*items): one pass over the items (SourceItem is a tuple), which a shuffled plan holds in
    # scattered order; its iterator per item is why the caller pauses the garbage collector
    paths, rels, labels, sizes = zip(*shard.items) if shard.items else ((), (), (), ())
    doc: dict[str, Any] = {"split": shard.split, "index": shard.index, "file": shard.file}
    ids = shard.ids
    if ids and ids == list(range(ids[0], ids[0] + len(ids))):
        doc["id_range"] = [ids[0], ids[0] + len(ids)]
    else:
        doc["ids"] = ids
    prefix = _common_prefix(paths, rels)
    if prefix is None:
        doc["paths"] = paths
    else:  # each path is prefix + rel (always, from a folder scan): half the bytes to encode and parse
        doc["path_prefix"] = prefix
    doc.update(rels=rels, labels=labels, sizes=sizes)  # label vectors (tuples) become lists
    return doc


def _common_prefix(paths: Sequence[str], rels: Sequence[str]) -> str | None:
    """The ``prefix`` with ``path == prefix + rel`` for every item, if there is one."""
    if not paths or not paths[0].endswith(rels[0]):
        return None
    prefix = paths[0][: len(paths[0]) - len(rels[0])]
    return prefix if all(map(str.__eq__, paths, map(prefix.__add__, rels))) else None


def _read_shard(doc: dict[str, Any]) -> ShardPlan:
    labels = doc["labels"]
    if list in set(map(type, labels)):  # label vectors come back as lists
        labels = [tuple(lab) if type(lab) is list else lab for lab in labels]
    rels = doc["rels"]
    if "path_prefix" in doc:
        prefix = doc["path_prefix"]
        if not isinstance(prefix, str):  # a number's __add__ would answer NotImplemented, not fail
            raise ValueError(f"shard {doc['file']!r}: path_prefix {prefix!r} is not a string")
        paths = list(map(prefix.__add__, rels))
    else:
        paths = doc["paths"]
    columns = (paths, rels, labels, doc["sizes"])
    if len(set(map(len, columns))) > 1:
        raise ValueError(f"shard {doc['file']!r}: its columns have {'/'.join(str(len(c)) for c in columns)} entries")
    ids = list(range(*doc["id_range"])) if "id_range" in doc else list(doc["ids"])
    if len(ids) != len(labels):
        raise ValueError(f"shard {doc['file']!r}: {len(ids)} sample ids for {len(labels)} items")
    # tuple.__new__ over zipped columns: SourceItems made without a Python call each
    items = list(map(tuple.__new__, itertools.repeat(SourceItem), zip(*columns)))
    return ShardPlan(doc["split"], doc["index"], doc["file"], items, ids)


def _read_shard_v1(doc: dict[str, Any]) -> ShardPlan:
    """A shard of a version 1 plan: one ``[path, rel, label, size]`` list per item."""
    items = [SourceItem(p, r, tuple(lab) if isinstance(lab, list) else lab, n) for p, r, lab, n in doc["items"]]
    return ShardPlan(doc["split"], doc["index"], doc["file"], items, list(doc["ids"]))


#: How to read a shard of each plan version this release reads.
_READERS = {1: _read_shard_v1, 2: _read_shard}


def make_plan(scan: ScanResult, options: PlanOptions, source: dict[str, Any]) -> Plan:
    """Split, order and shard a scan.

    Raises:
        ConfigError: nothing left to convert, or a validation split that ends up empty.
    """
    if not scan.items:
        raise ConfigError(f"{scan.root}: none of the image files can be converted (all were skipped)")
    if not 0.0 <= options.val_fraction < 1.0:
        raise ConfigError(f"--val-fraction must be in [0, 1), got {options.val_fraction}")
    items = scan.items
    parts: list[tuple[str, list[SourceItem]]]
    if options.val_fraction > 0:
        val_pos = _choose_val(items, options.val_fraction, options.seed)
        if not val_pos:
            raise ConfigError(
                f"--val-fraction {options.val_fraction} of {len(items)} images selects no validation images; "
                "use a larger fraction"
            )
        chosen = set(val_pos)
        parts = [("train", [it for i, it in enumerate(items) if i not in chosen]), ("val", [items[i] for i in val_pos])]
    else:
        parts = [("", list(items))]
    shards: list[ShardPlan] = []
    for n, (split, members) in enumerate(parts):
        if options.shuffle:
            order = conversion_order(options.seed, _ORDER_STREAM, n, len(members))
            members = [members[i] for i in order]
        for index, (start, stop) in enumerate(_boundaries(list(map(ITEM_SIZE, members)), options)):
            shards.append(
                ShardPlan(
                    split,
                    index,
                    dataset_writer.shard_name(options.format, index),
                    members[start:stop],
                    list(range(start, stop)),
                )
            )
    return Plan(
        options=options,
        source=source,
        classes=list(scan.classes),
        splits=[name for name, _ in parts],
        shards=shards,
        skipped=list(scan.skipped),
        ignored=list(scan.ignored),
    )


def _choose_val(items: Sequence[SourceItem], fraction: float, seed: int) -> list[int]:
    """Positions of the validation items: ``round(fraction * n)`` of each class,
    never a class's last training image; positions of multi-label items are drawn
    from the whole set. Returned in scan order."""
    groups: dict[int | None, list[int]] = {}
    for pos, item in enumerate(items):
        groups.setdefault(item.label if isinstance(item.label, int) else None, []).append(pos)
    rng = conversion_generator(seed, _VAL_STREAM)  # numpy's choice(): only a split plan imports numpy
    chosen: list[int] = []
    for key in sorted(groups, key=lambda k: -1 if k is None else k):
        members = groups[key]
        k = min(round(fraction * len(members)), len(members) - 1)
        if k > 0:
            chosen += [members[i] for i in rng.choice(len(members), size=k, replace=False)]
    return sorted(chosen)


def _boundaries(sizes: Sequence[int], options: PlanOptions) -> list[tuple[int, int]]:
    n = len(sizes)
    if n == 0:
        return []
    if options.shards is not None:
        count = min(options.shards, n)
        return [(k * n // count, (k + 1) * n // count) for k in range(count)]
    bounds, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        total += size
        if total >= options.shard_bytes:
            bounds.append((start, i + 1))
            start, total = i + 1, 0
    if start < n:
        bounds.append((start, n))
    return bounds
