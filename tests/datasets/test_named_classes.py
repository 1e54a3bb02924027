"""The per-format classes (fastdata.datasets.named) are made from the format
registry at run time, and their signatures are written once, for type
checkers, in ``named.pyi``. The stub agrees with the registry (every name it
lists, its format's kind, the common keywords and the format's options with
their annotations and defaults) and with the classes made, and a stub that
disagrees is caught."""

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
STUB = Path(named.__file__).with_suffix(".pyi")

# (name, kind, default, annotation) of one parameter, as the stub and inspect both give it
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


def stub_classes(source: str) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}


def stub_signature(cls: ast.ClassDef) -> list[Param]:
    """The parameters of the stub class's ``__init__``, less ``self``."""
    (init,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    args = init.args
    assert not (args.vararg or args.kwarg or args.posonlyargs), f"{cls.name}: a real signature, no *args/**kwargs"
    positional = args.args[1:]
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + args.defaults
    out = [
        (a.arg, "POSITIONAL_OR_KEYWORD", _default(d), ast.unparse(a.annotation))
        for a, d in zip(positional, defaults)
    ]
    out += [
        (a.arg, "KEYWORD_ONLY", _default(d), ast.unparse(a.annotation))
        for a, d in zip(args.kwonlyargs, args.kw_defaults)
    ]
    return out


def _default(node):
    if node is None or node is inspect.Parameter.empty:
        return inspect.Parameter.empty
    return ast.literal_eval(node)


def stub_problems(source: str) -> list[str]:
    """How the stub's source disagrees with the registry (empty: it agrees)."""
    problems = []
    tree = ast.parse(source)
    classes = stub_classes(source)
    public = registry.public_names()
    if set(classes) != set(public):
        problems.append(f"stub classes {sorted(classes)} != registry names {sorted(public)}")
    (stub_all,) = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["__all__"]]
    if stub_all != sorted(public):
        problems.append(f"stub __all__ {stub_all} != {sorted(public)}")
    for name in sorted(set(classes) & set(public)):
        kind = public[name][1]
        bases = [ast.unparse(b) for b in classes[name].bases]
        if bases != [BASES[kind].__name__]:
            problems.append(f"{name}: bases {bases}, the registry's kind is {kind}")
        got, want = stub_signature(classes[name]), expected_signature(name)
        if got != want:
            problems.append(f"{name}: stub {got} != registry {want}")
    return problems


def test_the_stub_agrees_with_the_registry():
    assert stub_problems(STUB.read_text()) == []


@pytest.mark.parametrize(
    "old, new",
    [
        ('image_key: str = "image/encoded",\n        label_key', 'image_key: str = "image/png",\n        label_key'),
        ("        label_base: int | None = None,\n    ) -> None: ...\n", "    ) -> None: ...\n"),
        ("on_error: str = \"raise\",\n    ) -> None: ...\n\nclass RecordIOStream",
         "on_error: str = \"raise\",\n        label_key: str = \"x\",\n    ) -> None: ...\n\nclass RecordIOStream"),
        ("shuffle_buffer: int = 512", "shuffle_buffer: int | None = 512"),
        ("class LMDBDataset(FormatDataset)", "class LMDBDataset(FormatStream)"),
    ],
    ids=["option default", "option missing", "option of another format", "annotation", "kind"],
)
def test_a_stub_that_disagrees_with_the_registry_is_caught(old, new):
    source = STUB.read_text()
    assert old in source
    assert stub_problems(source.replace(old, new, 1))


@pytest.mark.parametrize("name", sorted(registry.public_names()))
def test_each_class_is_the_generic_class_with_its_format_fixed(name):
    fmt, kind = registry.public_names()[name]
    cls = getattr(named, name)
    assert cls.__bases__ == (BASES[kind],) and cls.fixed_format == fmt
    assert fastdata.__dict__.get(name, getattr(fastdata, name)) is cls is getattr(fastdata.datasets, name)
    assert named.public_class(fmt, kind) is cls
    assert pickle.loads(pickle.dumps(cls)) is cls and cls.__module__ == "fastdata.datasets.named"
    assert cls.__qualname__ == name and fmt in cls.__doc__


@pytest.mark.parametrize("name", sorted(registry.public_names()))
def test_each_class_is_signed_as_the_stub_says(name):
    params = inspect.signature(getattr(named, name)).parameters.values()
    assert [_param(p) for p in params] == stub_signature(stub_classes(STUB.read_text())[name])
    # the keywords the generic class's constructor shares, less format (fixed here)
    common = {n for n in _keywords(ShardSource.__init__) if n != "format"}
    assert common <= {p.name for p in params}


def test_the_module_names_exactly_the_registry_classes():
    assert named.__all__ == sorted(registry.public_names())
    with pytest.raises(AttributeError, match="has no attribute 'FormatDataset'"):
        named.per_format("FormatDataset")


def test_an_option_the_format_does_not_take_is_a_type_error_at_the_call(tmp_path):
    message = r"^RecordIODataset.__init__\(\) got an unexpected keyword argument 'label_key'$"
    with pytest.raises(TypeError, match=message):
        named.RecordIODataset(tmp_path, label_key="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'format'"):
        named.TFRecordStream(tmp_path, format="tfrecord")  # type: ignore[call-arg]


def test_a_format_without_class_names_gets_the_generic_classes():
    assert (named.public_class("no-such-format"), named.public_class("lmdb", "stream")) == (FormatDataset, FormatStream)
