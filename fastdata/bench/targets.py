"""The project's speed targets, stated once.

``fastdata bench`` checks them (:func:`fastdata.bench.report.headline`) and
``benchmarks/RESULTS.md`` quotes them under "Targets"; a test keeps the two
in step. Each is a ratio of medians measured in the same interleaved run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """``key``: what :func:`~fastdata.bench.report.headline` compares; ``label``: the
    same in words; ``minimum``: the ratio to reach."""

    key: str
    label: str
    minimum: float


# Each is judged on one fixed configuration, the defaults a user gets
# (fastdata.bench.verdicts): make_loader(ds, batch_size, workers=N), no kind,
# decode-aware transforms, over shards from the default conversion.
TARGETS: tuple[Target, ...] = (
    Target("train_vs_torchvision", "train: fastdata with the defaults vs the torchvision (apex) recipe, same images", 2.5),
    Target("train_vs_dali_cpu", "train: fastdata with the defaults vs DALI's CPU pipeline, same shards", 2.0),
    Target("eval_vs_torchvision", "eval: fastdata with the defaults vs the torchvision recipe, same images", 2.3),
    Target("decode_limit", "decode limit: fastdata with the defaults vs a full decode alone, same shards and loader", 1.1),
)


def target(key: str) -> Target:
    """The target named ``key``."""
    for t in TARGETS:
        if t.key == key:
            return t
    raise KeyError(key)


# Row names the targets compare (suite.py names its variants with these).
def decode_aware_row(source: str) -> str:
    """The fastdata pipeline with decode-aware transforms over ``source`` (a format or "ImageFolder")."""
    return f"fastdata {source}, decode-aware"


def decode_limit_row(source: str) -> str:
    """The same loader doing nothing but a full decode of each image: the ceiling of a full-decode pipeline."""
    return f"full decode only, {source} (the decode limit)"

