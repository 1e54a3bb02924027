"""``fastdata verify PATH``: what is at ``PATH`` (a dataset, the splits of
one, a single shard), verified, and the one summary line and exit status."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from fastdata.errors import ManifestError
from fastdata.formats import MANIFEST_NAME

from ...output.state import SPLIT_NAMES
from ..probe import DATASET, Target, identify
from .dataset import verify_dataset
from .findings import Findings
from .single import verify_file


def run(
    path: str,
    *,
    decode: bool = False,
    quiet: bool = False,
    workers: int = 1,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Verify ``path``; returns 0 when clean, 1 when problems were found.

    With ``decode``, ``workers`` processes decode the images. A progress bar
    goes to ``stderr`` when it is a terminal and ``quiet`` is not set, as
    ``fastdata convert`` does.

    Raises:
        FastDataError: ``path`` is missing, of no known format, an unfinished
            conversion, or a dataset whose manifest cannot be read for another
            reason than damage (a newer version, no permission; exit 2, as
            ``inspect`` does; the message names the manifest). A damaged or
            edited manifest is a problem found (returns 1).
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    findings = Findings(stdout, stderr, decode=decode, quiet=quiet, workers=workers)
    splits = _splits(path)
    target = _identify(path, findings) if not splits else None
    if splits:  # OUT/train and OUT/val, each on its own: a damaged manifest in one leaves the other checked
        for directory in splits:
            if (split := _identify(directory, findings)) is not None:
                verify_dataset(split, findings)
    elif target is None:
        pass
    elif target.kind == DATASET:
        verify_dataset(target, findings)
    else:
        verify_file(target, findings)
    checked = "read and decoded" if decode else "read"
    if findings.problems:
        unread = f"; {findings.unread} damaged manifest(s): their shards were not read" if findings.unread else ""
        print(
            f"fastdata verify: {path}: {findings.problems} problem(s) found "
            f"({findings.counted(checked)}{unread})",
            file=stdout,
        )
        return 1
    if not findings.quiet:
        print(f"fastdata verify: {path}: OK, {findings.counted(checked)}", file=stdout)
    return 0


def _splits(path: str | os.PathLike[str]) -> list[Path]:
    """The split datasets (OUT/train, OUT/val) of a ``--val-fraction`` conversion at ``path``, else []."""
    path = Path(path)
    if not path.is_dir() or (path / MANIFEST_NAME).is_file():
        return []
    return [path / s for s in SPLIT_NAMES if (path / s / MANIFEST_NAME).is_file()]


def _identify(path: str | os.PathLike[str], findings: Findings) -> Target | None:
    """:func:`identify`, with a damaged or edited manifest reported as a
    problem found (exit 1: damage, as for any other file of the dataset) and
    None returned; other errors (no such path, an unknown format, an
    unfinished conversion, a manifest of a newer version) raise (exit 2)."""
    try:
        return identify(path)
    except ManifestError as exc:
        if not exc.damaged:
            raise
        where, _, what = str(exc).partition(": ")
        if not what:
            where, what = os.fspath(Path(path) / MANIFEST_NAME), str(exc)
        findings.problem(where, what)
        findings.unread += 1
        return None
