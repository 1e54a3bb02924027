"""A shard whose file size differs from the manifest's is refused when the
dataset is opened, not when training reaches its last record."""

from __future__ import annotations

import os
import re

import pytest
from dskit import FORMATS, open_stream, write_kind

from fastdata.datasets import open_dataset
from fastdata.errors import FormatError
from fastdata.formats import Manifest, registry


def _truncate_last_shard(root) -> tuple[str, int, int]:
    m = Manifest.read(root)
    info = m.shards[-1]
    path = registry.get(m.format).data_file(root / info.file)  # what the manifest measures
    os.truncate(path, info.bytes - 100)
    return str(path), info.bytes - 100, info.bytes


def _map_style(root, fmt):
    return open_dataset(root)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("opener", [_map_style, open_stream])
def test_open_refuses_a_truncated_shard(tmp_path, fmt, opener):
    root = write_kind(tmp_path / fmt, fmt)
    assert len(opener(root, fmt)) == 24
    path, size, expected = _truncate_last_shard(root)
    with pytest.raises(FormatError) as info:
        opener(root, fmt)
    message = str(info.value)
    assert path in message and f"is {size} bytes but the manifest says {expected}" in message
    assert f"fastdata verify {root}" in message and "re-convert" in message


def test_open_refuses_a_missing_shard(tmp_path):
    root = write_kind(tmp_path / "rec", "recordio")
    first = Manifest.read(root).shards[0].file
    (root / first).unlink()
    with pytest.raises(FormatError, match=re.escape(first) + ".*shard is missing"):
        open_dataset(root)
