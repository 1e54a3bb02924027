"""The conversion step ``fastdata bench`` times and caches, handed to the library's harness.

It lives here because the library (``fastdata.bench``) never imports the converters.
"""

from __future__ import annotations

import io

from fastdata.errors import FastDataError

from .convert import ConvertRequest, convert
from .pack import RunOptions
from .plan import PlanOptions


def bench_convert(src: str, out: str, fmt: str, workers: int, resize: int | None = None) -> None:
    """Convert ImageFolder ``src`` into ``out`` quietly (pass-through unless ``resize``)."""
    req = ConvertRequest(
        out=out,
        options=PlanOptions(format=fmt, resize=resize),
        run=RunOptions(workers=workers),
        src=src,
        allow_skips=True,
        overwrite=True,
        quiet=True,
    )
    sink = io.StringIO()
    if convert(req, stdout=sink, stderr=sink) != 0:
        raise FastDataError(f"converting {src} to {fmt} failed:\n{sink.getvalue()[-2000:]}")
