"""What a worker is sent for each task of a run: a :class:`.work.ShardJob` for a
whole shard or a piece of one, a :class:`.work.JoinJob` for a cut shard whose
pieces are all written.

Making a job also prepares the disk for it, in this process: the shard's
earlier files are cleared before its first task, and its folder (the split's,
or a piece's own under ``OUT/.fastdata-state/pieces/``) exists.
"""

from __future__ import annotations

from pathlib import Path

from ..output import state
from ..output.record import ShardRecord
from ..planning.layout import Plan, ShardPlan
from .normalize import EncodeOptions
from .tail import Task
from .work import ItemRange, JoinJob, Piece, ShardJob


class JobMaker:
    """The jobs of one run of ``shards`` into ``out``.

    ``by_position``: jobs name their items by the shard's place in
    ``shards`` (what the workers got at start-up) instead of carrying them;
    ``sources_root``: as :attr:`.work.ShardJob.sources_root`.
    """

    def __init__(self, out: str, plan: Plan, shards: list[ShardPlan], *, on_error: str, verify_decode: bool,
                 fsync: bool, sources_root: str | None, by_position: bool) -> None:
        self._out, self._plan = out, plan
        o = plan.options
        self._encode = EncodeOptions(resize=o.resize, quality=o.quality, reencode=o.reencode,
                                     verify_decode=verify_decode, restart_markers=o.restart_markers)
        self._on_error, self._fsync, self._sources_root = on_error, fsync, sources_root
        self._present = state.present_names(out, plan, shards)  # before the first job clears anything
        self._made: set[Path] = set()  # the split folders made already: one mkdir each, not one a shard
        self._position = {shard.key: n for n, shard in enumerate(shards)} if by_position else None

    def shard_job(self, task: Task) -> ShardJob:
        """The job that writes ``task``: a whole shard, or one piece of it."""
        shard = task.shard
        if task.piece == 0:
            state.clear_shard(self._out, self._plan, shard, self._present)
        whole = task.pieces == 1
        directory = self._plan.split_dir(self._out, shard.split) if whole else state.piece_dir(self._out, shard, task.piece)
        if directory not in self._made:
            directory.mkdir(parents=True, exist_ok=True)
            if whole:  # a piece's folder is removed once it is joined
                self._made.add(directory)
        if self._position is None:
            items, ids, ref = shard.items[task.start:task.stop], shard.ids[task.start:task.stop], None
        else:
            items, ids, ref = None, None, ItemRange(self._position[shard.key], task.start, task.stop)
        return ShardJob(path=str(directory / shard.file), format=self._plan.options.format, items=items, ids=ids,
                        classes=self._plan.classes, encode=self._encode, on_error=self._on_error, fsync=self._fsync,
                        ref=ref, sources_root=self._sources_root)

    def join_job(self, shard: ShardPlan, records: list[ShardRecord]) -> JoinJob:
        """The job that joins ``shard`` from its pieces (``records``: theirs, in order)."""
        directory = self._plan.split_dir(self._out, shard.split)
        directory.mkdir(parents=True, exist_ok=True)
        pieces = [Piece(str(state.piece_dir(self._out, shard, k) / shard.file), r.info) for k, r in enumerate(records)]
        return JoinJob(format=self._plan.options.format, target=str(directory / shard.file), pieces=pieces,
                       leftovers=str(state.pieces_of(self._out, shard)), fsync=self._fsync)
