"""``fastdata bench``: hands over to the library's harness (``fastdata.bench.cli``)
with the conversion step it times and caches.

It lives here because the library (``fastdata.bench``) never imports the converters.
"""

from __future__ import annotations

import io
import sys

from fastdata.errors import FastDataError

from .exits import EXIT_ERROR, EXIT_INTERRUPTED


def run_bench(argv: list[str]) -> int:
    """``fastdata bench ARGV``; returns the exit status."""
    try:
        from fastdata.bench import cli as module
    except ModuleNotFoundError as exc:
        if exc.name not in ("fastdata.bench", "fastdata.bench.cli"):
            raise
        print(
            "fastdata: error: `fastdata bench` is not available in this installation (fastdata.bench.cli is "
            "missing); the benchmarks live in the source tree's benchmarks/ folder",
            file=sys.stderr,
        )
        return EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C while torch loads (a second or two): one line, like the bench's own
        print("fastdata bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        return int(module.main(argv, convert=bench_convert) or 0)
    except FastDataError as exc:
        print(f"fastdata: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def bench_convert(src: str, out: str, fmt: str, workers: int, resize: int | None = None,
                  restart_markers: bool | None = None) -> None:
    """Convert ImageFolder ``src`` into ``out`` quietly, as ``fastdata convert``
    does by default (restart markers where the compiled decoder is built;
    ``restart_markers=False`` is ``--passthrough``)."""
    # imported here: a bench run may end (or be interrupted) before its first conversion
    from .conversion.convert import ConvertRequest, convert
    from .conversion.pack import RunOptions
    from .planning.layout import PlanOptions

    if restart_markers is None:
        from fastdata.decode import native_available

        restart_markers = native_available()
    req = ConvertRequest(
        out=out,
        options=PlanOptions(format=fmt, resize=resize, restart_markers=restart_markers),
        run=RunOptions(workers=workers),
        src=src,
        allow_skips=True,
        overwrite=True,
        quiet=True,
    )
    sink = io.StringIO()
    if convert(req, stdout=sink, stderr=sink) != 0:
        raise FastDataError(f"converting {src} to {fmt} failed:\n{sink.getvalue()[-2000:]}")
