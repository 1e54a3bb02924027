"""The per-format classes (fastdata.datasets.named) are written out, so "go to
definition" lands on code, and they agree with the format registry: every
class it names exists, of its format's kind, with the format fixed, the
common keywords and the format's options with their annotations and defaults.
A class that disagrees is caught (the source, changed, is checked again)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import types
from pathlib import Path

import pytest

import fastdata
import fastdata.datasets
from fastdata.datasets import FormatDataset, FormatStream, named
from fastdata.datasets.shards import ShardSource
from fastdata.formats import registry

BASES = {"dataset": FormatDataset, "stream": FormatStream}
SOURCE = Path(named.__file__)

# (name, kind, default, annotation) of one parameter
Param = tuple[str, str, object, str]


def _keywords(func) -> dict[str, inspect.Parameter]:
    return {p.name: p for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY}


def _param(p: inspect.Parameter) -> Param:
    return (p.name, p.kind.name, p.default, str(p.annotation))


def expected_signature(name: str) -> list[Param]:
    """What the registry says class ``name`` takes: the generic class's
    positional parameters and keywords (less ``format``), then the format's options."""
    fmt, kind = registry.public_names()[name]
    base = inspect.signature(BASES[kind]).parameters.values()
    common = [_param(p) for p in base if p.name != "format" and p.kind is not p.VAR_KEYWORD]
    options = [
        (f.name, "KEYWORD_ONLY", f.default, str(f.type)) for f in dataclasses.fields(registry.get(fmt).options)
    ]
    return common + options


def problems(module: types.ModuleType) -> list[str]:
    """How a module's classes disagree with the registry (empty: they agree)."""
    found = []
    public = registry.public_names()
    if set(module.CLASSES) != set(public) or module.__all__ != sorted(public):
        found.append(f"classes {sorted(module.CLASSES)}, __all__ {module.__all__} != registry names {sorted(public)}")
    for name in sorted(set(module.CLASSES) & set(public)):
        cls, (fmt, kind) = module.CLASSES[name], public[name]
        if cls.__bases__ != (BASES[kind],):
            found.append(f"{name}: bases {cls.__bases__}, the registry's kind is {kind}")
        if cls.fixed_format != fmt:
            found.append(f"{name}: fixed_format {cls.fixed_format!r}, the registry says {fmt!r}")
        got = [_param(p) for p in inspect.signature(cls).parameters.values()]
        if got != expected_signature(name):
            found.append(f"{name}: written {got} != registry {expected_signature(name)}")
    return found


def load(source: str) -> types.ModuleType:
    """``source`` run as a module of fastdata.datasets (a changed copy of named.py)."""
    module = types.ModuleType("fastdata.datasets._named_probe")
    module.__package__ = "fastdata.datasets"
    exec(compile(source, str(SOURCE), "exec"), module.__dict__)
    return module


def test_the_classes_agree_with_the_registry():
    assert problems(named) == []


@pytest.mark.parametrize(
    "old, new",
    [
        ('image_key: str = "image/encoded", label_key', 'image_key: str = "image/png", label_key'),
        (',\n                 label_base: int | None = None) -> None:', ') -> None:'),
        ('on_error: str = "raise") -> None:', 'on_error: str = "raise", label_key: str = "x") -> None:'),
        ("shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER", "shuffle_buffer: int | None = DEFAULT_SHUFFLE_BUFFER"),
        ("class LMDBDataset(FormatDataset)", "class LMDBDataset(FormatStream)"),
        ('fixed_format = "recordio"', 'fixed_format = "lmdb"'),
        ("RecordIOStream, TFRecordDataset, TFRecordStream)}", "RecordIOStream, TFRecordDataset)}"),
    ],
    ids=["option default", "option missing", "option of another format", "annotation", "kind", "format",
         "class missing"],
)
def test_a_class_that_disagrees_with_the_registry_is_caught(old, new):
    source = SOURCE.read_text()
    assert old in source
    assert problems(load(source)) == []  # the copy itself agrees: only the change below is caught
    assert problems(load(source.replace(old, new, 1)))


@pytest.mark.parametrize("name", sorted(registry.public_names()))
def test_each_class_is_written_out_and_importable_by_name(name):
    fmt, kind = registry.public_names()[name]
    cls = getattr(named, name)
    assert inspect.getsourcefile(cls) == str(SOURCE) and f"class {name}(" in inspect.getsource(cls)
    assert fastdata.__dict__.get(name, getattr(fastdata, name)) is cls is getattr(fastdata.datasets, name)
    assert named.public_class(fmt, kind) is cls
    assert pickle.loads(pickle.dumps(cls)) is cls and cls.__module__ == "fastdata.datasets.named"
    assert cls.__qualname__ == name and fmt in cls.__doc__
    # the keywords the generic class's constructor shares, less format (fixed here)
    common = {n for n in _keywords(ShardSource.__init__) if n != "format"}
    assert common <= set(inspect.signature(cls).parameters)


def test_an_option_the_format_does_not_take_is_a_type_error_at_the_call(tmp_path):
    message = r"^RecordIODataset.__init__\(\) got an unexpected keyword argument 'label_key'$"
    with pytest.raises(TypeError, match=message):
        named.RecordIODataset(tmp_path, label_key="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'format'"):
        named.TFRecordStream(tmp_path, format="tfrecord")  # type: ignore[call-arg]


def test_a_format_without_class_names_gets_the_generic_classes():
    assert (named.public_class("no-such-format"), named.public_class("lmdb", "stream")) == (FormatDataset, FormatStream)


def test_a_registry_name_without_a_written_class_is_an_error_naming_the_file(monkeypatch):
    monkeypatch.setattr(named, "CLASSES", {k: v for k, v in named.CLASSES.items() if k != "LMDBDataset"})
    with pytest.raises(LookupError, match=r"registry names LMDBDataset for 'lmdb'.*fastdata/datasets/named.py"):
        named.public_class("lmdb")
