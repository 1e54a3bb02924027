"""Why the compiled crop decoder did not import, said so that the fix follows.

The usual wrong answer is "no compiler": from a checkout's root, ``import
fastdata`` finds the source tree (the current directory comes first on
``sys.path``), which has no built extension unless it was built in place,
even though the installed copy in site-packages has one. And pip hides the
build's output, so a failed build is only noticed here: the first sample
that takes the pure-Python path logs one line (once per process tree).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES, PathFinder
from pathlib import Path

NAME = "_cropdecode"
PACKAGE_DIR = Path(__file__).resolve().parent  # fastdata/decode
NOTED_ENV = "_FASTDATA_PURE_PATH_NOTED"  # inherited by worker processes, so they stay quiet

HEADERS = (
    "install the libjpeg headers and a C compiler (Debian/Ubuntu: apt-get install libjpeg-dev; "
    "Fedora: dnf install libjpeg-turbo-devel; macOS: brew install jpeg-turbo)"
)
INSTALL_HINT = (
    f"{HEADERS}, then reinstall fastdata (pip install --force-reinstall --no-deps fastdata, or pip install -e . "
    "in a checkout)"
)
IN_PLACE = "pip install -e . (or python setup.py build_ext --inplace) in the checkout builds it there"

_log = logging.getLogger("fastdata.decode")
_noted = False


def built_here(directory: Path = PACKAGE_DIR) -> bool:
    """Whether ``directory`` holds an extension file this Python can load."""
    return any((directory / f"{NAME}{suffix}").is_file() for suffix in EXTENSION_SUFFIXES)


def source_checkout(directory: Path = PACKAGE_DIR) -> Path | None:
    """The checkout root when ``directory`` (``fastdata/decode``) is in a source
    tree (``setup.py`` and the C sources beside it), else None."""
    root = directory.parents[1]
    if (root / "setup.py").is_file() and (directory / "_native").is_dir():
        return root
    return None


def installed_elsewhere(directory: Path = PACKAGE_DIR, path: list[str] | None = None) -> Path | None:
    """Another importable ``fastdata/decode`` with a built extension: the
    installed copy that the source tree at ``directory`` shadows.

    Asks every import finder (site-packages through ``sys.path`` without the
    shadowing entry, an editable install through its own finder); with
    ``path``, only the path finder over it.
    """
    own_root = directory.parents[1]
    entries = [e for e in (sys.path if path is None else path) if Path(e or os.getcwd()).resolve() != own_root]
    finders = [PathFinder] if path is not None else list(sys.meta_path)
    for finder in finders:
        try:
            if finder is PathFinder:
                spec = PathFinder.find_spec("fastdata", entries)
            else:
                spec = finder.find_spec("fastdata", None)
        except Exception:  # noqa: BLE001 - a third-party finder's trouble is not ours to report
            continue
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            candidate = Path(location).resolve() / "decode"
            if candidate != directory and built_here(candidate):
                return candidate
    return None


def editable_install_of(checkout: Path, path: list[str] | None = None) -> bool:
    """Whether an installed fastdata (on ``path``, default ``sys.path``) is an
    editable install of ``checkout`` (pip's direct_url.json says so)."""
    import importlib.metadata

    if path is not None:
        found = importlib.metadata.distributions(name="fastdata", path=path)
    else:
        found = importlib.metadata.distributions(name="fastdata")
    for dist in found:  # the checkout's own egg-info has no direct_url
        try:
            info = json.loads(dist.read_text("direct_url.json") or "{}")
        except Exception:  # noqa: BLE001 - unreadable metadata: then we cannot tell
            continue
        if info.get("dir_info", {}).get("editable") and info.get("url") == checkout.as_uri():
            return True
    return False


def _path_front(path: list[str] | None) -> Path | None:
    """The directory ``sys.path`` starts with (the script's, or the current one)."""
    entries = sys.path if path is None else path
    return Path(entries[0] or os.getcwd()).resolve() if entries else None


def import_failure(error: BaseException, directory: Path = PACKAGE_DIR, path: list[str] | None = None) -> tuple[str, str]:
    """``(cause, fix)``: why ``fastdata.decode._cropdecode`` did not import, and what gets it."""
    if not isinstance(error, ModuleNotFoundError):  # the file is there but does not load (e.g. libjpeg.so gone)
        return f"it does not load: {error}", f"reinstall fastdata; if that does not help, {INSTALL_HINT}"
    other = sorted(p.name for p in directory.glob(f"{NAME}*") if p.suffix in (".so", ".pyd"))
    checkout = source_checkout(directory)
    where = f"fastdata is imported from {'the source checkout ' if checkout else ''}{checkout or directory.parent}"
    # only a copy that sys.path lists first because of where Python was started can shadow: an
    # install in site-packages is the one meant, whatever else a later entry holds
    front = checkout is not None or directory.parents[1] == _path_front(path)
    shadowed = installed_elsewhere(directory, path) if front else None
    if shadowed is not None:
        return (
            (
                f"{where}, which shadows the installed fastdata in {shadowed.parents[1]} that has it built "
                "(sys.path lists its directory first: the current one, or the script's)"
            ),
            f"run from another directory{', or ' + IN_PLACE if checkout else ''}",
        )
    if checkout is not None:
        if other:
            return f"{where}, where it was built for another Python ({', '.join(other)})", IN_PLACE
        if editable_install_of(checkout, path):
            return (
                f"{where}, installed editable, whose build did not make it (pip hides why: pip install -v -e . shows it)",
                f"{HEADERS}, then pip install -e . again",
            )
        return f"{where}, where it is not built", f"{IN_PLACE}; if that build prints a hint, {INSTALL_HINT}"
    if other:
        return f"it was built for another Python ({', '.join(other)})", "reinstall fastdata with this Python"
    return "the install found no C compiler or no libjpeg headers", INSTALL_HINT


def note_pure_path(why: Callable[[], str]) -> None:
    """Log, once per process tree, that decode-aware transforms decode in
    Python, and why (pip hides the build's own message)."""
    global _noted
    if _noted or os.environ.get(NOTED_ENV):
        return
    _noted = True
    os.environ[NOTED_ENV] = "1"
    _log.warning(
        "fastdata: decode-aware transforms decode in pure Python, at about half the speed of the "
        "compiled crop decoder, which is missing: "
        "%s", why(),
    )
