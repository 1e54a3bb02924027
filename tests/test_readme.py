"""Every code block in README.md runs, as written, on this machine.

Python blocks run in README order in one namespace (later snippets use the
names earlier ones define, as a reader following along would), and ``bash``
blocks run in the same folder, which holds real data under the names the
snippets use (see ``readmekit.make_workspace``). Only lines marked
``# needs CUDA`` are skipped, and only without a GPU.

The install line and the two set-up commands are not run here (they install
packages, and run the whole suite or the full benchmark): instead they are
checked against ``.ci/run`` and ``pyproject.toml`` so that they cannot drift
apart, and the README is checked to install before anything uses fastdata, so
that a reader going top to bottom has it installed when the first command runs.
The extras table is checked against ``pyproject.toml``'s extras.
"""

from __future__ import annotations

import gc
import os
import re
import shlex
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch
from readmekit import NEEDS_CUDA, README, ROOT, Block, blocks, make_workspace, shell_script, without_cuda_lines

SETUP_SECTION = "Set-up: two commands"
INSTALL_SECTION = "Install"
TEXT = README.read_text(encoding="utf-8")
ALL = blocks(TEXT)
RUNNABLE = [b for b in ALL if b.lang in ("python", "bash") and b.section not in (SETUP_SECTION, INSTALL_SECTION)]
CUDA = torch.cuda.is_available()

# Shortened for the test's time budget; each must appear exactly once, so an
# edit to the README that removes one fails here instead of running 90 epochs
# (or the doctor's three measurements at their 4 s default).
RUNTIME_EDITS = {"range(90)": "range(2)", "--step-ms 50 ": "--step-ms 50 --seconds 1 "}


def _edited(code: str) -> str:
    for old, new in RUNTIME_EDITS.items():
        code = code.replace(old, new)
    return code


def _python(block: Block, namespace: dict) -> str | None:
    code = _edited(without_cuda_lines(block.code, cuda=CUDA))
    if "import ray" in code:
        return _python_alone(block, code)
    # leading newlines make traceback line numbers README line numbers
    try:
        exec(compile("\n" * block.line + code, str(README), "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - any failure of a snippet is the finding
        return "".join(traceback.format_exception_only(exc)) + _readme_frames(exc)
    return None


def _python_alone(block: Block, code: str) -> str | None:
    """A block that starts Ray runs in a process of its own, told to keep its
    one-machine cluster on 127.0.0.1 (Ray reads that on import, and this
    process may have imported Ray already for tests/engines' loopback nodes)."""
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-c", "\n" * block.line + code], env=env, capture_output=True, text=True,
                          timeout=240)
    if done.returncode != 0:
        return f"exit status {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return None


def _readme_frames(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(README)]
    return "".join(f"  README.md:{f.lineno}: {f.line}\n" for f in frames)


def _bash(block: Block, work: Path) -> str | None:
    script = shell_script(_edited(without_cuda_lines(block.code, cuda=CUDA, shell=True)))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        return f"exit status {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return None


@pytest.fixture(scope="module")
def outcomes(shared_data, tmp_path_factory):
    """Run every runnable block once, in README order; ``{block name: failure text or None}``."""
    work = make_workspace(tmp_path_factory.mktemp("readme"), shared_data)
    namespace: dict = {"__name__": "__readme__"}
    results: dict[str, str | None] = {}
    old = os.getcwd()
    os.chdir(work)
    try:
        for block in RUNNABLE:
            results[block.name] = _python(block, namespace) if block.lang == "python" else _bash(block, work)
    finally:
        os.chdir(old)
        namespace.clear()  # shuts down the loaders' worker processes
        gc.collect()
    return results


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.name for b in RUNNABLE])
def test_snippet_runs(outcomes, block):
    failure = outcomes[block.name]
    if failure is not None:
        pytest.fail(f"README.md:{block.line} ({block.section}) fails as written:\n{failure}", pytrace=False)


def test_readme_has_snippets_of_each_kind():
    langs = sorted({b.lang for b in RUNNABLE})
    assert langs == ["bash", "python"], langs
    unknown = [b.name for b in ALL if b.lang not in ("python", "bash")]
    assert not unknown, f"tag these blocks python or bash so this test runs them: {unknown}"


def test_runtime_edits_still_match_the_readme():
    code = "".join(b.code for b in RUNNABLE)
    for old in RUNTIME_EDITS:
        assert code.count(old) == 1, f"{old!r} occurs {code.count(old)} times in README code; update RUNTIME_EDITS"


def _setup_commands() -> list[list[str]]:
    setup = [b for b in ALL if b.section == SETUP_SECTION]
    assert [b.lang for b in setup] == ["bash", "bash"], "the set-up section should hold two bash blocks"
    return [shlex.split(b.code) for b in setup]


def _after(words: list[str], start: list[str]) -> list[str]:
    """The words after the first occurrence of ``start``, up to ``&&`` or the end."""
    for i in range(len(words)):
        if words[i : i + len(start)] == start:
            rest = words[i + len(start) :]
            return rest[: rest.index("&&")] if "&&" in rest else rest
    raise AssertionError(f"{' '.join(start)!r} not found in {' '.join(words)!r}")


def _ci_lines(command: str) -> list[list[str]]:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [shlex.split(line) for line in lines if command in line and not line.lstrip().startswith("#")]


def test_test_command_is_the_one_ci_runs():
    _, test = _setup_commands()
    pip_args = _after(test, ["pip", "install"])
    ci_pips = [[w for w in _after(line, ["pip", "install"]) if w != "-q"] for line in _ci_lines("pip install")]
    assert ci_pips == [pip_args], f".ci/run installs {ci_pips}, README says {pip_args}"
    pytest_args = _after(test, ["-m", "pytest"])
    ci_pytest = [_after(line, ["-m", "pytest"]) for line in _ci_lines("-m pytest")]
    assert len(ci_pytest) == 1, ci_pytest
    # CI may add reporting flags after the README's own
    assert ci_pytest[0][: len(pytest_args)] == pytest_args, f".ci/run: {ci_pytest[0]}, README: {pytest_args}"


def _install_command() -> list[str]:
    install = [b for b in ALL if b.section == INSTALL_SECTION]
    assert [b.lang for b in install] == ["bash"], "the Install section should hold one bash block"
    return shlex.split(install[0].code)


def _extras() -> dict[str, list[str]]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]


def test_the_readme_opens_with_a_plain_install_before_anything_uses_fastdata():
    install = _install_command()
    assert install[:2] == ["pip", "install"] and "&&" not in install, f"a plain install, nothing run after it: {install}"
    first = ALL[0]
    assert first.section == INSTALL_SECTION, f"README.md:{first.line} ({first.section}) comes before the install"
    uses = [b for b in ALL if re.search(r"(^|\s)(fastdata|python -m fastdata)\s|import fastdata|from fastdata", b.code)
            and b.section not in (INSTALL_SECTION, SETUP_SECTION)]
    assert uses and min(b.line for b in uses) > first.line
    headings = [line[3:] for line in TEXT.splitlines() if line.startswith("## ")]
    assert headings[:2] == [INSTALL_SECTION, "Quick start"], headings[:3]


def test_main_job_installs_extras_that_exist_with_the_same_torch_pin():
    main, test = _setup_commands()
    install = _install_command()
    extras = _extras()
    for command in (main, test, install):
        spec = next(w for w in _after(command, ["pip", "install"]) if w.startswith(".["))
        missing = set(spec[2:-1].split(",")) - set(extras)
        assert not missing, f"README installs {spec}; pyproject.toml has no extra {missing}"
    pins = [[w for w in _after(c, ["pip", "install"]) if w.startswith("torch")] for c in (main, test, install)]
    assert pins[0] == pins[1] == pins[2] and len(pins[0]) == 1, pins
    # the same pin as the text that explains it
    assert f"`{pins[0][0]}`" in TEXT, f"the README should explain the {pins[0][0]} pin"
    assert main[-2:] == ["fastdata", "bench"], f"the main job should end by running the benchmark: {main}"


def test_cuda_marker_skips_only_its_line():
    code = "import torch\nfor i in range(2):\n    x = torch.ones(1).cuda()  " + NEEDS_CUDA + "\n    y = i\n"
    namespace: dict = {}
    exec(without_cuda_lines(code, cuda=False), namespace)
    assert namespace["y"] == 1 and "x" not in namespace
    assert without_cuda_lines(code, cuda=True) == code
    assert without_cuda_lines("nvidia-smi  " + NEEDS_CUDA + "\necho ok\n", cuda=False, shell=True).endswith("echo ok\n")


def test_shell_lines_marked_per_machine_run_once_per_rank(tmp_path):
    script = shell_script("echo $RANK >> ranks.txt   # on each of 3 machines\necho done >> ranks.txt\n")
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True)
    assert (tmp_path / "ranks.txt").read_text().split() == ["0", "1", "2", "done"]
    failing = shell_script("false\necho not reached > out.txt\n")
    assert subprocess.run(["bash", "-c", failing], cwd=tmp_path).returncode != 0
    assert not (tmp_path / "out.txt").exists()


def test_the_extras_table_names_what_each_extra_installs():
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z]+)` \|.*$", TEXT, re.M)}
    for extra, requirements in _extras().items():
        row = rows.get(extra) or next((r for r in rows.values() if f"`{extra}`" in r), None)
        assert row is not None, f"README's extras table has no row for {extra!r}"
        for requirement in requirements:
            name = re.split(r"[<>=;\[ ]", requirement)[0]
            if name == "fastdata":  # another extra: named as such
                for other in requirement[requirement.index("[") + 1 : requirement.index("]")].split(","):
                    assert f"`{other}`" in row, f"the {extra!r} row should say it includes {other!r}: {row}"
            else:
                assert name.lower() in row.lower(), f"the {extra!r} row does not name {name!r}: {row}"
