"""The one check of the file names a manifest gives, and the one way a name
becomes a path.

A manifest is data from wherever the dataset came from -- a bucket, a web
server, a copied folder -- and whoever can write it can also recompute its
checksum. So every name it holds (shards, indexes, checksum files, the files
of ``extra``, the keys of ``digests``) must be a plain relative name inside
the dataset before anything is read, written or deleted under it:
:func:`check_name` refuses the lexical escapes, and :func:`inside` is the
second line of defence against those a symlink makes, applied where a name
is turned into a path to open, download into or delete.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import ManifestError

# A name is joined onto a local directory and onto a URL: besides the path
# escapes, refuse what a URL would read differently ("%2e%2e" is ".." to a
# server, "?" and "#" end the path) and what a Windows path would (a drive, "\").
_DRIVE = re.compile(r"^[A-Za-z]:")
_URL_SPECIAL = ("%", "?", "#")


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a plain relative file name inside a dataset, or None."""
    if not isinstance(name, str):
        return f"a name must be a string, not {type(name).__name__}"
    if not name:
        return "the name is empty"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it holds a control character (NUL, newline...)"
    if "\\" in name:
        return "it holds a backslash"
    if name.startswith("/") or _DRIVE.match(name):
        return "it is an absolute path"
    special = [c for c in _URL_SPECIAL if c in name]
    if special:
        return f"it holds {special[0]!r}, which a URL reads differently (percent-encoding, a query or a fragment)"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "it has an empty, '.' or '..' component"
    return None


def check_name(name: object, field: str, source: str) -> str:
    """``name`` itself when it is a plain relative name inside the dataset.

    Raises:
        ManifestError: naming ``source`` (the manifest), ``field`` (where in
            it the name stands) and the name.
    """
    problem = name_problem(name)
    if problem is not None:
        raise ManifestError(
            f"{source}: {field} names {name!r}, which is not a file inside the dataset ({problem}); "
            "fastdata reads, writes and deletes only files inside a dataset's directory, so this manifest "
            "is refused as a whole -- do not use a dataset from this source, or re-convert it",
            damaged=True,
        )
    assert isinstance(name, str)  # for the type checker: name_problem refuses anything else
    return name


def inside(directory: str | os.PathLike[str], name: str) -> Path:
    """``directory / name``, once it is certain to resolve inside ``directory``
    (symlinks followed, in ``name`` and in ``directory`` alike).

    Raises:
        ManifestError: ``name`` is not a plain name (see :func:`check_name`),
            or a symlink takes it outside ``directory``.
    """
    check_name(name, "a file name", os.fspath(directory))
    base = os.path.realpath(directory)
    path = Path(directory) / name
    real = os.path.realpath(path)
    if os.path.commonpath([base, real]) != base or real == base:
        raise ManifestError(
            f"{path}: resolves to {real}, outside the dataset directory {base} (a symbolic link leads out of it); "
            "fastdata does not follow links out of a dataset: copy the file into the directory, or remove the link"
        )
    return path


def entry_inside(directory: str | os.PathLike[str], name: str) -> Path:
    """``directory / name`` as a directory entry to delete or replace: its
    parent must resolve inside ``directory``; the entry itself may be a link
    (removing a link removes the link, never what it points at).

    Raises:
        ManifestError: as :func:`inside`, for the entry's parent.
    """
    check_name(name, "a file name", os.fspath(directory))
    parent, _, _ = name.rpartition("/")
    if parent:
        inside(directory, parent)
    return Path(directory) / name
