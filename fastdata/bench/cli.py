"""``fastdata bench [SRC]``: convert once into each format, then time every pipeline in one run."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..decode.native import native_available, native_status
from ..errors import ConfigError
from ..formats import MANIFEST_NAME, Manifest, speedups
from . import report, suite, verdicts
from .default_data import cache_dir, default_dataset
from .harness import run_interleaved
from .progress import Progress, duration, estimate
from .quiet import held_back_warnings
from .targets import decode_aware_row

_DESCRIPTION = [
    (
        "Time fastdata against torchvision's recipe (a PIL stand-in doing the same work, labelled as such, when "
        "torchvision is not installed) and DALI's CPU pipeline (when installed), interleaved in one run, on this "
        "machine."
    ),
    (
        "The default grid (about a minute on 2 cores): training and evaluation; the baseline, then fastdata's "
        "defaults (make_loader, decode-aware transforms) over the image folder and over its RecordIO and TFRecord "
        "conversions, and DALI CPU over RecordIO (training). --full times everything (several minutes): every "
        "format, the same PIL transforms through fastdata, the pytorch/examples recipe, the other kind of workers, "
        "the decode limit, DALI per source and for evaluation, shards stored --resize'd and --passthrough, raw "
        "record reads and conversion speed."
    ),
    (
        "With no SRC it generates a set of photo-like JPEGs once (cached). Results: a table on stdout and "
        "results.json/.txt/.png in --out, with the machine and versions."
    ),
]
"""The help's description, one paragraph an item (filled to 100 columns)."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fastdata bench",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="\n\n".join(textwrap.fill(x, 100) for x in _DESCRIPTION),
    )
    p.add_argument("src", nargs="?", help="an ImageFolder tree (SRC/<class>/<image>) or a converted directory "
                                          "(then only raw reads are timed); default: the generated set")
    p.add_argument("--full", action="store_true",
                   help="time the full grid (every group, format and variant; several minutes) instead of the "
                        "default grid (the comparison above, about a minute)")
    p.add_argument("--out", default="bench-results", help="where results.json/.txt/.png go (default: %(default)s)")
    _add_timing_options(p)
    _add_grid_options(p)
    p.add_argument("--images", type=int, default=240, help="size of the generated default set (default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: tiny set, one round, no warm-up, short passes (seconds; its figures mean nothing)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress or notes on stderr: only the results (stdout) and the files")
    return p


def _add_timing_options(p: argparse.ArgumentParser) -> None:
    """How each variant is timed: workers, batch size, rounds, warm-up, pass length."""
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                   help="DataLoader workers for every pipeline, and DALI's threads (default: min(2, CPUs), "
                        "here %(default)s)")
    p.add_argument("--batch-size", type=int, default=32, help="images per batch in every pipeline (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=3,
                   help="timed rounds per variant; each row shows their median, min and max (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed warm-up rounds before them (one epoch each: page cache, lazy imports; "
                        "default: %(default)s)")
    p.add_argument("--pass-seconds", type=float, default=1.0, metavar="S",
                   help="each timed pass reads whole epochs (reads: whole passes over the records) until it has "
                        "lasted S seconds, so that short passes do not turn scheduling noise into spread "
                        "(default: %(default)s)")
    p.add_argument("--pass-images", type=int, default=0, metavar="N",
                   help="a timed pipeline pass also reads at least N images (default: %(default)s: "
                        "--pass-seconds alone decides)")


def _add_grid_options(p: argparse.ArgumentParser) -> None:
    """Which groups, formats and variants are timed."""
    p.add_argument("--groups", default=None,
                   help="comma list of train,eval,read,convert: which groups to time (default: train,eval; "
                        "with --full all four)")
    p.add_argument("--formats", default=None,
                   help=f"comma list of the formats to convert SRC to and time (of {','.join(suite.FORMATS)}; "
                        f"default: {','.join(suite.DEFAULT_FORMATS)}; with --full all)")
    p.add_argument("--no-dali", action="store_true", help="leave DALI out even when installed")
    p.add_argument("--resized", type=int, default=None, metavar="S",
                   help="also time RecordIO shards converted with --resize S (FFCV's lever: store smaller "
                        "images); 0 leaves them out (default: 0; with --full 256)")
    p.add_argument("--passthrough", action=argparse.BooleanOptionalAction, default=None,
                   help="also time RecordIO shards converted with --passthrough (JPEGs byte for byte, no restart "
                        "markers) beside the default conversion; only where the compiled decoder makes restart "
                        "markers the default (default: off; with --full on)")


def main(argv: Sequence[str] | None = None, *, convert: suite.Convert | None = None) -> int:
    """Run the benchmark; returns the exit status (0, or 130 when interrupted by Ctrl-C)."""
    args = build_parser().parse_args(argv)
    try:
        with _quiet_teardown_after_ctrl_c():
            return _run(args, convert)
    except KeyboardInterrupt:
        # The harness has shut the running variant's workers down on the way out
        # (teardown in a finally); the workers themselves never saw the signal.
        print("fastdata bench: interrupted", file=sys.stderr, flush=True)
        return 130


@contextlib.contextmanager
def _quiet_teardown_after_ctrl_c() -> Iterator[None]:
    """After a Ctrl-C, the DataLoader's dying workers can reset the connection that
    multiprocessing's fd-sharing thread is serving; that thread reports it through
    ``sys.excepthook`` as a traceback below our one line. Once interrupted, such
    connection errors are the interrupt's echo: drop them, report anything else."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = threading.Event()
    previous_hook, previous_handler = sys.excepthook, signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if not (interrupted.is_set() and issubclass(kind, (ConnectionError, EOFError))):
            previous_hook(kind, value, tb)

    sys.excepthook = hook
    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        if not interrupted.is_set():  # else the echo may still come, after we return
            sys.excepthook = previous_hook


def _run(args: argparse.Namespace, convert: suite.Convert | None) -> int:
    full = args.full
    if args.groups is None:
        args.groups = "train,eval,read,convert" if full else "train,eval"
    if args.formats is None:
        args.formats = ",".join(suite.FORMATS if full else suite.DEFAULT_FORMATS)
    if args.resized is None:
        args.resized = 256 if full else 0
    if args.passthrough is None:
        args.passthrough = full
    if args.quick:
        args.images, args.rounds, args.warmup, args.batch_size = min(args.images, 16), 1, 0, 8
        args.pass_images, args.pass_seconds = 0, 0.0
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    grid = "full grid" if full else "default grid (--full: everything)"
    say(f"bench: {grid}; generating data and shards first where not cached")
    src, shards = _source(args, convert, say)
    groups = tuple(g for g in args.groups.split(",") if g)
    if src is None:
        groups = tuple(g for g in groups if g in ("read",)) or ("read",)
        say("bench: SRC is a converted directory: only raw reads are timed (baselines need the image folder)")
    scratch = cache_dir() / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    settings = suite.Settings(src=src or "", shards=shards, workers=args.workers, batch_size=args.batch_size,
                              dali=not args.no_dali, groups=groups, convert=convert, scratch=str(scratch),
                              pass_images=args.pass_images, pass_seconds=args.pass_seconds, full=full,
                              convert_images=160 if args.quick else suite.CONVERT_IMAGES)
    say(f"bench: crop decode: {native_status()}")
    say(f"bench: shard writing: {speedups.status()}")
    missing = suite.missing_peers(settings)
    for peer, what in missing.items():
        say(f"bench: no {peer} rows: {what}")
    variants = suite.build(settings)
    say(estimate_line(variants, args.rounds, args.warmup, full))
    tracker = None if args.quiet else Progress(variants, args.rounds, args.warmup)
    with held_back_warnings() as held:
        results = run_interleaved(variants, rounds=args.rounds, warmup=args.warmup, progress=tracker)
    for line in held.summary():
        say(line)
    judged = verdicts.judge(results, suite.FORMATS, missing, full=full)
    notes = group_notes(results, settings)
    meta = {"src": src, "shards": shards, "grid": "full" if full else "default", "groups": list(groups),
            "workers": args.workers, "batch_size": args.batch_size,
            "rounds": args.rounds, "warmup": args.warmup, "pass_seconds": args.pass_seconds,
            "pass_images": args.pass_images, "quick": args.quick,
            "held_back_warnings": dict(held.counts), "group_notes": notes,
            "judged_configuration": judged_configuration(results), "missing_peers": missing,
            "targets": [v.to_json() for v in judged]}
    text = "\n".join([*header(results, missing), "", report.table(results, notes), "",
                      *report.headline(results, missing, full=full)])
    paths = report.write_all(results, meta, args.out, text=text)
    print(text)
    print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    return 0


def estimate_line(variants: Sequence[Any], rounds: int, warmup: int, full: bool) -> str:
    """The one line said before timing: how many variants, how many passes, roughly how long."""
    groups = ", ".join(f"{g} {n}" for g, n in _count_by_group(variants).items())
    passes = f"{rounds} round{'s' if rounds != 1 else ''}" + (f" + {warmup} warm-up" if warmup else "")
    other = "" if full else "; --full times everything, several minutes"
    return (f"bench: timing {len(variants)} variants ({groups}) x {passes}: roughly "
            f"{duration(estimate(variants, rounds, warmup))}{other}")


def _count_by_group(variants: Sequence[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in variants:
        out[v.group] = out.get(v.group, 0) + 1
    return out


def group_notes(results: list, settings: suite.Settings) -> dict[str, str]:
    """What each timed group's figures are, where the table alone does not say (the chart's panels say it too)."""
    timed = {r.group for r in results}
    out = {}
    for group, text in suite.GROUP_NOTES.items():
        if group in timed:
            out[group] = text.format(n=settings.converted_files, k=suite.CONVERT_TINY)
    return out


def judged_configuration(results: list) -> str:
    """The row the targets are judged on and how it was configured."""
    source = verdicts.judged_source(results, suite.FORMATS)
    row = next((r for r in results if r.group == "train" and r.name == decode_aware_row(source)), None)
    how = row.note if row is not None and row.note else "the defaults"
    where = "shards from the default conversion" if source != "ImageFolder" else "the image folder itself"
    return f"{decode_aware_row(source)} ({how}, {where})"


def header(results: list, missing: dict[str, str] | None = None) -> list[str]:
    """What a reader needs before the figures: the decode path, the baseline,
    the configuration the targets are judged on, and the peers not timed."""
    from .baselines import has_torchvision, torchvision_version

    lines = [
        report.machine_line(),
        f"crop decode: {native_status()}",
        f"baseline: {'torchvision ' + torchvision_version() if has_torchvision() else 'PIL stand-in for torchvision (not installed)'}",
        f"targets judged on: {judged_configuration(results)}",
        f"shard writing: {speedups.status()}",
    ]
    lines += [f"not timed: {peer}: {what}" for peer, what in (missing or {}).items()]
    return lines


def _source(args, convert, say) -> tuple[str | None, dict[str, str]]:
    if args.src and (Path(args.src) / MANIFEST_NAME).exists():
        m = Manifest.read(args.src)
        return None, {m.format: args.src}
    if args.src:
        src = Path(args.src)
        if not src.is_dir():
            raise ConfigError(f"{src}: not a directory; pass an ImageFolder tree or a converted dataset directory")
    else:
        say(f"bench: generating the default set ({args.images} photo-like JPEGs) in {cache_dir()}")
        src = default_dataset(args.images)
    formats = [f for f in args.formats.split(",") if f]
    if convert is None:
        say("bench: no converter given: shards are not built, only folder pipelines are timed")
        return str(src), {}
    key = _fingerprint(src)
    shards = {}

    def converted(name: str, folder: str, fmt: str, how: str = "", **options) -> None:
        out = cache_dir() / "shards" / key / folder
        if not (out / MANIFEST_NAME).exists():
            say(f"bench: converting {src} to {fmt}{how} (cached in {out})")
            convert(str(src), str(out), fmt, args.workers, **options)
        shards[name] = str(out)

    for fmt in formats:  # the default conversion: restart markers where the compiled decoder is built
        converted(fmt, f"{fmt}-default-v2", fmt)
    if args.resized:
        converted(f"recordio --resize {args.resized}", f"recordio-resize{args.resized}", "recordio",
                  f" with --resize {args.resized}", resize=args.resized)
    if args.passthrough and native_available():
        converted("recordio --passthrough", "recordio-passthrough", "recordio", " with --passthrough",
                  restart_markers=False)
    return str(src), shards


def _fingerprint(root: Path) -> str:
    """Names, sizes and mtimes of the folder's files: a changed folder gets fresh shards."""
    h = hashlib.sha256(str(root.resolve()).encode())
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
