"""What ``fastdata convert`` is asked to do (shared by :mod:`.convert` and :mod:`.outdir`)."""

from __future__ import annotations

import dataclasses

from ..planning.layout import PlanOptions
from ..planning.scan import DEFAULT_EXTENSIONS
from .pack import RunOptions


@dataclasses.dataclass(frozen=True)
class ConvertRequest:
    """Everything ``fastdata convert`` was asked to do.

    ``src`` is an ImageFolder root (``source_url``: the URL it was copied
    from, recorded in the manifest); or ``list_file`` (im2rec ``.lst``) with
    ``root`` (default: the list's folder). See the CLI help for the rest.
    """

    out: str
    options: PlanOptions
    run: RunOptions = dataclasses.field(default_factory=RunOptions)
    src: str | None = None
    source_url: str | None = None
    list_file: str | None = None
    root: str | None = None
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS
    allow_empty_classes: bool = False
    allow_skips: bool = False
    overwrite: bool = False
    resume: bool = False
    num_nodes: int = 1
    node_rank: int = 0
    quiet: bool = False
