"""The variants ``fastdata bench`` times: baselines, fastdata, DALI; train, eval, raw reads, conversion.

Two grids. The default one is the comparison a user needs, in about a
minute: torchvision's recipe (or its PIL stand-in), fastdata's defaults over
the image folder and the default formats' shards, and DALI's CPU pipeline
when installed. ``--full`` (``Settings.full``) adds every other row: the same
PIL transforms through fastdata, the pytorch/examples recipe, the other kind
of workers, the decode limit, DALI per source and evaluation, raw record
reads and conversion.
"""

from __future__ import annotations

from . import baselines
from .convert_rows import beyond_start_up as beyond_start_up
from .convert_rows import conversion_sources as conversion_sources
from .convert_rows import conversions
from .harness import Variant
from .peers import has_dali as has_dali
from .peers import has_tfrecord_package as _has_tfrecord_package
from .pipeline_rows import pipelines
from .read_rows import raw_reads
from .read_rows import small_records as small_records
from .settings import CONVERT_IMAGES as CONVERT_IMAGES
from .settings import CONVERT_TINY as CONVERT_TINY
from .settings import DEFAULT_FORMATS as DEFAULT_FORMATS
from .settings import FORMATS as FORMATS
from .settings import GROUP_NOTES as GROUP_NOTES
from .settings import Convert as Convert
from .settings import Settings as Settings
from .steady import drain as drain
from .steady import steady as steady


def build(s: Settings) -> list[Variant]:
    out: list[Variant] = []
    if "train" in s.groups:
        out += pipelines(s, train=True)
    if "eval" in s.groups:
        out += pipelines(s, train=False)
    if "read" in s.groups:
        out += raw_reads(s)
    if "convert" in s.groups and s.convert is not None:
        out += conversions(s, s.convert)
    return out


def missing_peers(s: Settings) -> dict[str, str]:
    """The peers this run cannot time, each with what adds it (or why it is left out)."""
    out = {}
    if not baselines.has_torchvision() and ("train" in s.groups or "eval" in s.groups):
        out["torchvision"] = ("not installed: the baselines are PIL stand-ins doing the same work; "
                              "pip install torchvision (the build matching your torch) for the real ones")
    if ("train" in s.groups or "eval" in s.groups) and s.shards:
        if not s.dali:
            out["DALI"] = "left out (--no-dali)"
        elif not has_dali():
            out["DALI"] = "not installed: pip install 'fastdata[dali]' adds it (NVIDIA DALI; its CPU pipeline needs no GPU)"
    if "read" in s.groups and not _has_tfrecord_package():
        out["tfrecord package"] = "not installed: pip install tfrecord (in fastdata's test extra) adds its reader row"
    return out
