"""The "convert" group: conversion rates beyond start-up, the plain im2rec
loop beside ``fastdata convert`` (see :data:`~.settings.GROUP_NOTES`)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from . import plain_recordio
from .harness import Measured, Variant
from .settings import CONVERT_TINY, FORMATS, Convert, Settings


class ConvertTiming(TypedDict):
    """The :class:`Variant` fields of a conversion row."""

    run: Callable[[], Measured]
    expect: float


@dataclasses.dataclass(frozen=True)
class _Sources:
    """What every conversion row converts: the big and tiny folders, their JPEGs, and where outputs go."""

    big: Path
    tiny: Path
    big_files: list[str]
    tiny_files: list[str]
    scratch: Path

    @property
    def counted(self) -> int:
        """The files a pair of runs converts beyond start-up."""
        return len(self.big_files) - len(self.tiny_files)


def conversions(s: Settings, convert: Convert) -> list[Variant]:
    """Conversion rates beyond start-up (see :data:`GROUP_NOTES`): the plain loop
    and ``fastdata convert --passthrough`` do the same work (each JPEG's bytes as
    they are); the default conversion, where the compiled decoder makes it rewrite
    JPEGs with restart markers, does more, and its row says so."""
    from ..decode.native import native_available

    big, tiny = conversion_sources(s.src, Path(s.scratch) / "convert-src", s.convert_images)
    src = _Sources(big, tiny, _jpegs(big), _jpegs(tiny), Path(s.scratch) / "convert")
    s.converted_files = len(src.big_files)
    if src.counted <= 0:
        return []
    base = "plain Python im2rec --pass-through loop"
    rows = [Variant(base, "convert", _plain(src, s.pass_seconds), note="one process: read, IRHeader, append, .idx",
                    expect=max(s.pass_seconds, len(src.big_files) / 4000) + 0.3)]
    first = FORMATS[0]
    rows.append(Variant(f"fastdata convert {first} --passthrough, 1 worker", "convert",
                        **_converted(src, s, convert, first, 1, False), baseline=base))
    for fmt in FORMATS:
        rows.append(Variant(f"fastdata convert {fmt} --passthrough, {s.workers} workers", "convert",
                            **_converted(src, s, convert, fmt, s.workers, False), baseline=base))
    if native_available():
        rows.append(Variant(f"fastdata convert {first} (default), {s.workers} workers", "convert",
                            **_converted(src, s, convert, first, s.workers, True), baseline=base,
                            note="the default conversion: also rewrites each JPEG losslessly with restart markers"))
    return rows


def _plain(src: _Sources, min_seconds: float) -> Callable[[], Measured]:
    """The plain im2rec loop's timed run."""

    def once(files: list[str], name: str) -> float:
        out = src.scratch / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        pairs = [(f, 0.0) for f in files]
        t0 = time.perf_counter()
        plain_recordio.write(pairs, out / "data.rec", out / "data.idx")
        dt = time.perf_counter() - t0
        shutil.rmtree(out, ignore_errors=True)  # thousands of images' copies: not kept
        return dt

    return lambda: beyond_start_up(lambda: once(src.big_files, "plain"), lambda: once(src.tiny_files, "plain-tiny"),
                                   src.counted, min_seconds)


def _converted(src: _Sources, s: Settings, convert: Convert, fmt: str, workers: int, markers: bool) -> ConvertTiming:
    """``fastdata convert``'s timed run to ``fmt`` with ``workers``, restart markers or passthrough."""

    def once(folder: Path, name: str) -> float:
        out = src.scratch / name
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        convert(str(folder), str(out), fmt, workers, restart_markers=markers)
        dt = time.perf_counter() - t0
        shutil.rmtree(out, ignore_errors=True)
        return dt

    def run() -> Measured:
        tag = f"{fmt}-{workers}-{'rm' if markers else 'pt'}"
        return beyond_start_up(lambda: once(src.big, tag), lambda: once(src.tiny, tag + "-tiny"), src.counted,
                               s.pass_seconds)

    per_image = 1 / 1000 if markers else 1 / 8000
    return {"run": run, "expect": max(s.pass_seconds, len(src.big_files) * per_image / min(workers, 2)) + 0.5}


def beyond_start_up(whole: Callable[[], float], tiny: Callable[[], float], items: int, min_seconds: float) -> Measured:
    """``items`` (the whole run's files less the tiny run's) over the time the whole run takes
    beyond the tiny one's, pairs of runs repeated until they have lasted ``min_seconds``."""
    t0 = time.perf_counter()
    done, spent, misses = 0, 0.0, 0
    while True:
        a, b = whole(), tiny()
        if a > b:
            spent += a - b
            done += items
        else:  # a hiccup in the tiny run: pair again, a few times
            misses += 1
            if misses > 3:
                raise RuntimeError(f"the whole run ({a:.3f} s) took no longer than the tiny one ({b:.3f} s): "
                                   "too few images to time conversion beyond start-up")
        if done and time.perf_counter() - t0 >= min_seconds:
            return Measured(done, spent)


def _jpegs(root: Path) -> list[str]:
    return sorted(str(p) for p in Path(root).rglob("*") if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg"))


def conversion_sources(src: str, where: Path, at_least: int) -> tuple[Path, Path]:
    """Two ImageFolder trees of ``src``'s JPEGs: one of at least ``at_least`` files (``src``
    itself when it has that many, else its files hard-linked over again), one of
    :data:`CONVERT_TINY`. Both are made once (``where`` names them by their size)."""
    files = _jpegs(Path(src))
    if not files:
        raise RuntimeError(f"{src}: no JPEGs to time conversion with")
    copies = -(-at_least // len(files))
    big = Path(src) if copies <= 1 else where / f"x{copies}-{len(files)}"
    tiny = where / f"tiny{CONVERT_TINY}-{len(files)}"
    for root, count, done in ((big, copies, big == Path(src)), (tiny, 0, False)):
        if done or (root / ".complete").exists():
            continue
        shutil.rmtree(root, ignore_errors=True)
        picked = [(f, c) for c in range(count) for f in files] if count else \
            [(f, 0) for f in (files[:: max(1, len(files) // CONVERT_TINY)])[:CONVERT_TINY]]
        for f, c in picked:
            rel = Path(f).relative_to(src)
            target = root / rel.parent / f"{rel.stem}_{c}{rel.suffix}"
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(f, target)
            except OSError:  # another filesystem: a copy
                shutil.copyfile(f, target)
        (root / ".complete").write_text("ok\n")
    return big, tiny
