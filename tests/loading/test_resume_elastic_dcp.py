"""Issue 31, item 3: a 2-process gloo job saves its loaders mid-epoch with
``torch.distributed.checkpoint.save``; a 3-process job ``dcp.load``s them
and finishes the epoch: every sample once, with the pixels of an
uninterrupted single-rank run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ._data import write_records
from ._elastic import reference

SCRIPT = Path(__file__).with_name("_elastic_dcp_job.py")
N, SEED = 64, 5  # as in the script: batches of 4; 2 ranks x 2 batches read 16, 3 ranks read 16 each after


def _run_job(out: Path, phase: str, world: int, records: Path) -> list[dict]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    ranks = [subprocess.Popen([sys.executable, str(SCRIPT), str(out), phase, str(r), str(world), str(records)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    try:
        logs = [rank.communicate(timeout=120)[0] for rank in ranks]
    except subprocess.TimeoutExpired:  # a hang is a failure, not a stuck CI job
        for rank in ranks:
            rank.kill()
        pytest.fail(f"the {phase} job did not finish in 120 s")
    assert all(rank.returncode == 0 for rank in ranks), "\n".join(log[-3000:] for log in logs)
    return [json.loads((out / f"{phase}{r}.json").read_text()) for r in range(world)]


@pytest.mark.slow  # five processes that import torch: 35 s on 2 busy cores
def test_dcp_save_on_two_ranks_then_load_on_three_finishes_the_epoch(tmp_path):
    records = write_records(tmp_path / "records", N)
    saved = _run_job(tmp_path, "save", 2, records)
    loaded = _run_job(tmp_path, "load", 3, records)
    for name, kind in (("loader", "map"), ("stream_loader", "stream")):
        assert saved[0][name]["state"] == saved[1][name]["state"]  # global: dcp keeps one copy
        assert saved[0][name]["state"]["read"] == 16
        assert all(job[name]["state"]["epoch"] == 1 for job in loaded)  # the epoch is over
        samples = [s for job in saved + loaded for s in job[name]["samples"]]
        assert Counter(i for i, _ in samples) == Counter(range(N))  # each sample once
        expected = reference(kind, N, records, seed=SEED, train=True)
        for i, image in samples:
            assert image == expected.pixels[i].reshape(-1).tolist(), (name, i)
