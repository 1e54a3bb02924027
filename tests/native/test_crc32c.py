"""The compiled CRC-32C (fastdata.formats._speedups.crc32c, SSE4.2) against the
crc32c package: the same value for every length, alignment, buffer type and
starting value, across the three-lane block boundaries; it lets other threads
run on long buffers as the package does; and choosing it keeps the package
(and importlib.metadata) out of a converter's start-up. fastdata.formats.crc's
fallback to the package is checked in a process where the extension is
hidden."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time

import pytest
from crc32c import crc32c as package

from fastdata.formats import crc, speedups

pytestmark = pytest.mark.skipif(
    crc.hardware is None, reason=f"no compiled hardware CRC-32C here: {crc.describe()}"
)

# crc32c_hw.c's lane lengths: a block is three lanes. Keep in step with the C.
LONG_BLOCK = 3 * 8192
SHORT_BLOCK = 3 * 256


def _compiled(data, value: int = 0) -> int:
    return speedups._compiled.crc32c(data, value)


def _views(rng: random.Random, size: int):
    """The same random bytes as bytes, bytearray, and memoryview slices at each offset 0..7 of a larger buffer."""
    data = rng.randbytes(size)
    yield data
    yield bytearray(data)
    for offset in range(8):
        backing = bytearray(rng.randbytes(offset)) + data + bytearray(rng.randbytes(3))
        yield memoryview(backing)[offset : offset + size]


def test_the_chosen_function_is_the_compiled_one():
    assert crc.crc32c is speedups._compiled.crc32c
    assert "instruction" in crc.describe() and "CRC32C: " in speedups.status()


def test_every_short_length_at_every_alignment():
    rng = random.Random(1)
    for size in range(301):
        value = rng.getrandbits(32)
        for view in _views(rng, size):
            assert _compiled(view) == package(view), (size, type(view))
            assert _compiled(view, value) == package(view, value), (size, value)


def test_lengths_around_the_block_boundaries():
    """Alignment bytes come off first, so each block boundary is crossed at
    every length from k*BLOCK - 8 to k*BLOCK + 8 at some offset."""
    rng = random.Random(2)
    sizes = {k * block + d for block in (SHORT_BLOCK, LONG_BLOCK) for k in (1, 2, 3) for d in range(-9, 10)}
    sizes |= {LONG_BLOCK + SHORT_BLOCK + d for d in range(-9, 10)}  # one of each, then the 8-byte tail
    for size in sorted(sizes):
        for view in _views(rng, size):
            value = rng.getrandbits(32)
            assert _compiled(view, value) == package(view, value), (size, value)


def test_random_lengths_up_to_a_megabyte():
    rng = random.Random(3)
    sizes = [rng.randrange(300, 1 << 20) for _ in range(60)] + [111_000, (1 << 20) - 1, 1 << 20]
    for size in sizes:
        data = rng.randbytes(size + 7)
        offset = rng.randrange(8)
        view = memoryview(data)[offset : offset + size]
        value = rng.getrandbits(32)
        assert _compiled(view, value) == package(view, value), (size, offset)


def test_chaining_equals_the_crc_of_the_concatenation():
    rng = random.Random(4)
    for _ in range(200):
        a, b = rng.randbytes(rng.randrange(0, 70_000)), rng.randbytes(rng.randrange(0, 70_000))
        assert _compiled(b, _compiled(a)) == _compiled(a + b) == package(a + b)


def test_known_values():
    assert _compiled(b"") == 0
    assert _compiled(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert _compiled(bytes(32)) == 0x8A9136AA  # RFC 3720 (iSCSI) B.4: 32 bytes of zeros
    assert _compiled(b"\xff" * 32) == 0x62A8AB43  # and of ones


def test_value_and_argument_errors_as_the_package_has_them():
    for value in (-1, 2**32, 2**32 + 5, 2**40, True):  # the package takes value modulo 2**32
        assert _compiled(b"abc", value) == package(b"abc", value), value
    for args in (("abc",), (memoryview(b"abcdef")[::2],), (b"abc", 1.0), (b"abc", "1")):
        with pytest.raises(Exception) as ours:
            _compiled(*args)
        with pytest.raises(Exception) as theirs:
            package(*args)
        assert type(ours.value) is type(theirs.value), args
    with pytest.raises(TypeError):
        speedups._compiled.crc32c()
    with pytest.raises(TypeError):
        speedups._compiled.crc32c(b"a", 0, 0)


def _turns_inside(fn, data) -> int:
    """How many turns of a loop this thread ran while another thread was inside fn(data).

    With a switch interval far longer than the call, the GIL changes hands
    only where a thread gives it up: a function that holds it leaves no turn
    timestamped between entering and leaving it."""
    inside: list[float] = []

    def work():
        inside.append(time.perf_counter())
        fn(data)
        inside.append(time.perf_counter())

    interval = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        turns: list[float] = []
        thread = threading.Thread(target=work)
        thread.start()
        while thread.is_alive():
            turns.append(time.perf_counter())
            time.sleep(0)  # gives the GIL back, so the worker can finish
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    return sum(inside[0] < t < inside[1] for t in turns)


def test_long_buffers_let_other_threads_run_as_the_package_does():
    """DataLoader threads checksum records while others decode: a CRC that
    held the GIL over a 256 MiB buffer (~10 ms) would leave this loop no turn."""
    data = bytes(256 << 20)
    assert _turns_inside(package, data) >= 10  # the reference behaviour
    assert _turns_inside(_compiled, data) >= 10
    assert _turns_inside(lambda d: d.count(b"\x01"), data[: 64 << 20]) == 0  # bytes methods keep the GIL: the check can tell


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_converter_starts_without_the_package_or_importlib_metadata():
    bare = _run("import sys, json; print(json.dumps(sorted(sys.modules)))")
    loaded = set(_run(
        "import sys, json\n"
        "import fastdata.converters.conversion.convert, fastdata.converters.cli\n"
        "from fastdata.formats import checksums, registry\n"
        "from fastdata.formats.recordio import writer as rw\n"
        "from fastdata.formats.tfrecord import writer as tw\n"
        "checksums.digest_of(b'x')\n"
        "print(json.dumps(sorted(sys.modules)))"
    ))
    assert "crc32c" not in loaded
    if "importlib.metadata" in bare:
        pytest.skip("this interpreter imports importlib.metadata at start-up (a .pth file or sitecustomize)")
    assert "importlib.metadata" not in loaded


_FALLBACK = """
import json, sys
sys.modules["fastdata.formats._speedups"] = None  # as in an install built without a compiler
from fastdata.formats import checksums, crc, speedups
from fastdata.formats.tfrecord.framing import frame
before = "crc32c" in sys.modules
first = crc.crc32c
digest = checksums.digest_of(bytes(range(256)) * 1000)
print(json.dumps({
    "hardware": crc.hardware, "before": before, "after": "crc32c" in sys.modules,
    "first_is_portable": first is crc.portable, "rebound": crc.crc32c is sys.modules["crc32c"].crc32c,
    "digest": digest, "frame": frame(b"fastdata").hex(), "status": speedups.status(),
}))
"""


def test_without_the_extension_the_package_is_imported_on_first_use():
    from fastdata.formats import checksums
    from fastdata.formats.tfrecord.framing import frame

    got = _run(_FALLBACK)
    assert got["hardware"] is None and got["first_is_portable"]
    assert not got["before"] and got["after"] and got["rebound"]
    assert got["digest"] == checksums.digest_of(bytes(range(256)) * 1000)
    assert got["frame"] == frame(b"fastdata").hex()
    assert got["status"].endswith("CRC32C: crc32c package (compiled helpers not built)")


def test_portable_is_the_package():
    rng = random.Random(5)
    for size in (0, 1, 7, 300, 70_000):
        data, value = rng.randbytes(size), rng.getrandbits(32)
        assert crc.portable(data, value) == package(data, value) == crc.crc32c(data, value)
