"""The converter's shuffle drawn without numpy is numpy's, draw for draw (it fixes what conversions write)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastdata.order import conversion
from fastdata.order.conversion import NUMPY_FROM, conversion_generator, conversion_order


@pytest.mark.parametrize("seed", [0, 1, 5, -1, 2**40 + 3])
@pytest.mark.parametrize("purpose, index", [(0x0D3, 0), (0x0D3, 1), (0x7A1, 7), (0, 2**33)])
def test_pure_python_permutation_is_numpys(seed, purpose, index):
    for n in (0, 1, 2, 3, 17, 1000, 4099):
        expected = conversion_generator(seed, purpose, index).permutation(n).tolist()
        assert conversion_order(seed, purpose, index, n) == expected, n


def test_seed_sequence_state_is_numpys():
    for words in ([0], [0, 0, 0], [1, 2, 3], [2**32 - 1, 0x0D3, 2**40], [5, 6, 7, 8, 9, 10]):
        expected = [int(w) for w in np.random.SeedSequence(words).generate_state(4, np.uint64)]
        assert list(conversion._seed_sequence_state(words)) == expected


def test_large_orders_are_drawn_by_numpy_and_agree(monkeypatch):
    n = 3000
    pure = conversion_order(9, 0x0D3, 0, n)
    monkeypatch.setattr(conversion, "NUMPY_FROM", n)
    assert conversion_order(9, 0x0D3, 0, n) == pure
    assert NUMPY_FROM >= 10_000


def test_a_shuffled_plan_does_not_import_numpy(tmp_path):
    """numpy's import costs 0.1-0.15 s, more than converting a small folder; the plan draws without it."""
    (tmp_path / "a").mkdir()
    for i in range(5):
        (tmp_path / "a" / f"{i}.jpg").write_bytes(b"\xff\xd8" + bytes([i]) * 100)
    code = (
        "import sys\n"
        "from fastdata.converters.planning.layout import PlanOptions, make_plan\n"
        "from fastdata.converters.planning.scan import scan_folder\n"
        f"plan = make_plan(scan_folder({str(tmp_path)!r}), PlanOptions(format='recordio', shuffle=True), {{}})\n"
        "print(len(plan.shards[0].items), 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["5", "False"]
