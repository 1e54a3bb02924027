"""The ``fastdata`` command: ``convert``, ``merge``, ``inspect``, ``verify``, ``index``, ``bench``, ``doctor``.

Exit codes, the same for every subcommand: 0 success; 1 the command ran and
found problems (files skipped during a conversion, damage found by
``verify``, a damaged or edited manifest included); 2 it could not do its job (bad arguments, missing or unusable
input or output; every :class:`~fastdata.errors.FastDataError` ends here as
one ``fastdata: error: ...`` line, never a traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

from fastdata._version import __version__
from fastdata.errors import ConfigError, FastDataError
from fastdata.formats import registry

# Each subcommand imports its modules inside its handler: start-up time is part of
# every command's time, and a conversion must not pay for remote I/O or the bench.
from .convert_args import add_convert_options, convert_request
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


def _subcommand(sub, name: str, handler: Callable[[argparse.Namespace], int], **kwargs: Any) -> argparse.ArgumentParser:
    """A command's parser, run by ``handler``; its help ends with the exit codes unless ``epilog`` says more."""
    kwargs.setdefault("epilog", _EXIT_HELP)
    p = sub.add_parser(name, **kwargs)
    p.set_defaults(handler=handler)
    return p


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


def _add_convert(sub) -> None:
    p = _subcommand(
        sub,
        "convert",
        _run_convert,
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
    add_convert_options(p)


def _run_convert(args: argparse.Namespace) -> int:
    from .conversion.convert import convert

    request = convert_request(args)
    url = request.src if request.src is not None and _is_url(request.src) else None
    if request.run.engine is not None and (url is not None or _is_url(request.out)):  # before any download
        from .workers.engines import several_machines

        if several_machines(request.run.engine):  # the tasks read the bucket and hand their shards back
            request = dataclasses.replace(request, run=dataclasses.replace(request.run, ship=True))
    if url is not None:  # the objects copied here first, or on a cluster listed only
        from fastdata.remote.urls import scrub_url

        from .remote_source import fetch_source, list_source

        if request.run.ship:
            local = list_source(url, quiet=request.quiet)
            run = dataclasses.replace(request.run, source=(str(local), url.rstrip("/")))
            request = dataclasses.replace(request, src=str(local), source_url=scrub_url(url.rstrip("/")), run=run)
        else:
            request = dataclasses.replace(request, src=str(fetch_source(url, quiet=request.quiet)),
                                          source_url=scrub_url(url.rstrip("/")))
    if _is_url(request.out):  # convert locally, then upload, the manifest last
        from .remote_io import convert as convert_remote

        code = convert_remote(request, convert)
    else:
        code = convert(request)
    if url is not None and code == 0:
        from .remote_source import remove_source

        remove_source(url)
    return code


def _add_merge(sub) -> None:
    p = _subcommand(
        sub,
        "merge",
        _run_merge,
        help="write the manifest of a multi-node conversion once every node is done",
        description="Check that every planned shard in OUT is finished and write the manifest(s). "
        "The last node to finish does this by itself; use merge when it did not (e.g. it was killed). "
        "An OUT that is already finished is success (exit 0).",
    )
    p.add_argument("out", metavar="OUT")
    p.add_argument("--allow-skips", action="store_true", help="finish even if images were skipped")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary")
    p.add_argument("--fsync", action="store_true", help="fsync the shards and wait for the disk before the manifest")


def _run_merge(args: argparse.Namespace) -> int:
    from .conversion.convert import merge

    return merge(args.out, allow_skips=args.allow_skips, quiet=args.quiet, fsync=args.fsync)


def _add_inspect(sub) -> None:
    p = _subcommand(
        sub,
        "inspect",
        _run_inspect,
        help="show what a dataset directory or a shard (fastdata's or another tool's) holds",
        description="Print the format, record count, classes and a few records (keys, labels, sizes, image "
        "format) of PATH: a fastdata dataset directory, or one shard of a registered format, fastdata's or "
        "written by another tool (MXNet, TensorFlow, Caffe...).",
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--records", type=int, default=5, metavar="N", help="how many records to show (default 5)")


def _run_inspect(args: argparse.Namespace) -> int:
    if _is_url(args.path):
        from .remote_io import inspect

        return inspect(args.path, as_json=args.json, records=args.records)
    from .tools.inspection import run

    return run(args.path, as_json=args.json, records=args.records)


def _add_verify(sub) -> None:
    p = _subcommand(
        sub,
        "verify",
        _run_verify,
        help="read every record and check framing, CRCs, checksums and counts",
        description="Read every record of PATH (dataset directory, shard or foreign file), checking framing, "
        "CRCs, each record's checksum, the manifest's digests and record counts, labels against the class list "
        "and, with --decode, that "
        "every image decodes. Prints each problem with its file and record; exit 0 only if clean, 1 when anything "
        "is damaged (a shard, an index, the manifest itself), 2 when PATH cannot be verified (missing, of no "
        "known format, an unfinished conversion).",
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument("--decode", action="store_true", help="also decode every image")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that decode under --decode (default: all usable CPUs)")
    p.add_argument("--quiet", "-q", action="store_true", help="print problems only (no progress bar, no summary)")


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
    p = _subcommand(
        sub,
        "index",
        _run_index,
        help="build the index of shards written elsewhere (for formats that have index files)",
        description="Write the index file of each FILE where its format has one, as that format's tools "
        "expect it (e.g. x.rec -> x.idx, MXNet's key<TAB>offset; x.tfrecord -> x.tfrecord.idx, the "
        "'offset length' lines DALI and tfrecord2idx use). The format is read from the file's first bytes "
        "before its name.",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--force", action="store_true", help="replace an existing index")
    p.add_argument("--checksums", action="store_true",
                   help="write FILE.crc instead: a CRC32C per record, so reads and verify find damaged payloads "
                   "(RecordIO, LMDB)")


def _run_index(args: argparse.Namespace) -> int:
    if any(_is_url(f) for f in args.files):  # each file built where it is, the URLs' indexes uploaded
        from .remote_io import index

        return index(args.files, force=args.force)
    from .tools.indexing import run

    return run(args.files, force=args.force, sums=args.checksums)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
