"""``classes`` of shards other tools wrote: the names the format's
``class_names`` hook finds (im2rec's ``.lst``, TFRecord's ``image/class/text``),
asked once, else ``str(t)`` for each target; the same for map-style datasets
and streams (one ``ShardLabels.classes``, no override under it)."""

from __future__ import annotations

import os
import types

import pytest

from dskit import NUM_CLASSES, write_kind
from fastdata.datasets import FormatDataset, FormatStream, base


@pytest.fixture(scope="module")
def shard_paths(tmp_path_factory):
    root = write_kind(tmp_path_factory.mktemp("rec"), "recordio")
    paths = sorted(os.fspath(p) for p in root.glob("*.rec"))
    assert len(paths) > 1
    return paths  # opened as a list of shards: no manifest, so no class names from it


def _asked(monkeypatch, answer):
    """Install a format whose class_names hook answers ``answer``; the list of its calls."""
    calls = []

    def hook(readers):
        calls.append(len(readers))
        return answer

    monkeypatch.setattr(base, "registry", types.SimpleNamespace(get=lambda fmt: types.SimpleNamespace(class_names=hook)))
    return calls


@pytest.mark.parametrize("cls", [FormatDataset, FormatStream])
def test_the_formats_names_are_asked_once(monkeypatch, shard_paths, cls):
    calls = _asked(monkeypatch, ["ant", "bee", "cow"])
    ds = cls(shard_paths, format="recordio")
    assert ds.classes == ["ant", "bee", "cow"] and ds.class_to_idx == {"ant": 0, "bee": 1, "cow": 2}
    assert calls == [len(shard_paths)]  # one call, with a reader per shard


@pytest.mark.parametrize("cls", [FormatDataset, FormatStream])
def test_without_names_the_targets_number_the_classes(monkeypatch, shard_paths, cls):
    calls = _asked(monkeypatch, None)
    ds = cls(shard_paths, format="recordio")
    assert ds.classes == [str(t) for t in range(NUM_CLASSES)]
    assert ds.classes == [str(t) for t in range(NUM_CLASSES)] and len(calls) == 1


def test_given_classes_ask_nothing(monkeypatch, shard_paths):
    calls = _asked(monkeypatch, ["x"])
    assert FormatDataset(shard_paths, format="recordio", classes=["a", "b", "c"]).classes == ["a", "b", "c"]
    assert calls == []
