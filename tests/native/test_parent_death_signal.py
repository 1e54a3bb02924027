"""_speedups.set_parent_death_signal (prctl PR_SET_PDEATHSIG), and the
converter workers' _die_with_parent on both of its paths: the compiled
helper, and the ctypes call an install without the extension makes. Each
runs in a fresh process, so the test process keeps its own setting."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from fastdata.formats import speedups

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")

needs_compiled = pytest.mark.skipif(not speedups.available(), reason=f"compiled helpers not built: {speedups.status()}")

_READ_WITH_CTYPES = """
def pdeathsig():
    import ctypes
    sig = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(sig))  # PR_GET_PDEATHSIG
    return sig.value
"""


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_compiled
def test_set_and_read_back():
    got = _run(
        "import json, signal\n" + _READ_WITH_CTYPES +
        "from fastdata.formats._speedups import set_parent_death_signal as put, parent_death_signal as get\n"
        "seen = [get()]\n"
        "put(signal.SIGTERM); seen += [get(), pdeathsig()]\n"
        "put(0); seen += [get()]\n"
        "try:\n"
        "    put(1000)\n"
        "    err = None\n"
        "except OSError as exc:\n"
        "    err = exc.errno\n"
        "print(json.dumps({'seen': seen, 'err': err}))"
    )
    assert got["seen"] == [0, signal.SIGTERM, signal.SIGTERM, 0]
    assert got["err"] == 22  # EINVAL: not a signal number


@needs_compiled
def test_die_with_parent_uses_the_compiled_helper():
    got = _run(
        "import json, sys\n"
        "from fastdata.converters.workers.parallel import _die_with_parent\n"
        "from fastdata.formats._speedups import parent_death_signal\n"
        "before = 'ctypes' in sys.modules\n"
        "_die_with_parent()\n"
        "print(json.dumps({'sig': parent_death_signal(), 'before': before, 'ctypes': 'ctypes' in sys.modules}))"
    )
    assert got["sig"] == signal.SIGKILL
    if got["before"]:
        pytest.skip("ctypes was imported before _die_with_parent ran: cannot tell which path set the signal")
    assert not got["ctypes"], "_die_with_parent imported ctypes although the compiled helper is built"


def test_die_with_parent_without_the_extension_uses_ctypes():
    got = _run(
        "import json, sys\n" + _READ_WITH_CTYPES +
        "sys.modules['fastdata.formats._speedups'] = None  # as in an install built without a compiler\n"
        "from fastdata.converters.workers.parallel import _die_with_parent\n"
        "_die_with_parent()\n"
        "print(json.dumps({'sig': pdeathsig()}))"
    )
    assert got["sig"] == signal.SIGKILL
