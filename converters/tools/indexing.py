"""``fastdata index FILE...``: the index files of shards written elsewhere.

Each format with index files says in its registry spec where a shard's
index goes and how it is built (``FormatSpec.index``; e.g. ``x.rec`` ->
``x.idx``, ``x.tfrecord`` -> ``x.tfrecord.idx``). The format comes from
:func:`fastdata.formats.detect` (first bytes before names).

``--checksums`` writes, instead, each shard's record checksums
(``<shard>.crc``: a CRC32C per record, :mod:`fastdata.formats.checksums`),
so that datasets and ``fastdata verify`` find a damaged payload in a file
another tool wrote (RecordIO and LMDB cannot see one themselves).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from fastdata.errors import ConfigError, FastDataError
from fastdata.formats import checksums, registry
from fastdata.formats._atomic import written

from .probe import SHARD, identify


def run(
    files: list[str],
    *,
    force: bool = False,
    sums: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Index each file (or write its record checksums, ``sums``); returns 0,
    or 2 when any file could not be done (each one is reported)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    failed = 0
    for name in files:
        try:
            out, detail = checksum_file(name, force=force) if sums else index_file(name, force=force)
        except (FastDataError, OSError) as exc:
            failed += 1
            print(f"fastdata: error: {exc}", file=stderr)
            continue
        print(f"fastdata index: {name} -> {out} ({detail})", file=stdout)
    return 2 if failed else 0


def checksum_file(path: str | os.PathLike[str], *, force: bool = False) -> tuple[Path | str, str]:
    """Write the record checksums of one shard beside it; returns their path and a few words.

    Raises:
        ConfigError: not a single shard, or the checksums exist and ``force`` is False.
        FormatError: a damaged record (nothing is written).
    """
    target = identify(path)
    if target.kind != SHARD:
        raise ConfigError(
            f"{path}: a dataset directory fastdata wrote has record checksums already; give one shard another tool wrote"
        )
    compute = registry.get(target.format).record_checksums
    if compute is None:
        return "nothing written", f"{target.format} records carry their own CRC32C, checked on every read"
    out = checksums.sidecar_path(target.path)
    if out.exists() and not force:
        raise ConfigError(f"{out} already exists; pass --force to compute it again")
    crcs, size = compute(target.shard)
    with written(out) as (tmp,):
        checksums.write(tmp, crcs, size)
    return out, f"CRC32C of {len(crcs)} records, checked by every later read"


def index_file(path: str | os.PathLike[str], *, force: bool = False) -> tuple[Path, str]:
    """Build the index of one file; returns its path and what was indexed.

    Raises:
        ConfigError: not a shard of a format with index files, a file its
            format cannot index (e.g. compressed), or the index exists and
            ``force`` is False.
        FormatError: the file is damaged (nothing is written).
    """
    target = identify(path)
    hook = registry.get(target.format).index
    if target.kind != SHARD or hook is None:
        indexed = [f"{name} ({', '.join(registry.get(name).suffixes)})" for name in registry.names() if registry.get(name).index]
        raise ConfigError(
            f"{path}: only shards of {', '.join(indexed)} have index files (this is {target.kind} / {target.format})"
        )
    out = hook.path(target.shard.shard_file)
    if out.exists() and not force:
        raise ConfigError(f"{out} already exists; pass --force to rebuild it")
    tmp = out.with_name(out.name + f".{os.getpid()}.partial")
    try:
        detail = hook.build(target.shard, tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out, detail
