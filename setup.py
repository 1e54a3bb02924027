"""Build the optional compiled extensions.

Everything else is in pyproject.toml. Two extensions, both optional:

- ``fastdata.decode._cropdecode``, the crop decoder: needs a C compiler and
  the libjpeg headers (libjpeg-turbo >= 1.5); without it fastdata decodes
  crops with its pure-Python path (``fastdata.decode.native_status()``).
- ``fastdata.formats._speedups``, the per-record arithmetic of writing shards
  (magic-word search, CRC32C combining): needs only a C compiler; without it
  writing takes the portable path (``fastdata.formats.speedups.status()``).

The install succeeds without either. FASTDATA_NO_NATIVE=1 skips both on purpose.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HINT = (
    "fastdata: the compiled crop decoder was not built ({reason}); installing the pure-Python path. "
    "For the fast path: apt-get install libjpeg-dev (Debian: libjpeg62-turbo-dev; Fedora: libjpeg-turbo-devel; "
    "macOS: brew install jpeg-turbo) and a C compiler, then reinstall fastdata."
)

HINT_SPEEDUPS = (
    "fastdata: the compiled write helpers were not built ({reason}); installing the portable path "
    "(shards are identical, writing costs more CPU). For the fast path: a C compiler, then reinstall fastdata."
)

NATIVE = "fastdata/decode/_native"
SPEEDUPS = "fastdata/formats/_native"
JPEG = "fastdata/jpeg/_native"  # markers.h: the JPEG marker walk both extensions include (header-only, no libjpeg)


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed extension in one line and goes on."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self.failed: list[str] = []

    def run(self) -> None:
        if os.environ.get("FASTDATA_NO_NATIVE", "") not in ("", "0"):
            self._skip(self.extensions, "FASTDATA_NO_NATIVE is set")
            return
        try:
            super().run()
        except Exception as exc:  # no usable compiler at all
            self._skip(self.extensions, _reason(exc))

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # missing jpeglib.h, compile or link error
            self._skip([ext], _reason(exc, ext.libraries))

    def _skip(self, extensions: list[Extension], reason: str) -> None:
        for ext in extensions:
            if ext.name not in self.failed:
                self.failed.append(ext.name)
                hint = HINT_SPEEDUPS if ext.name == "fastdata.formats._speedups" else HINT
                print(hint.format(reason=reason), file=sys.stderr)

    # Editable and in-place installs copy the built files: leave out what failed.
    def copy_extensions_to_source(self) -> None:
        self.extensions = [e for e in self.extensions if e.name not in self.failed]
        super().copy_extensions_to_source()

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        return [out for out in outputs if os.path.exists(out)] if self.failed else outputs

    def get_output_mapping(self) -> dict[str, str]:
        mapping = super().get_output_mapping()
        return {k: v for k, v in mapping.items() if os.path.exists(v)} if self.failed else mapping


def _reason(exc: BaseException, libraries: list[str] | None = ("jpeg",)) -> str:
    kind = type(exc).__name__
    if kind == "CompileError":
        return "compiling failed, the compiler's messages are above" + ("; is jpeglib.h installed?" if libraries else "")
    if kind == "LinkError":
        return f"linking{' with -ljpeg' if libraries else ''} failed"
    text = str(exc).strip().splitlines()
    return f"{kind}: {text[0][:200] if text else 'no message'}"


setup(
    ext_modules=[
        Extension(
            "fastdata.decode._cropdecode",
            sources=[f"{NATIVE}/{name}.c" for name in
                     ("module", "batch", "cropdecode", "resample", "kernels", "segments", "restarts", "resegment", "huffman",
                      "baseline")],
            depends=[f"{NATIVE}/{name}.h" for name in
                     ("batch", "cropdecode", "resample", "kernels", "segments", "restarts", "resegment", "interval",
                      "huffman", "baseline")] + [f"{JPEG}/markers.h"],
            include_dirs=[JPEG],
            libraries=["jpeg"],
            extra_compile_args=["-O3"] if os.name != "nt" else [],
        ),
        Extension(
            "fastdata.formats._speedups",
            sources=[f"{SPEEDUPS}/speedups.c", f"{SPEEDUPS}/jpeg_check.c", f"{SPEEDUPS}/crc32c_hw.c"],
            depends=[f"{SPEEDUPS}/jpeg_check.h", f"{SPEEDUPS}/crc32c_hw.h", f"{JPEG}/markers.h"],
            include_dirs=[JPEG],
            extra_compile_args=["-O3"] if os.name != "nt" else [],
        ),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
