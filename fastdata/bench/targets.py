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


TARGETS: tuple[Target, ...] = (
    Target("train_vs_torchvision",
           "train: the best fastdata decode-aware pipeline vs the torchvision (apex) recipe, same images", 2.2),
    Target("train_vs_dali_cpu", "train: fastdata decode-aware vs DALI's CPU pipeline, same format", 1.8),
    Target("eval_vs_torchvision", "eval: the best fastdata decode-aware pipeline vs the torchvision recipe, same images", 2.0),
    Target("decode_limit",
           "decode limit: fastdata decode-aware training vs a full decode alone, same format and loader", 1.1),
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


def decode_limit_source(name: str) -> str | None:
    """``source`` of a :func:`decode_limit_row` name, else None."""
    head, tail = "full decode only, ", " (the decode limit)"
    return name[len(head):-len(tail)] if name.startswith(head) and name.endswith(tail) else None
