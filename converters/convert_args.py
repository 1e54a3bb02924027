"""The ``fastdata convert`` command's options: the argument groups and the
:class:`~.conversion.request.ConvertRequest` they make.

The heavy modules (conversion, planning, workers) are imported when a
request is made, so ``fastdata --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from fastdata.errors import ConfigError

if TYPE_CHECKING:
    from .conversion.request import ConvertRequest
    from .planning.layout import PlanOptions


def add_convert_options(p: argparse.ArgumentParser) -> None:
    """The convert command's option groups, after its paths, --format, --list and --root."""
    _add_order(p.add_argument_group("shards and order"))
    _add_images(p.add_argument_group("images"))
    _add_errors(p.add_argument_group("errors and restarts"))
    _add_processes(p.add_argument_group("processes and nodes"))


def convert_request(args: argparse.Namespace) -> ConvertRequest:
    """The conversion the parsed ``args`` ask for.

    Raises:
        ConfigError: paths or options that do not go together, or a bad
            ``$WORLD_SIZE``/``$RANK``.
    """
    from .conversion.pack import RunOptions
    from .conversion.request import ConvertRequest
    from .planning.scan import DEFAULT_EXTENSIONS, normalize_extensions
    from .workers.parallel import available_cpus

    workers = _engine_workers(args)
    src, out = _source_and_out(args)
    if args.shards is not None and args.shard_size is not None:
        raise ConfigError("--shards and --shard-size both set the shard boundaries; pass one of them")
    return ConvertRequest(
        out=out,
        options=_plan_options(args, src),
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


def _engine_workers(args: argparse.Namespace) -> int | None:
    """--workers, or with --engine and no --workers the cluster's CPUs (connecting to it)."""
    workers = args.workers
    if args.engine is not None:
        from .workers.engines import connect

        if (args.num_nodes or 1) > 1:
            raise ConfigError("--engine spreads the shards over the engine's cluster: leave out --num-nodes")
        if args.num_nodes is None and _env_int("WORLD_SIZE", 1) > 1:
            # torchrun (or another launcher) started this command on several nodes: each would convert everything
            raise ConfigError(f"--engine spreads the shards over the engine's cluster, but WORLD_SIZE="
                              f"{os.environ['WORLD_SIZE']} says this is one of several launched copies: run the "
                              "command once (not under torchrun), or unset WORLD_SIZE")
        workers = workers if workers is not None else connect(args.engine)
    return workers


def _source_and_out(args: argparse.Namespace) -> tuple[str | None, str]:
    """``(SRC, OUT)`` from the positional paths; SRC is None with --list."""
    if args.list_file is not None:
        if len(args.paths) != 1:
            raise ConfigError("with --list FILE give only OUT (the images are found under --root)")
        return None, args.paths[0]
    if len(args.paths) != 2:
        raise ConfigError("expected SRC OUT (or --list FILE OUT)")
    if args.root is not None:
        raise ConfigError("--root goes with --list; for a folder source give it as SRC")
    src, out = args.paths
    return src, out


def _plan_options(args: argparse.Namespace, src: str | None) -> PlanOptions:
    """The split, order, shard and image options (shuffled by default for a folder, not for a list)."""
    from .planning.layout import DEFAULT_SHARD_BYTES, PlanOptions

    return PlanOptions(
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


def _size(text: str) -> int:
    from .units import parse_size

    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_order(g: argparse._ArgumentGroup) -> None:
    """Where shards end and in which order the images go."""
    g.add_argument("--shard-size", type=_size, default=None, metavar="BYTES",
                   help="start a new shard after this many source bytes, e.g. 64M, 1G (default 64M; a shard is one "
                        "worker's task)")
    g.add_argument("--shards", type=int, metavar="N", help="exactly N shards per split instead of --shard-size")
    g.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=None,
                   help="write in a seeded random order (default: on for folders, off for --list)")
    g.add_argument("--seed", type=int, default=0, help="seed for --shuffle and --val-fraction (default 0)")
    g.add_argument("--val-fraction", type=float, default=0.0, metavar="F",
                   help="put round(F * n) images of each class into OUT/val, the rest into OUT/train")


def _add_images(g: argparse._ArgumentGroup) -> None:
    """What is stored of each image: its size, quality, restart markers, which files count."""
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


def _add_errors(g: argparse._ArgumentGroup) -> None:
    """What a bad image, an existing OUT or an interrupted run does; whether to wait for the disk."""
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


def _add_processes(g: argparse._ArgumentGroup) -> None:
    """How many processes and machines write, and how loudly."""
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
