"""Helpers of the engine tests. A module of its own name: ``from conftest import``
finds whichever conftest was loaded last, and this module can be shipped to the
engines' workers by value (``cloudpickle.register_pickle_by_value``), which
cannot import tests/."""

from __future__ import annotations

from pathlib import Path

#: The shard options every engine test converts with: 6 shards, cut into pieces
#: as workers come free (so joins run as engine tasks too).
CONVERT = ["--format", "recordio", "--shards", "6", "--test-min-piece", "200000", "-q"]


def half_a_shard(output, name: str) -> None:
    """What a task killed mid-write leaves under ``output``'s attempts (an
    engine ``Output``): part of a shard in a folder or, for a URL, an object."""
    if output.is_url:
        output.store().write_bytes(f"{output.attempts}/{name}/shard-x.rec", b"half a shard")
    else:
        dead = Path(output.attempts) / name
        dead.mkdir(parents=True, exist_ok=True)
        (dead / "shard-x.rec").write_bytes(b"half a shard")


def bucket_files(server, prefix: str) -> dict[str, bytes]:
    """Every object under ``bucket/prefix`` on the test S3 server, by name relative to it."""
    fs = server.client()
    return {p[len(prefix) + 1:]: fs.cat_file(p) for p in sorted(fs.find(prefix))}
