"""The per-format classes are written out in source (fastdata.datasets.named),
and agree with the format registry: every name it lists, its format and
kind, the common keywords and the format's options with their defaults."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import pickle
from pathlib import Path

import pytest

import fastdata
import fastdata.datasets
from fastdata.datasets import FormatDataset, FormatStream, named
from fastdata.datasets.shards import ShardSource
from fastdata.formats import registry

BASES = {"dataset": FormatDataset, "stream": FormatStream}


def _keywords(cls) -> dict[str, inspect.Parameter]:
    return {p.name: p for p in inspect.signature(cls).parameters.values() if p.kind is p.KEYWORD_ONLY}


def test_the_module_defines_exactly_the_registry_names_as_classes_in_source():
    assert sorted(named.__all__) == sorted(registry.public_names())
    tree = ast.parse(Path(named.__file__).read_text())
    written = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    assert written == set(registry.public_names())


@pytest.mark.parametrize("name", sorted(registry.public_names()))
def test_each_class_matches_its_registry_entry(name):
    fmt, kind = registry.public_names()[name]
    cls = getattr(named, name)
    assert cls.__bases__ == (BASES[kind],) and cls.fixed_format == fmt
    assert fastdata.__dict__.get(name, getattr(fastdata, name)) is cls is getattr(fastdata.datasets, name)
    assert pickle.loads(pickle.dumps(cls)) is cls and cls.__module__ == "fastdata.datasets.named"
    params = inspect.signature(cls).parameters
    assert list(params)[:3] == ["path", "transform", "target_transform"]
    assert not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params.values()), "a real signature, no **kwargs"
    # the generic class's keywords, less format (fixed here)
    common = {n: p for n, p in _keywords(ShardSource.__init__).items() if n != "format"}
    if kind == "stream":
        common.update({p.name: p for p in inspect.signature(FormatStream.__init__).parameters.values()
                       if p.kind is p.KEYWORD_ONLY})
    options = {f.name: f for f in dataclasses.fields(registry.get(fmt).options)}
    got = _keywords(cls)
    assert set(got) == set(common) | set(options)
    for key, p in common.items():
        assert (got[key].default, str(got[key].annotation)) == (p.default, str(p.annotation)), key
    for key, field in options.items():
        assert (got[key].default, str(got[key].annotation)) == (field.default, str(field.type)), key


def test_an_option_the_format_does_not_take_is_a_type_error_at_the_call(tmp_path):
    with pytest.raises(TypeError, match="label_key"):
        named.RecordIODataset(tmp_path, label_key="x")  # type: ignore[call-arg]
