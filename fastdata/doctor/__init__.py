"""``fastdata doctor SRC``: measure on this machine whether training waits for
data, which loading stage is slow, and which lever would help.

``main(argv) -> int`` is the command (``python -m fastdata.doctor SRC ...``);
the measurements are :mod:`.measure`, the step stand-ins :mod:`.steps`, the
picture :mod:`.timeline`. The verdict's rules are shared with
:func:`fastdata.watch` (:mod:`fastdata.loading.verdict`).
"""

from __future__ import annotations

from .cli import main

__all__ = ["main"]
