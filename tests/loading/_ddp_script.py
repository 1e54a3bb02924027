"""Run by test_ddp.py under ``torchrun --nproc_per_node=2`` (CPU, gloo).

Writes ``rank<r>.json`` into the folder given as argv[1]: the sample ids each
rank saw per run and epoch, and the message of the refusal it was expected to hit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from _data import IndexImages  # this script's folder is sys.path[0]

from fastdata import ConfigError, make_loader

N = 21


def epochs(loader, count: int) -> list[list[int]]:
    seen = []
    for _ in range(count):
        ids = []
        for _, targets in loader:
            ids += targets.tolist()
            # a collective per batch: it would hang if ranks had different batch counts
            dist.all_reduce(torch.ones(1))
        seen.append(ids)
    return seen


def main() -> None:
    out = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    record: dict[str, object] = {"world_size": dist.get_world_size()}
    for name, seed in (("seed0", 0), ("seed0_again", 0), ("seed1", 1)):
        loader = make_loader(IndexImages(N), 4, seed=seed, workers=0, drop_last=False)
        record[name] = epochs(loader, 2)
        record[name + "_len"] = len(loader)
    evaluation = make_loader(IndexImages(N), 4, train=False, workers=0)
    record["eval"] = [t for _, targets in evaluation for t in targets.tolist()]
    try:
        make_loader(IndexImages(N), 4, distributed=False, workers=0)
        record["refusal"] = None
    except ConfigError as exc:
        record["refusal"] = str(exc)
    (out / f"rank{rank}.json").write_text(json.dumps(record))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
