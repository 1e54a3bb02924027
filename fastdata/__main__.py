"""``python -m fastdata ...`` is the ``fastdata`` command (convert, inspect, verify, bench...)."""

from __future__ import annotations

import sys


def _main() -> int:
    try:
        from fastdata.converters.cli import main
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("fastdata.converters"):
            raise
        import fastdata

        # fastdata.converters is the checkout's converters/ only once installed (package-dir)
        print(
            f"fastdata: error: the command line (fastdata.converters) is not importable from {fastdata.__path__[0]}: "
            "a source checkout imported from its root has no fastdata.converters; install it "
            "(pip install -e .) or run from another directory",
            file=sys.stderr,
        )
        return 2
    return main()


if __name__ == "__main__":
    sys.exit(_main())
