"""The ``fastdata`` command: ``convert``, ``merge``, ``inspect``, ``verify``, ``index``, ``bench``, ``doctor``.

Exit codes, the same for every subcommand: 0 success; 1 the command ran and
found problems (files skipped during a conversion, damage found by
``verify``, a damaged or edited manifest included); 2 it could not do its job (bad arguments, missing or unusable
input or output; every :class:`~fastdata.errors.FastDataError` ends here as
one ``fastdata: error: ...`` line, never a traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from fastdata._version import __version__
from fastdata.errors import ConfigError, FastDataError
from fastdata.formats import registry

# Each subcommand imports its modules inside its handler: start-up time is part of
# every command's time, and a conversion must not pay for remote I/O or the bench.
from .exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS  # noqa: F401 - re-exported

_EXIT_HELP = "exit status: 0 ok, 1 problems found (see messages), 2 error, 130 interrupted"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # everything after "bench" belongs to the benchmark's own parser
        from .bench_convert import run_bench

        return run_bench(argv[1:])
    if argv[:1] == ["doctor"]:  # the library's own command (fastdata.doctor), with its own parser
        from fastdata.doctor import main as doctor_main

        return doctor_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        return args.handler(args)
    except FastDataError as exc:
        from .planning.scan import SkippedFile

        if isinstance(exc, SkippedFile):  # only --on-error raise lets one escape
            return _error(f"{exc} (stopped by --on-error raise; the default --on-error skip lists such files and goes on)")
        return _error(str(exc))
    except OSError as exc:  # disk full, permission denied on OUT, ...
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return _error(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        print("fastdata: interrupted", file=sys.stderr)
        if getattr(args, "command", None) == "convert":
            print("fastdata: finished shards are kept; run the same command with --resume to finish", file=sys.stderr)
        return EXIT_INTERRUPTED


def _is_url(name: str) -> bool:
    """Whether ``name`` is a URL; the commands on URLs are in :mod:`.remote_io`."""
    if "://" not in name:  # fastdata.remote (every store's client) is imported only for URLs
        return False
    from fastdata.remote.urls import is_url

    return is_url(name)


def _error(message: str) -> int:
    print(f"fastdata: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastdata",
        description=f"Convert image folders into shards ({', '.join(registry.names())}), and inspect or verify shards.",
        epilog=_EXIT_HELP,
    )
    parser.add_argument("--version", action="version", version=f"fastdata {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_convert(sub)
    _add_merge(sub)
    _add_inspect(sub)
    _add_verify(sub)
    _add_index(sub)
    sub.add_parser("bench", help="run the loading benchmarks (fastdata.bench; `fastdata bench --help`)", add_help=False)
    sub.add_parser("doctor", help="is training waiting for data? the loader, a step and both together "
                   "(`fastdata doctor --help`)", add_help=False)
    return parser


def _size(text: str) -> int:
    from .units import parse_size

    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_convert(sub) -> None:
    p = sub.add_parser(
        "convert",
        help="pack an image folder (or an im2rec .lst) into shards",
        usage="fastdata convert SRC OUT --format FMT [options]\n"
        "       fastdata convert --list FILE [--root DIR] OUT --format FMT [options]",
        description=(
            "Pack SRC (an ImageFolder tree SRC/<class>/**/<image>, labels as torchvision's class_to_idx) "
            "or an im2rec list into OUT: shards plus manifest.json, written last. JPEGs that decode to RGB "
            "or grayscale with no EXIF rotation are kept, rewritten losslessly with restart markers (same "
            "pixels; --passthrough: byte for byte); CMYK JPEGs, other formats, alpha (composited on "
            "white), 16-bit and rotated images become RGB JPEGs once. With "
            "--val-fraction, OUT/train and OUT/val are two dataset directories. Output is identical for "
            "any --workers and after --resume."
        ),
        epilog=_EXIT_HELP + "; 1 here means files were skipped (finish with --resume --allow-skips)",
    )
    p.add_argument("paths", nargs="+", metavar="SRC OUT", help="source folder and output directory (just OUT with --list)")
    p.add_argument("--format", required=True, choices=registry.names(), help="output format (a registered one)")
    p.add_argument("--list", dest="list_file", metavar="FILE", help="im2rec .lst (index, label(s), path) instead of a folder")
    p.add_argument("--root", metavar="DIR", help="folder the --list paths are relative to (default: the list's folder)")
    g = p.add_argument_group("shards and order")
    g.add_argument("--shard-size", type=_size, default=None, metavar="BYTES",
                   help="start a new shard after this many source bytes, e.g. 64M, 1G (default 64M; a shard is one "
                        "worker's task)")
    g.add_argument("--shards", type=int, metavar="N", help="exactly N shards per split instead of --shard-size")
    g.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=None,
                   help="write in a seeded random order (default: on for folders, off for --list)")
    g.add_argument("--seed", type=int, default=0, help="seed for --shuffle and --val-fraction (default 0)")
    g.add_argument("--val-fraction", type=float, default=0.0, metavar="F",
                   help="put round(F * n) images of each class into OUT/val, the rest into OUT/train")
    g = p.add_argument_group("images")
    g.add_argument("--resize", type=int, metavar="S", help="shrink so the shorter side is S pixels (never enlarges)")
    g.add_argument("--quality", type=int, metavar="Q",
                   help="JPEG quality of re-encoded images (default 90); giving it re-encodes every image")
    jpegs = g.add_mutually_exclusive_group()
    jpegs.add_argument("--restart-markers", action="store_true", default=None,
                       help="rewrite stored JPEGs losslessly with restart markers (same pixels, ~3%% larger) so "
                            "that the compiled crop decoder decodes only what a crop covers. The default when the "
                            "compiled decoder is built; giving it makes its absence an error")
    jpegs.add_argument("--passthrough", dest="restart_markers", action="store_false", default=None,
                       help="store JPEGs byte for byte, as im2rec --pass-through does (the default without the "
                            "compiled decoder)")
    g.add_argument("--exts", default=None, metavar="LIST",
                   help="comma-separated extensions to take (default jpg,jpeg,png,ppm,bmp,pgm,tif,tiff,webp: "
                        "torchvision's and fastdata.ImageFolder's; add gif to take GIFs)")
    g.add_argument("--allow-empty-classes", action="store_true", help="keep class folders that hold no images")
    g = p.add_argument_group("errors and restarts")
    g.add_argument("--on-error", choices=("skip", "raise"), default="skip",
                   help="skip unreadable images and list them at the end (default), or stop at the first")
    g.add_argument("--allow-skips", action="store_true", help="finish (exit 0) even if images were skipped")
    g.add_argument("--verify-decode", action="store_true",
                   help="decode every pass-through JPEG (~10x slower); by default only its structure is checked "
                        "(markers, frame header, EOI), so damage inside intact framing surfaces at training time "
                        "as a DecodeError naming the record")
    g.add_argument("--overwrite", action="store_true", help="replace a dataset (or unfinished conversion) fastdata wrote in OUT: deletes only the "
                        "files its manifest or plan lists; other files in OUT (notes, checkpoints) stay. An OUT holding "
                        "only files fastdata did not write is refused: there is nothing to overwrite")
    g.add_argument("--resume", action="store_true", help="finish an interrupted conversion in OUT (same options)")
    g.add_argument("--fsync", action="store_true",
                   help="wait for the disk: fsync every shard before recording it as done and before the manifest, "
                        "so a finished dataset survives a power cut (costs up to the disk's write time; without it "
                        "--resume re-checks each finished shard's CRC32C instead, and readers check every record)")
    g = p.add_argument_group("processes and nodes")
    g.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default: all usable CPUs)")
    g.add_argument("--num-nodes", type=int, default=None, metavar="N", help="machines sharing OUT (default $WORLD_SIZE or 1)")
    g.add_argument("--node-rank", type=int, default=None, metavar="R", help="this machine's rank (default $RANK or 0)")
    g.add_argument("--engine", choices=("ray", "spark"), default=None,
                   help="write the shards as tasks of a Ray cluster (RAY_ADDRESS, else a local one) or of Spark (the "
                        "active session; spark-submit's master), --workers at a time (default: the cluster's CPUs); "
                        "OUT must be a folder every node sees. Same bytes as without it")
    g.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    # Test-only: cut shards into pieces this small (see converters/conversion/tail.py), so tiny test data exercises the joins.
    g.add_argument("--test-min-piece", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_run_convert)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"environment variable {name}={value!r} is not an integer") from None


def _restart_markers(asked: bool | None, quiet: bool) -> bool:
    """Restart markers unless --passthrough, or (with a note) when the compiled
    decoder that writes them is not built and --restart-markers was not given
    (then convert() names the fix)."""
    if asked is not None:
        return asked
    from fastdata.decode import native_available, native_status

    if native_available():
        return True
    if not quiet:
        print(f"fastdata convert: note: JPEGs are stored byte for byte, without restart markers: this install has "
              f"{native_status()}", file=sys.stderr)
    return False


def _run_convert(args: argparse.Namespace) -> int:
    from .conversion.convert import ConvertRequest, convert
    from .conversion.pack import RunOptions
    from .planning.layout import DEFAULT_SHARD_BYTES, PlanOptions
    from .planning.scan import DEFAULT_EXTENSIONS, normalize_extensions
    from .workers.parallel import available_cpus

    workers = args.workers
    if args.engine is not None:
        from .workers.engines import connect

        if (args.num_nodes or 1) > 1:
            raise ConfigError("--engine spreads the shards over the engine's cluster: leave out --num-nodes")
        workers = workers if workers is not None else connect(args.engine)
    if args.list_file is not None:
        if len(args.paths) != 1:
            raise ConfigError("with --list FILE give only OUT (the images are found under --root)")
        src, out = None, args.paths[0]
    else:
        if len(args.paths) != 2:
            raise ConfigError("expected SRC OUT (or --list FILE OUT)")
        if args.root is not None:
            raise ConfigError("--root goes with --list; for a folder source give it as SRC")
        src, out = args.paths
    if args.shards is not None and args.shard_size is not None:
        raise ConfigError("--shards and --shard-size both set the shard boundaries; pass one of them")
    options = PlanOptions(
        format=args.format,
        shuffle=args.shuffle if args.shuffle is not None else src is not None,
        seed=args.seed,
        val_fraction=args.val_fraction,
        shard_bytes=args.shard_size or DEFAULT_SHARD_BYTES,
        shards=args.shards,
        resize=args.resize,
        quality=args.quality if args.quality is not None else 90,
        reencode=args.quality is not None,
        restart_markers=_restart_markers(args.restart_markers, args.quiet),
    )
    request = ConvertRequest(
        out=out,
        options=options,
        run=RunOptions(
            workers=workers if workers is not None else available_cpus(),
            on_error=args.on_error,
            verify_decode=args.verify_decode,
            fsync=args.fsync,
            engine=args.engine,
            **({"min_piece_bytes": args.test_min_piece} if args.test_min_piece is not None else {}),
        ),
        src=src,
        list_file=args.list_file,
        root=args.root,
        extensions=normalize_extensions(args.exts.split(",")) if args.exts is not None else DEFAULT_EXTENSIONS,
        allow_empty_classes=args.allow_empty_classes,
        allow_skips=args.allow_skips,
        overwrite=args.overwrite,
        resume=args.resume,
        num_nodes=args.num_nodes if args.num_nodes is not None else _env_int("WORLD_SIZE", 1),
        node_rank=args.node_rank if args.node_rank is not None else _env_int("RANK", 0),
        quiet=args.quiet,
    )
    if _is_url(out):  # convert locally, then upload, the manifest last
        from .remote_io import convert as convert_remote

        return convert_remote(request, convert)
    return convert(request)


def _add_merge(sub) -> None:
    p = sub.add_parser(
        "merge",
        help="write the manifest of a multi-node conversion once every node is done",
        description="Check that every planned shard in OUT is finished and write the manifest(s). "
        "The last node to finish does this by itself; use merge when it did not (e.g. it was killed). "
        "An OUT that is already finished is success (exit 0).",
        epilog=_EXIT_HELP,
    )
    p.add_argument("out", metavar="OUT")
    p.add_argument("--allow-skips", action="store_true", help="finish even if images were skipped")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary")
    p.add_argument("--fsync", action="store_true", help="fsync the shards and wait for the disk before the manifest")
    p.set_defaults(handler=_run_merge)


def _run_merge(args: argparse.Namespace) -> int:
    from .conversion.convert import merge

    return merge(args.out, allow_skips=args.allow_skips, quiet=args.quiet, fsync=args.fsync)


def _add_inspect(sub) -> None:
    p = sub.add_parser(
        "inspect",
        help="show what a dataset directory or a shard (fastdata's or another tool's) holds",
        description="Print the format, record count, classes and a few records (keys, labels, sizes, image "
        "format) of PATH: a fastdata dataset directory, or one shard of a registered format, fastdata's or "
        "written by another tool (MXNet, TensorFlow, Caffe...).",
        epilog=_EXIT_HELP,
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--records", type=int, default=5, metavar="N", help="how many records to show (default 5)")
    p.set_defaults(handler=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    if _is_url(args.path):
        from .remote_io import inspect

        return inspect(args.path, as_json=args.json, records=args.records)
    from .tools.inspection import run

    return run(args.path, as_json=args.json, records=args.records)


def _add_verify(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="read every record and check framing, CRCs, checksums and counts",
        description="Read every record of PATH (dataset directory, shard or foreign file), checking framing, "
        "CRCs, each record's checksum, the manifest's digests and record counts, labels against the class list "
        "and, with --decode, that "
        "every image decodes. Prints each problem with its file and record; exit 0 only if clean, 1 when anything "
        "is damaged (a shard, an index, the manifest itself), 2 when PATH cannot be verified (missing, of no "
        "known format, an unfinished conversion).",
        epilog=_EXIT_HELP,
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument("--decode", action="store_true", help="also decode every image")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that decode under --decode (default: all usable CPUs)")
    p.add_argument("--quiet", "-q", action="store_true", help="print problems only (no progress bar, no summary)")
    p.set_defaults(handler=_run_verify)


def _run_verify(args: argparse.Namespace) -> int:
    from .tools.verify.command import run
    from .workers.parallel import available_cpus

    workers = args.workers if args.workers is not None else available_cpus()
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if _is_url(args.path):
        from .remote_io import verify

        return verify(args.path, decode=args.decode, quiet=args.quiet, workers=workers)
    return run(args.path, decode=args.decode, quiet=args.quiet, workers=workers)


def _add_index(sub) -> None:
    p = sub.add_parser(
        "index",
        help="build the index of shards written elsewhere (for formats that have index files)",
        description="Write the index file of each FILE where its format has one, as that format's tools "
        "expect it (e.g. x.rec -> x.idx, MXNet's key<TAB>offset; x.tfrecord -> x.tfrecord.idx, the "
        "'offset length' lines DALI and tfrecord2idx use). The format is read from the file's first bytes "
        "before its name.",
        epilog=_EXIT_HELP,
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--force", action="store_true", help="replace an existing index")
    p.add_argument("--checksums", action="store_true",
                   help="write FILE.crc instead: a CRC32C per record, so reads and verify find damaged payloads "
                   "(RecordIO, LMDB)")
    p.set_defaults(handler=_run_index)


def _run_index(args: argparse.Namespace) -> int:
    if any(_is_url(f) for f in args.files):  # each file built where it is, the URLs' indexes uploaded
        from .remote_io import index

        return index(args.files, force=args.force)
    from .tools.indexing import run

    return run(args.files, force=args.force, sums=args.checksums)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
