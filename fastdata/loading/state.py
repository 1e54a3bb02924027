"""A loader's position, as a plain dict that goes into a training checkpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import ConfigError

__all__ = ["LoaderState"]

VERSION = 1


@dataclass(frozen=True)
class LoaderState:
    """Where a loader is: ``batches`` of ``epoch`` already handed out, plus the
    settings that fix the order. Everything but ``epoch``, ``batches`` and
    ``seed`` must match the loader it is loaded into."""

    epoch: int
    batches: int
    seed: int
    rank: int
    world_size: int
    batch_size: int
    dataset_length: int
    train: bool
    drop_last: bool
    seeding: str
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> LoaderState:
        """Parse a :meth:`to_dict` result; ConfigError names missing fields or a newer version."""
        if not isinstance(state, Mapping):
            raise ConfigError(f"loader state must be a dict from Loader.state_dict(), got {type(state).__name__}")
        version = state.get("version")
        if version != VERSION:
            raise ConfigError(f"loader state has version {version!r}; this fastdata reads version {VERSION}")
        missing = [f.name for f in fields(cls) if f.name not in state]
        if missing:
            raise ConfigError(f"loader state lacks {', '.join(missing)}; pass the dict Loader.state_dict() returned")
        return cls(**{f.name: state[f.name] for f in fields(cls)})

    def check_compatible(self, current: LoaderState) -> None:
        """Raise ConfigError listing the settings that differ from ``current``'s
        (the remaining batches could not come in the recorded order)."""
        fixed = ("world_size", "batch_size", "dataset_length", "train", "drop_last", "seeding")
        diffs = [f"{n}: saved {getattr(self, n)!r}, loader has {getattr(current, n)!r}" for n in fixed
                 if getattr(self, n) != getattr(current, n)]
        if diffs:
            raise ConfigError(
                "cannot resume: " + "; ".join(diffs) + " (build the loader with the saved settings)"
            )
