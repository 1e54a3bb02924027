"""Size rule for the library and the converters (issue 39): no function over
60 lines and no module over 400 lines, so a reader can hold each in view.

A function's length runs from its ``def`` line to its last line, docstring
included. Anything longer must be listed below with the reason it stays.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fastdata", "converters")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400

# (path, qualified function name) -> why it may be longer than the rule.
ALLOWED_FUNCTIONS: dict[tuple[str, str], str] = {
    # Public entry points whose length is their reference documentation: a
    # keyword-only signature of ~15 parameters and a docstring of ~50 lines
    # (every argument, its default and its failure); the bodies are under 30.
    ("fastdata/loading/make.py", "make_loader"): "17-line signature + 51-line docstring; body 25 lines",
    ("fastdata/dali/pipelines.py", "build_pipeline"): "15-line signature + 45-line docstring; body 29 lines",
}

# path -> why the module may be longer than the rule.
ALLOWED_MODULES: dict[str, str] = {}


def _functions(tree: ast.Module):
    """Yield (qualified name, node) for every function, methods and nested
    functions included (``Class.method``, ``outer.inner``)."""
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                stack.append((f"{name}.", child))
            else:
                stack.append((prefix, child))


def oversized(root: Path = ROOT) -> list[str]:
    """Every function and module over the limits that is not allowed, as
    ``path: what (lines)`` lines."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            source = path.read_text(encoding="utf-8")
            lines = len(source.splitlines())
            if lines > MAX_MODULE_LINES and rel not in ALLOWED_MODULES:
                found.append(f"{rel}: module ({lines} lines)")
            for name, node in _functions(ast.parse(source, filename=rel)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES and (rel, name) not in ALLOWED_FUNCTIONS:
                    found.append(f"{rel}: {name} ({length} lines)")
    return found


def test_no_function_or_module_over_the_limit():
    found = oversized()
    assert not found, (
        f"over {MAX_FUNCTION_LINES} lines per function or {MAX_MODULE_LINES} per "
        "module; split them, or list them in tests/test_sizes.py with the reason:\n"
        + "\n".join(found)
    )


def test_allow_list_names_only_what_is_still_long():
    """An entry for something that is now short (or gone) must be removed, so
    the list never hides a new long function of the same name."""
    stale = []
    for rel, name in ALLOWED_FUNCTIONS:
        path = ROOT / rel
        source = path.read_text(encoding="utf-8") if path.exists() else ""
        lengths = {n: f.end_lineno - f.lineno + 1 for n, f in _functions(ast.parse(source))}
        if lengths.get(name, 0) <= MAX_FUNCTION_LINES:
            stale.append(f"{rel}: {name}")
    for rel in ALLOWED_MODULES:
        path = ROOT / rel
        if not path.exists() or len(path.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES:
            stale.append(rel)
    assert not stale, "remove from the allow-list, now within the limit: " + ", ".join(stale)


def test_rule_catches_a_long_function(tmp_path):
    package = tmp_path / "fastdata"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (package / "long.py").write_text(f"def too_long():\n{body}\n")
    (tmp_path / "converters").mkdir()
    assert oversized(tmp_path) == ["fastdata/long.py: too_long (61 lines)"]
