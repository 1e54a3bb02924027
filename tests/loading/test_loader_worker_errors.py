"""After a sample raises in a worker, no loader iterator outlives the error into forked children (issue #9, item 7b).

The exception's traceback holds torch's frames, which hold the DataLoader
iterator; the traceback is in a reference cycle with the exception, so only a
garbage-collection pass frees them. If that pass runs first in a process forked
later (the next loader's workers), the iterator's ``__del__`` asks whether its
workers are alive from a process that is not their parent and prints
"AssertionError: can only test a child process", once per forked child.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent(
    """
    import gc, sys
    import numpy as np
    import torch
    from fastdata import Prefetch, Workers, make_loader

    class Bad(torch.utils.data.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            if i == 5:
                raise ValueError("sample 5 is bad")
            return np.zeros((8, 8, 3), np.uint8), i

    class Collecting(torch.utils.data.Dataset):
        # a collection in a forked worker, as any allocation there may trigger
        def __len__(self):
            return 8

        def __getitem__(self, i):
            gc.collect()
            return i

    persistent, prefetch = sys.argv[1] == "persistent", sys.argv[2] == "prefetch"

    def one_pass():
        loader = make_loader(Bad(), 4, train=False, workers=Workers(num=2, persistent=persistent),
                             prefetch=Prefetch(device="cpu") if prefetch else None)
        try:
            for _ in loader:
                pass
        except ValueError as exc:
            assert "sample 5 is bad" in str(exc)
            print("caught")
        return loader

    kept = one_pass()  # a loader the caller keeps
    one_pass()  # and one it drops at once
    again = torch.utils.data.DataLoader(Collecting(), batch_size=2, num_workers=2)  # fork workers again
    assert sum(len(b) for b in again) == 8
    try:  # the kept loader still runs its next epoch (and meets the same bad sample)
        sum(len(images) for images, _ in kept)
    except ValueError:
        print("caught again")
    print("done")
    """
)


@pytest.mark.parametrize("persistent", ["persistent", "transient"])
@pytest.mark.parametrize("prefetch", ["plain", "prefetch"])
def test_no_iterator_outlives_a_worker_error_into_forked_children(tmp_path, persistent, prefetch):
    script = tmp_path / "worker_error.py"
    script.write_text(_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), persistent, prefetch], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["caught", "caught", "caught", "again", "done"], proc.stdout
    assert "can only test a child process" not in proc.stderr, proc.stderr[-3000:]
    assert "Exception ignored" not in proc.stderr, proc.stderr[-3000:]
