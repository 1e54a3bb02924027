"""``fastdata convert`` and ``fastdata merge``: from a request to a finished dataset directory.

Output layout: without ``--val-fraction``, OUT is one dataset directory
(shards + ``manifest.json``). With it, OUT holds two, ``OUT/train`` and
``OUT/val``, disjoint, with the same class list.

Crash safety: the plan is saved first (``OUT/.fastdata-plan.json``); each
shard is written under a ``.partial`` name, renamed, then recorded; the
manifests are written last, then the plan is removed. ``--resume`` re-reads
the plan, discards partial files and writes only the missing shards (and any
done shard whose files no longer match the size and digests its record
holds), so the result is byte-identical to an uninterrupted run. Nothing
waits for the disk unless ``--fsync`` (``run.fsync``) is given; then every
file is fsynced before its record or the manifest names it. Several nodes share one OUT
(``--num-nodes``/``--node-rank``): each writes the shards ``g`` with
``g % num_nodes == node_rank``; whichever finishes last writes the manifests
(or run ``fastdata merge OUT``).

Exit codes: 0 done; 1 the shards are written but files were skipped and
``--allow-skips`` was not given (no manifest yet: finish with ``--resume
--allow-skips``); 2 an error (raised as FastDataError, reported by the CLI).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from fastdata.errors import ConfigError
from fastdata.formats import dataset_writer
from fastdata.formats._atomic import durable, is_durable, sync, sync_dir, write_text_atomic
from fastdata.formats.manifest import Manifest

from ..output import state
from ..output.record import ShardRecord
from ..planning.layout import Plan, ShardPlan
from .outdir import check_nesting, load_or_make_plan
from .pack import write_shards
from .report import Progress, Summary
from .request import ConvertRequest
from .work import sources_lines

__all__ = ["SOURCES_FILE", "ConvertRequest", "convert", "merge"]

#: Beside each split's shards: the source file of every sample, one JSON string per line
#: (named by the manifest's ``extra["sources"]``).
SOURCES_FILE = "sources.jsonl"


def convert(req: ConvertRequest, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run (or resume, or join) a conversion; returns the exit code (0 or 1).

    With ``run.workers > 1`` the workers are forked while this process runs no
    other thread and *spawned* otherwise: a script that calls this must do so
    under ``if __name__ == "__main__":``.

    Raises:
        FastDataError: bad options or source, an OUT that must not be touched,
            or (``on_error="raise"``) the first image that cannot be converted.
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    _check_request(req)
    with durable(req.run.fsync):
        return _convert(req, stdout, stderr)


def _convert(req: ConvertRequest, stdout: TextIO, stderr: TextIO) -> int:
    out = Path(req.out)
    source = _source(req)
    check_nesting(Path(source["root"]), out)
    plan = load_or_make_plan(req, out, source, stderr)
    node = f"node {req.node_rank} of {req.num_nodes}"
    if plan is None:  # another node finished the same conversion before this one started
        _say(req, stdout, f"fastdata convert: {node}: nothing to do, {_finished_summary(out)}")
        return 0
    mine = plan.shards_for_node(req.node_rank, req.num_nodes)
    if not mine:  # the nodes that have shards write the manifest (or `fastdata merge`)
        _say(req, stdout, f"fastdata convert: {node}: no shard to write (the plan has {len(plan.shards)} shard(s) for "
                          f"{req.num_nodes} nodes)")
        return 0
    finished = [s for _, s in mine if state.record_path(out, s).exists()]
    if finished:  # one read of each: it can take a while for a large dataset, so say why
        _say(req, stdout, f"fastdata convert: {node}: checking the size and CRC32C of {len(finished)} finished shard(s)")
    pending = [s for _, s in mine if state.read_record(out, plan, s, check=True) is None]
    if req.num_nodes > 1 and pending and state.manifest_dirs(out):
        # the last node wrote the manifests and is removing the records this node just read
        _say(req, stdout, f"fastdata convert: {node}: nothing to do, {out} was finished by another node meanwhile")
        return 0
    progress = Progress(sum(len(s.items) for s in pending), enabled=not req.quiet)
    sources: dict[str, str] = {}  # sources.jsonl's lines by shard, made by the workers

    def recorded(shard: ShardPlan, record: ShardRecord, lines: str) -> None:
        sources[shard.key] = lines

    try:
        written = write_shards(str(out), plan, pending, req.run, progress if progress.shown else None,
                               recorded, sources_root(plan))
    finally:
        progress.close()
    this_run = Summary.from_records(str(out), plan, written)
    records = state.done_records(out, plan)
    if len(records) < len(plan.shards):
        _say(
            req, stdout,
            f"fastdata convert: {node} wrote its {len(mine)} shard(s) ({this_run.images} images this run); "
            f"{len(plan.shards) - len(records)} shard(s) of other nodes are not finished yet. The last node to "
            f"finish writes the manifest (or run `fastdata merge {out}`).",
        )
        return 0
    if not state.try_lock(out, force=req.num_nodes == 1):
        _say(req, stdout, f"fastdata convert: another node is writing the manifest of {out}")
        return 0
    return _finish(out, plan, records, req.allow_skips, req.quiet, _RunStats(progress.seconds, this_run), stdout, stderr,
                   sources)


def _say(req: ConvertRequest, stdout: TextIO, line: str) -> None:
    if not req.quiet:
        print(line, file=stdout)


@dataclasses.dataclass(frozen=True)
class _RunStats:
    """What this run did (a resumed or multi-node conversion did the rest before)."""

    seconds: float
    summary: Summary | None = None


def merge(out: str, *, allow_skips: bool = False, quiet: bool = False, fsync: bool = False,
          stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Write the manifest(s) of a multi-node conversion whose shards are all done.

    An OUT the last node already finished is success: one summary line, 0.
    ``fsync`` waits for the disk before the manifest is written (``--fsync``).

    Raises:
        ConfigError: OUT has no conversion in progress, or shards are still missing.
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    kind = state.classify(out)
    if kind == state.FINISHED:  # the last node to finish wrote the manifest: success
        if not quiet:
            print(f"fastdata merge: {_finished_summary(Path(out))}", file=stdout)
        return 0
    if kind != state.UNFINISHED:
        raise ConfigError(f"{out}: no conversion in progress here (no {Path(out) / '.fastdata-plan.json'})")
    plan = Plan.load(out)
    records = state.done_records(out, plan)
    missing = [g for g, s in enumerate(plan.shards) if s.key not in records]
    if missing:
        names = ", ".join(f"{plan.shards[g].split + '/' if plan.shards[g].split else ''}{plan.shards[g].file} (#{g})" for g in missing[:10])
        raise ConfigError(
            f"{out}: {len(missing)} of {len(plan.shards)} shards are not finished: {names}"
            f"{' ...' if len(missing) > 10 else ''}. Shard #g belongs to node g % num_nodes: run that node "
            "again with --resume, then merge"
        )
    state.try_lock(out, force=True)
    with durable(fsync):
        return _finish(Path(out), plan, records, allow_skips, quiet, _RunStats(0.0), stdout, stderr)


def _finished_summary(out: Path) -> str:
    dirs = state.manifest_dirs(out)
    manifests = {d.name if d != out else "": Manifest.read(d) for d in dirs}
    images = sum(m.num_samples for m in manifests.values())
    shards = sum(len(m.shards) for m in manifests.values())
    splits = ", ".join(f"{name} {m.num_samples}" for name, m in manifests.items() if name)
    fmt = next(iter(manifests.values())).format
    return (
        f"{out}: already finished, nothing to merge ({images} images, {shards} shard(s), {fmt}"
        f"{'; splits ' + splits if splits else ''})"
    )


def _finish(out: Path, plan: Plan, records: dict[str, ShardRecord], allow_skips: bool, quiet: bool, run: _RunStats,
            stdout: TextIO, stderr: TextIO, sources: dict[str, str] | None = None) -> int:
    summary = Summary.from_records(str(out), plan, records)
    if not quiet:
        for line in summary.lines(seconds=run.seconds, this_run=run.summary):
            print(line, file=stdout)
    if summary.skipped:
        print(f"fastdata convert: skipped {len(summary.skipped)} file(s):", file=stderr)
        for line in summary.skipped_lines():
            print(line, file=stderr)
        if not allow_skips:
            (out / state.LOCK_NAME).unlink(missing_ok=True)
            print(
                f"fastdata: error: {len(summary.skipped)} file(s) could not be converted (listed above). The shards "
                f"are written but {out} has no manifest yet: fix or remove those files and start over with "
                "--overwrite, or accept the dataset without them by running the same command with "
                "--resume --allow-skips",
                file=stderr,
            )
            return 1
    state.remove_partials(out, plan)
    if is_durable():  # shards of nodes that ran without --fsync reach the disk before the manifest names them
        for shard in plan.shards:
            info = records[shard.key].info
            if info is not None:
                directory = plan.split_dir(out, shard.split)
                for name in dict.fromkeys([info.file, *(info.digests or {})]):  # the data file has a digest too
                    sync(directory / name)
        for directory in sorted({plan.split_dir(out, s.split) for s in plan.shards}):
            sync_dir(directory)
    for split in plan.splits:
        infos = [info for s in plan.shards if s.split == split and (info := records[s.key].info) is not None]
        directory = plan.split_dir(out, split)
        directory.mkdir(parents=True, exist_ok=True)
        extra: dict[str, Any] = {"converter": summary.converter_extra(plan, split)}
        if infos:
            extra["sources"] = _write_sources(directory, plan, split, records, sources)
        dataset_writer.finish_dataset(directory, plan.options.format, infos, plan.classes, extra=extra)
    state.cleanup(out)
    return 0


def _write_sources(directory: Path, plan: Plan, split: str, records: dict[str, ShardRecord],
                   ready: dict[str, str] | None = None) -> str:
    """Write :data:`SOURCES_FILE`: line ``i`` is the JSON string of the file sample
    ``i`` was converted from, so errors about a damaged record can name it (the
    plan that knew it is deleted once the conversion is finished). ``ready``:
    the text of shards already made by :func:`shard_sources` (by shard key)."""
    ready = ready or {}
    parts = [ready[s.key] if s.key in ready else shard_sources(plan, s, records[s.key])
             for s in plan.shards if s.split == split]
    write_text_atomic(directory / SOURCES_FILE, "".join(parts))
    return SOURCES_FILE


def shard_sources(plan: Plan, shard: ShardPlan, record: ShardRecord) -> str:
    """The lines of :data:`SOURCES_FILE` for ``shard``'s samples, given its done record
    (its skipped files have none): for shards recorded by an earlier run or another
    node (the workers make them for the shards they write, see :class:`.work.ShardJob`)."""
    return sources_lines(sources_root(plan), shard.items, record.skipped)


def sources_root(plan: Plan) -> str:
    """What :data:`SOURCES_FILE` names each image under: the folder, or for a
    source copied from a URL that URL (the copy is gone once converted)."""
    return plan.source.get("url") or plan.source["root"]


def _check_request(req: ConvertRequest) -> None:
    o = req.options
    if req.run.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {req.run.workers}")
    if req.num_nodes < 1 or not 0 <= req.node_rank < req.num_nodes:
        raise ConfigError(f"--node-rank must be in [0, {req.num_nodes}) and --num-nodes >= 1 (got rank {req.node_rank} of {req.num_nodes})")
    if not 1 <= o.quality <= 100:
        raise ConfigError(f"--quality must be in 1..100, got {o.quality}")
    if o.resize is not None and o.resize < 1:
        raise ConfigError(f"--resize must be a positive number of pixels, got {o.resize}")
    if o.restart_markers:
        from fastdata.decode import native_available, native_status

        if not native_available():
            raise ConfigError(f"--restart-markers needs the compiled crop decoder, and this install has {native_status()}")
    if o.shards is not None and o.shards < 1:
        raise ConfigError(f"--shards must be at least 1, got {o.shards}")
    if req.run.on_error not in ("raise", "skip"):
        raise ConfigError(f"--on-error must be 'raise' or 'skip', got {req.run.on_error!r}")
    if (req.src is None) == (req.list_file is None):
        raise ConfigError("give either SRC (an image folder) or --list FILE, not both")
    if req.overwrite and req.resume:
        raise ConfigError("--overwrite starts over and --resume continues: pass one of them")
    if req.overwrite and req.num_nodes > 1:
        raise ConfigError("--overwrite cannot be used with --num-nodes > 1 (the nodes would delete each other's shards); clear OUT before starting")


def _source(req: ConvertRequest) -> dict:
    if req.src is not None:
        return {
            "kind": "folder",
            "root": os.path.abspath(req.src),
            "extensions": list(req.extensions),
            "allow_empty_classes": req.allow_empty_classes,
            **({"url": req.source_url} if req.source_url is not None else {}),
        }
    if req.list_file is None:  # _check_request: SRC or --list, one of them
        raise ConfigError("give either SRC (an image folder) or --list FILE")
    list_file = os.path.abspath(req.list_file)
    return {"kind": "list", "list": list_file, "root": os.path.abspath(req.root or os.path.dirname(list_file))}
