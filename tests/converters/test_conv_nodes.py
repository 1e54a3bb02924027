"""Several nodes on one OUT, started at different times, every one exiting 0;
and what the convert path imports."""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

import pytest
from convkit import make_folder, run_cli, tree

CONVERTERS = Path(__file__).resolve().parents[2] / "converters"


def _node(src: Path, out: Path, rank: int, nodes: int, delay: float) -> subprocess.Popen:
    args = [sys.executable, "-c", f"import time; time.sleep({delay}); from fastdata.converters.cli import main; "
            f"raise SystemExit(main())", "convert", str(src), str(out), "--format", "recordio", "--shards", "3",
            "--passthrough", "--num-nodes", str(nodes), "--node-rank", str(rank), "--workers", "1"]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_staggered_nodes_all_exit_0_including_one_after_the_manifest_and_one_without_shards(tmp_path, capsys):
    src, out, reference = tmp_path / "src", tmp_path / "out", tmp_path / "ref"
    make_folder(src, {"a": 7, "b": 5})
    assert run_cli(capsys, "convert", src, reference, "--format", "recordio", "--shards", "3", "--passthrough", "-q")[0] == 0
    # 4 nodes for 3 shards: rank 3 has none; ranks start 0.0 to 0.6 s apart
    procs = [_node(src, out, rank, 4, delay) for rank, delay in enumerate((0.0, 0.3, 0.6, 0.15))]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (stdout, stderr) in zip(procs, results):
        assert p.returncode == 0, stderr
        assert "Traceback" not in stdout + stderr
    assert results[3][0].count("\n") == 1 and "node 3 of 4: no shard to write" in results[3][0]
    assert (out / "manifest.json").exists()
    # a node that starts once the dataset is finished: a one-line note, exit 0, nothing rewritten
    before = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    late = _node(src, out, 1, 4, 0.0)
    stdout, stderr = late.communicate(timeout=120)
    assert late.returncode == 0, stderr
    assert stdout.count("\n") == 1 and "node 1 of 4: nothing to do" in stdout and "already finished" in stdout
    assert {p: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert tree(out) == tree(reference)
    code, stdout, _ = run_cli(capsys, "merge", out)
    assert code == 0 and "already finished" in stdout  # merge stays idempotent
    assert tree(out) == tree(reference)


def test_a_late_node_with_other_settings_is_refused(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    make_folder(src, {"a": 3})
    args = ["convert", src, out, "--format", "recordio", "--passthrough", "--num-nodes", "2"]
    assert run_cli(capsys, *args, "--node-rank", "0", "-q")[0] == 0
    assert run_cli(capsys, *args, "--node-rank", "1", "-q")[0] == 0
    code, _, err = run_cli(capsys, *args, "--node-rank", "1", "--seed", "3")
    assert code == 2 and "other settings" in err


#: converters/'s sub-packages, each importing only from those before it and from :data:`LEAVES`.
LAYERS = ("workers", "planning", "output", "conversion", "tools")
#: Top-level modules that import nothing of the converters: every sub-package may use them.
LEAVES = {"exits", "units", "jpeg_check"}


def _converter_imports() -> dict[str, set[str]]:
    """Each module of converters/, dotted from there (``conversion.pack``; a package by its
    ``__init__``), and the modules of converters/ it imports, however spelled relatively."""
    files = {}
    for path in sorted(CONVERTERS.rglob("*.py")):
        parts = path.relative_to(CONVERTERS).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = (path, list(parts[:-1]))
    graph = {}
    for name, (path, package) in files.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = [*package[: len(package) - node.level + 1], *(node.module.split(".") if node.module else [])]
                found = [".".join(target)] + [".".join([*target, alias.name]) for alias in node.names]
                deps.update(d for d in found if d in files and d != name)
        graph[name] = deps
    return graph


def test_converter_modules_import_no_cycle_and_their_packages_flow_one_way():
    graph = _converter_imports()
    assert {"conversion.pack", "workers.pool", "output.record"} <= set(graph)  # the walk found the code

    def reaches(start: str, goal: str, seen: set) -> bool:
        for dep in graph.get(start, ()):
            if dep == goal or (dep not in seen and reaches(dep, goal, seen | {dep})):
                return True
        return False

    assert [m for m in sorted(graph) if reaches(m, m, set())] == []
    against = {
        f"{module} imports {dep}"
        for module, deps in graph.items() if module.split(".")[0] in LAYERS
        for dep in deps
        if (LAYERS.index(dep.split(".")[0]) > LAYERS.index(module.split(".")[0])
            if dep.split(".")[0] in LAYERS else dep not in LEAVES)
    }
    assert not against, f"a sub-package imports one after it in LAYERS, or a top-level module that is not a leaf: {against}"
    assert "importlib.import_module" not in (CONVERTERS / "cli.py").read_text()


def test_each_package_init_is_only_its_docstring():
    """A spawned worker imports conversion/work.py through every __init__ above it: they cost nothing."""
    for init in sorted(CONVERTERS.rglob("__init__.py")):
        body = ast.parse(init.read_text()).body
        assert len(body) == 1 and isinstance(body[0].value, ast.Constant) and body[0].value.value.strip(), init


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_pass_through_imports_neither_pillow_nor_multiprocessing(tmp_path, workers):
    """Pillow (~11 ms) is for images the structural check does not vouch for, and
    multiprocessing with concurrent.futures (~20 ms) for spawned workers: a
    pass-through of good JPEGs pays neither at start-up (forked workers come
    from converters/workers/forkpool.py)."""
    make_folder(tmp_path / "src", {"a": 2, "b": 1})
    code = (
        "import sys; from fastdata.converters.cli import main; "
        f"rc = main(['convert', {str(tmp_path / 'src')!r}, {str(tmp_path / 'o')!r}, '--format', 'recordio', "
        f"'--passthrough', '-q', '--workers', {workers!r}]); "
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('PIL', 'multiprocessing', 'concurrent')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 []"


def test_the_convert_path_imports_neither_torch_nor_remote_io(tmp_path):
    make_folder(tmp_path / "src", {"a": 2})
    code = (
        "import sys; from fastdata.converters.cli import main; "
        f"rc = main(['convert', {str(tmp_path / 'src')!r}, {str(tmp_path / 'o')!r}, '--format', 'recordio', "
        "'--passthrough', '-q', '--workers', '2']); "
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] == 'torch' or 'remote' in m))"
    )
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 []", (done.stdout, time.monotonic() - start)
