"""Finding the images to convert: an ImageFolder tree or an im2rec ``.lst`` file.

The folder rules follow torchvision's ``ImageFolder`` so labels agree with
``class_to_idx``: classes are the sorted names of SRC's subdirectories
(symlinks followed), files are taken from ``sorted(os.walk(class_dir,
followlinks=True))`` then ``sorted(filenames)``, extensions compared in lower
case. Two deliberate differences, both reported: hidden directories are not
classes (torchvision would make ``.ipynb_checkpoints`` class 0), and
directory symlink loops are cut instead of recursing forever.

Files are sorted into three bins: ``items`` to convert, ``ignored`` (hidden
files, other extensions: by rule, harmless) and ``skipped`` (files that look
like images but cannot be read: broken symlinks, empty files; these make the
conversion exit non-zero unless ``--allow-skips``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import operator
import os
import stat
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from fastdata.errors import ConfigError, FastDataError
from fastdata.image_files import IMG_EXTENSIONS

#: The files fastdata.ImageFolder takes (torchvision's IMG_EXTENSIONS; see
#: fastdata.image_files for why GIF needs ``--exts``), so both count the same samples.
DEFAULT_EXTENSIONS = IMG_EXTENSIONS

Label = int | tuple[float, ...]


class SourceItem(NamedTuple):  # a tuple: made twice as fast as a frozen dataclass, and scans make millions
    """One image file to convert.

    Attributes:
        path: the file's path (SRC joined with ``rel``).
        rel: path relative to the source root, ``/``-separated (stored as the filename).
        label: class index, or a label vector for multi-label ``.lst`` input.
        size: file size in bytes at scan time (plans shard boundaries).
    """

    path: str
    rel: str
    label: Label
    size: int


# An item's columns read in C, for the loops that run once per image (Python 3.11 does not
# specialise a NamedTuple's attribute reads, as it does a slots member's).
ITEM_REL = operator.itemgetter(SourceItem._fields.index("rel"))
ITEM_SIZE = operator.itemgetter(SourceItem._fields.index("size"))


@dataclasses.dataclass
class ScanResult:
    """What a scan found. ``skipped`` and ``ignored`` hold ``(path, reason)`` pairs."""

    root: str
    classes: list[str]
    items: list[SourceItem]
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    ignored: list[tuple[str, str]] = dataclasses.field(default_factory=list)


class SkippedFile(FastDataError):
    """A source file that cannot be converted; the message names it and why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")

    def __reduce__(self):  # survive the trip back from a worker process
        return (SkippedFile, (self.path, self.reason))


@contextlib.contextmanager
def without_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a scan or a plan makes its items.

    They are millions of small objects that live as long as the conversion and
    hold no cycles, and the collector would traverse them all again each time
    the heap grows by a quarter: about 1 of the scan's 6 µs per file and half
    of reading a plan, on 100,000 files (benchmarks/results/main_process_cost-2026-11-25.json).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def normalize_extensions(exts: Iterable[str]) -> tuple[str, ...]:
    """``["JPG", ".png"]`` -> ``(".jpg", ".png")``; raises ConfigError when empty."""
    out = []
    for ext in exts:
        ext = ext.strip().lower()
        if not ext:
            continue
        out.append(ext if ext.startswith(".") else "." + ext)
    if not out:
        raise ConfigError("--exts is empty; give extensions like jpg,jpeg,png")
    return tuple(dict.fromkeys(out))


def scan_folder(
    root: str | os.PathLike[str],
    *,
    extensions: Sequence[str] = DEFAULT_EXTENSIONS,
    allow_empty_classes: bool = False,
    workers: int = 1,
) -> ScanResult:
    """Scan an ImageFolder tree ``root/<class>/**/<image>``.

    ``workers`` > 1: a large folder's files are stat'ed by that many forked
    processes (see :func:`_sizes`); the result is the same.

    Raises:
        ConfigError: ``root`` is missing or not a directory, holds no class
            folders, no images at all, or a class folder with no images
            (unless ``allow_empty_classes``; the class then keeps its label).
    """
    root = os.fspath(root)
    extensions = normalize_extensions(extensions)
    _check_source_dir(root)
    result = ScanResult(root=root, classes=[], items=[])
    _find_classes(root, result)
    empty = []
    with without_gc():
        listed = [_list_class(os.path.join(root, name), extensions) for name in result.classes]
        sizes = iter(_sizes([d for c in listed for d in c.dirs], workers))
        for label, (name, found) in enumerate(zip(result.classes, listed)):
            result.ignored += found.ignored
            result.skipped += found.errors
            _add_items(found.dirs, [next(sizes) for _ in found.dirs], label, result)
            if not found.dirs or not any(names for _, names in found.dirs):
                empty.append(name)
    if not result.items and not result.skipped:
        raise ConfigError(
            f"{root}: found no images with extensions {', '.join(extensions)} in any class folder "
            f"({', '.join(result.classes[:5])}{', ...' if len(result.classes) > 5 else ''}); "
            "pick other extensions with --exts"
        )
    if empty and not allow_empty_classes:
        shown = ", ".join(empty[:10]) + (f" and {len(empty) - 10} more" if len(empty) > 10 else "")
        raise ConfigError(
            f"{root}: class folder(s) with no images ({', '.join(extensions)}): {shown}; remove them, "
            "change --exts, or pass --allow-empty-classes to keep their labels with no samples"
        )
    return result


def _find_classes(root: str, result: ScanResult) -> None:
    """SRC's own entries: its non-hidden subdirectories become ``result.classes``
    (sorted), everything else goes to ``result.ignored`` with the reason.

    Raises:
        ConfigError: ``root`` holds no class folder.
    """
    with os.scandir(root) as entries:
        listing = sorted(entries, key=lambda e: e.name)
    for entry in listing:
        full = os.path.join(root, entry.name)
        if entry.is_dir():
            if entry.name.startswith("."):
                result.ignored.append((full, "hidden directory (not a class)"))
            else:
                result.classes.append(entry.name)
        elif entry.name.startswith("."):
            result.ignored.append((full, "hidden file"))
        else:
            result.ignored.append((full, "file directly under SRC (not inside a class folder)"))
    if not result.classes:
        raise ConfigError(
            f"{root}: no class folders found; an ImageFolder source looks like SRC/<class>/<image> "
            "(for custom labels use --list FILE --root DIR)"
        )


def _check_source_dir(root: str) -> None:
    if not os.path.exists(root):
        raise ConfigError(f"{root}: source folder does not exist")
    if not os.path.isdir(root):
        hint = " (for an im2rec list use --list FILE --root DIR)" if root.endswith(".lst") else ""
        raise ConfigError(f"{root}: source is not a directory{hint}")


@dataclasses.dataclass
class _Listed:
    """A class folder's image files by folder, ``(dirpath, sorted names)`` in
    ``sorted(os.walk)`` order, with what was ignored and what could not be listed."""

    dirs: list[tuple[str, list[str]]]
    ignored: list[tuple[str, str]]
    errors: list[tuple[str, str]]


def _list_class(class_dir: str, extensions: tuple[str, ...]) -> _Listed:
    listed = _Listed([], [], [])
    walked = []
    for dirpath, dirnames, filenames in os.walk(class_dir, followlinks=True, onerror=_walk_error(listed.errors)):
        real = os.path.realpath(dirpath)
        keep = []
        for d in dirnames:
            full = os.path.join(dirpath, d)
            child = os.path.realpath(full)
            if d.startswith("."):
                listed.ignored.append((full, "hidden directory"))
            elif child == real or real.startswith(child.rstrip(os.sep) + os.sep):
                listed.ignored.append((full, "symlink loop (links back to a parent folder)"))
            else:
                keep.append(d)
        dirnames[:] = keep
        walked.append((dirpath, filenames))
    for dirpath, filenames in sorted(walked):
        prefix = os.path.join(dirpath, "")
        names = []
        for fname in sorted(filenames):
            if fname.startswith("."):
                listed.ignored.append((prefix + fname, "hidden file"))
            elif not fname.lower().endswith(extensions):  # has_image_extension, inline: once per file
                ext = os.path.splitext(fname)[1].lower()
                listed.ignored.append((prefix + fname, f"extension {ext or '(none)'!r} not in --exts"))
            else:
                names.append(fname)
        listed.dirs.append((dirpath, names))
    return listed


def _add_items(dirs: list[tuple[str, list[str]]], sizes: list[array], label: int, result: ScanResult) -> None:
    """The items of a class's files, with their sizes (0: the slow path says why the file is skipped)."""
    root_len = len(result.root.rstrip(os.sep)) + 1
    append, new_item = result.items.append, tuple.__new__
    for (dirpath, names), found in zip(dirs, sizes):
        prefix = os.path.join(dirpath, "")
        rel_prefix = prefix[root_len:].replace(os.sep, "/")
        for fname, size in zip(names, found):
            full = prefix + fname
            if not size:  # cannot be an image: the slow path says why
                size, reason = _stat_file(full)
                if reason is not None:
                    result.skipped.append((full, reason))
                    continue
            append(new_item(SourceItem, (full, rel_prefix + fname, label, size)))


#: Fewer files than this are stat'ed by the scan itself: forking costs more than the stats.
PARALLEL_STAT_FROM = 8192
#: The fewest files a stat task takes; a task is a quarter of a worker's share when that is more
#: (each costs a round trip, and the workers should still finish together).
STAT_TASK = 256
_LISTING: dict[str, list[tuple[str, list[str]]]] = {"dirs": []}  # a stat worker's folders: _install_listing


def _sizes(dirs: list[tuple[str, list[str]]], workers: int) -> list[array]:
    """The size of each file of ``dirs`` (``(dirpath, names)``), 0 where ``stat``
    says it cannot be an image or fails. A ``stat`` is most of a scan's time
    per file (~4 us here, far more on network storage), and the plan needs all
    of them before a shard is written: with ``workers`` > 1 and enough files,
    forked workers that inherit the listing stat it in slices and send back
    only the sizes, 8 bytes a file (sending made items back cost more than the
    stats). Not when another thread runs (forking is then unsafe): the scan
    stats them itself."""
    from ..workers.parallel import start_method

    def alone() -> list[array]:
        return [_stat_sizes(dirpath, names) for dirpath, names in dirs]

    total = sum(len(names) for _, names in dirs)
    if workers <= 1 or total < PARALLEL_STAT_FROM or start_method() != "fork":
        return alone()
    from ..workers.parallel import worker_pool
    from ..workers.pool import WorkerDied

    step = max(STAT_TASK, -(-total // (4 * workers)))
    tasks = [(d, start, min(start + step, len(names))) for d, (_, names) in enumerate(dirs)
             for start in range(0, len(names), step)]
    got: dict[int, bytes] = {}
    try:
        with worker_pool(min(workers, len(tasks)), _install_listing, args=(dirs,)) as pool:
            tokens = [pool.submit(_stat_slice, *task) for task in tasks]
            while len(got) < len(tokens):
                for token, outcome in pool.completed():
                    got[token] = outcome.result()
    except WorkerDied:  # a worker the OS killed: the scan does it itself
        return alone()
    sizes = [array("q") for _ in dirs]
    for (d, _, _), token in zip(tasks, tokens):
        sizes[d].frombytes(got[token])
    return sizes


def _install_listing(channel: object, dirs: list[tuple[str, list[str]]]) -> None:
    _LISTING["dirs"] = dirs


def _stat_slice(d: int, start: int, stop: int) -> bytes:
    """In a stat worker: the sizes of names ``start:stop`` of the inherited listing's folder ``d``."""
    dirpath, names = _LISTING["dirs"][d]
    return _stat_sizes(dirpath, names[start:stop]).tobytes()


def _stat_sizes(dirpath: str, names: list[str]) -> array:
    # stat by name relative to the open folder: no path walk per file (a quarter of the scan)
    sizes = array("q", bytes(8 * len(names)))
    stat_, is_reg = os.stat, stat.S_ISREG
    dir_fd = _open_dir(dirpath)
    prefix = os.path.join(dirpath, "")
    try:
        for i, name in enumerate(names):
            try:
                st = stat_(name, dir_fd=dir_fd) if dir_fd is not None else stat_(prefix + name)
            except OSError:
                continue
            if is_reg(st.st_mode):
                sizes[i] = st.st_size
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    return sizes


def _open_dir(path: str) -> int | None:
    if os.stat not in os.supports_dir_fd:
        return None
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None


def _walk_error(errors: list[tuple[str, str]]):
    def record(exc: OSError) -> None:
        errors.append((exc.filename or "?", f"cannot list directory: {exc.strerror or exc}"))

    return record


def _stat_file(path: str) -> tuple[int, str | None]:
    """``(size, None)``, or ``(0, why)`` when ``stat`` alone shows ``path`` cannot be an image file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if os.path.islink(path):
            return 0, f"broken symlink (target {os.readlink(path)!r} is missing)"
        return 0, f"cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return 0, "not a regular file"
    if st.st_size == 0:
        return 0, "empty file (0 bytes)"
    return st.st_size, None


def scan_list(
    list_file: str | os.PathLike[str],
    root: str | os.PathLike[str],
    entries: Sequence[tuple[int, Sequence[float], str]],
) -> ScanResult:
    """Turn parsed im2rec ``.lst`` entries ``(index, labels, relpath)`` into a scan.

    Scalar integral labels become class indices (classes named ``"0"``,
    ``"1"``, ...); any multi-value or fractional label makes every label a
    float vector, and the class list empty. Order is the list's order.

    Raises:
        ConfigError: the list is empty, ``root`` is missing, or a label is
            negative.
    """
    list_file, root = os.fspath(list_file), os.fspath(root)
    _check_source_dir(root)
    if not entries:
        raise ConfigError(f"{list_file}: the list has no entries")
    scalar = all(len(lab) == 1 and math.isfinite(lab[0]) and float(lab[0]).is_integer() for _, lab, _ in entries)
    result = ScanResult(root=root, classes=[], items=[])
    if scalar:
        labels = [int(lab[0]) for _, lab, _ in entries]
        if min(labels) < 0:
            bad = next(e for e in entries if e[1][0] < 0)
            raise ConfigError(f"{list_file}: negative class label {bad[1][0]} for {bad[2]!r}; labels must be >= 0")
        result.classes = [str(i) for i in range(max(labels) + 1)]
    for pos, (_, lab, rel) in enumerate(entries):
        full = os.path.join(root, *Path(rel).parts)
        label: Label = labels[pos] if scalar else tuple(float(v) for v in lab)
        size, reason = _stat_file(full)
        if reason is not None:
            result.skipped.append((full, reason))
            continue
        result.items.append(SourceItem(full, Path(rel).as_posix(), label, size))
    return result
