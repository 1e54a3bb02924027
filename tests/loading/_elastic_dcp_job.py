"""One rank of a CPU gloo job for test_resume_elastic_dcp.py, run as a script.

``save``: each rank reads ``STOP`` batches, then ``dcp.save`` writes both
loaders' states. ``load``: a job of another size ``dcp.load``s them and
finishes the epoch. Each rank writes what it read to ``<out>/<phase><rank>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from _data import IndexImages, StreamPixels, indices  # this script's folder is sys.path[0]

from fastdata import make_loader, open_dataset

N, BATCH, STOP, SEED = 64, 4, 2, 5


def main() -> None:
    out, phase, rank, world, records = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    dist.init_process_group("gloo", init_method=f"file://{out / f'{phase}.rendezvous'}", rank=rank, world_size=world)
    stream = open_dataset(records, streaming=True, transform=StreamPixels(), shuffle_buffer=16)
    loaders = {"loader": make_loader(IndexImages(N), BATCH, seed=SEED, workers=0),
               "stream_loader": make_loader(stream, BATCH, seed=SEED, workers=0)}
    assert all(loader.world_size == world and loader.rank == rank for loader in loaders.values())
    if phase == "load":
        dcp.load(loaders, checkpoint_id=str(out / "checkpoint"))
    read = {}
    for name, loader in loaders.items():
        samples = [[i, image] for x, _ in _take(loader, STOP if phase == "save" else None)
                   for i, image in zip(indices(x), x[:, :, :2].flatten(1).tolist())]
        read[name] = {"samples": samples, "state": loader.state_dict()}
    if phase == "save":
        dcp.save(loaders, checkpoint_id=str(out / "checkpoint"))
    (out / f"{phase}{rank}.json").write_text(json.dumps(read))
    dist.barrier()
    dist.destroy_process_group()


def _take(loader, stop):
    for step, batch in enumerate(loader):
        yield batch
        if stop is not None and step + 1 == stop:
            return


if __name__ == "__main__":
    main()
