"""The C sources flow one way, as the Python packages do (tests/test_layers.py).

Drawn from the code: which header each file includes, and which file's
``fd_*`` functions and globals each ``.c`` file uses. No cycle among files,
and the three folders stand as the packages do: ``jpeg/_native`` (the marker
walk both extensions include) includes nothing of the other two, and the crop
decoder's ``decode/_native`` and the write helpers' ``formats/_native`` never
use each other, so either extension builds without the other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JPEG, DECODE, FORMATS = (ROOT / "fastdata" / name / "_native" for name in ("jpeg", "decode", "formats"))
FOLDERS = (JPEG, DECODE, FORMATS)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def sources() -> list[Path]:
    return [p for folder in FOLDERS for p in sorted(folder.glob("*.[ch]"))]


def includes(path: Path) -> list[Path]:
    """The project headers ``path`` includes, found as the build finds them:
    its own folder first, then the shared ``jpeg/_native`` (setup.py's include_dirs)."""
    found = []
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', COMMENT.sub("", path.read_text()), re.M):
        for folder in (path.parent, JPEG):
            if (folder / name).exists():
                found.append(folder / name)
                break
        else:
            pytest.fail(f"{path.relative_to(ROOT)} includes {name!r}, found in neither its folder nor {JPEG.relative_to(ROOT)}")
    return found


def definitions(files: list[Path]) -> dict[str, Path]:
    """``fd_*`` name -> the ``.c`` file that defines it (a file-scope line, not static)."""
    out: dict[str, Path] = {}
    for path in files:
        if path.suffix == ".c":
            for line in COMMENT.sub("", path.read_text()).splitlines():
                if line[:1].isalpha() and not line.startswith(("static", "typedef", "struct", "enum")):
                    m = re.search(r"\b(fd_\w+)\s*[(=;\[]", line)
                    if m:
                        out.setdefault(m.group(1), path)
    return out


def graph(files: list[Path]) -> dict[Path, set[Path]]:
    """Each file -> the files it needs: the headers it includes, and for a
    ``.c`` file the ``.c`` files defining the ``fd_*`` names it uses."""
    defined = definitions(files)
    edges: dict[Path, set[Path]] = {p: set(includes(p)) for p in files}
    for path in files:
        if path.suffix == ".c":
            for name in set(re.findall(r"\b(fd_\w+)\b", COMMENT.sub("", path.read_text()))):
                if name in defined and defined[name] != path:
                    edges[path].add(defined[name])
    return edges


def cycle(edges: dict[Path, set[Path]]) -> list[Path] | None:
    """One cycle of the graph as a path that returns to its start, or None."""
    state: dict[Path, int] = {}  # 1: on the current path, 2: done

    def visit(node: Path, trail: list[Path]) -> list[Path] | None:
        state[node], trail = 1, trail + [node]
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, trail)):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [])):
            return found
    return None


def _named(paths: list[Path]) -> str:
    return " -> ".join(str(p.relative_to(ROOT)) for p in paths)


def test_the_c_sources_have_no_cycle():
    edges = graph(sources())
    found = cycle(edges)
    assert found is None, f"a cycle among the C sources: {_named(found)}"


def test_the_folders_stand_as_the_packages_do():
    edges = graph(sources())
    crossing = sorted(
        _named([a, b])
        for a, needs in edges.items() for b in needs
        if a.parent != b.parent and b.parent != JPEG
    )
    assert crossing == [], "C files that reach into another extension's folder: " + "; ".join(crossing)


def test_the_graph_sees_calls_and_includes():
    # The parse is not empty: known edges of the crop decoder and the converter's check.
    edges = graph(sources())
    assert DECODE / "resegment.c" in edges[DECODE / "restarts.c"]  # fd_add_restarts tries fd_resegment first
    assert DECODE / "interval.h" in edges[DECODE / "resegment.c"]
    assert JPEG / "markers.h" in edges[FORMATS / "jpeg_check.c"] and JPEG / "markers.h" in edges[DECODE / "baseline.h"]


def test_a_cycle_is_caught(tmp_path):
    a, b = tmp_path / "a.c", tmp_path / "b.c"
    a.write_text("int fd_a(void) { return fd_b(); }\n")
    b.write_text("int fd_b(void) { return fd_a() + 1; }\n")
    assert set(cycle(graph([a, b])) or []) == {a, b}
    b.write_text("int fd_b(void) { return 1; }\n")
    assert cycle(graph([a, b])) is None
