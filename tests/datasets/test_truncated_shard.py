"""A shard whose file size differs from the manifest's is refused when the
dataset is opened, not when training reaches its last record."""

from __future__ import annotations

import os
import re

import pytest
from dskit import FORMATS, write_kind

from fastdata.datasets import open_dataset
from fastdata.errors import FormatError
from fastdata.formats.manifest import Manifest


def _truncate_last_shard(root) -> tuple[str, int, int]:
    m = Manifest.read(root)
    info = m.shards[-1]
    path = root / info.file
    if path.is_dir():  # an LMDB shard: its data.mdb is what the manifest measures
        path = path / "data.mdb"
    os.truncate(path, info.bytes - 100)
    return str(path), info.bytes - 100, info.bytes


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("streaming", [False, True])
def test_open_refuses_a_truncated_shard(tmp_path, fmt, streaming):
    if streaming and fmt == "lmdb":
        pytest.skip("LMDB has no stream")
    root = write_kind(tmp_path / fmt, fmt)
    assert len(open_dataset(root, streaming=streaming)) == 24
    path, size, expected = _truncate_last_shard(root)
    with pytest.raises(FormatError) as info:
        open_dataset(root, streaming=streaming)
    message = str(info.value)
    assert path in message and f"is {size} bytes but the manifest says {expected}" in message
    assert f"fastdata verify {root}" in message and "re-convert" in message


def test_open_refuses_a_missing_shard(tmp_path):
    root = write_kind(tmp_path / "rec", "recordio")
    first = Manifest.read(root).shards[0].file
    (root / first).unlink()
    with pytest.raises(FormatError, match=re.escape(first) + ".*shard is missing"):
        open_dataset(root)
