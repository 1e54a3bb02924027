"""A fourth format is its folder plus one registry line: the throwaway ``npr``
format (``fourthfmt/``: no signature, no framing, no index hook, no DALI)
passes the format conformance suite, the hook tests and the dataset contract,
loads through the generic dataset, stream, ``make_loader`` and
``open_dataset``, and ``fastdata inspect`` / ``verify`` / ``index`` take it,
with no edit anywhere else."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fastdata import make_loader, open_dataset
from fastdata.converters import cli
from fastdata.datasets import FormatDataset, FormatStream
from fastdata.datasets.named import public_class
from fastdata.formats import registry
from fastdata.formats.dataset_writer import write_dataset

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITES = ["tests/formats/test_conformance.py", "tests/formats/test_hooks.py", "tests/datasets/test_dataset_contract.py"]


@pytest.mark.timeout(240)
def test_the_conformance_suites_pick_up_a_registered_format():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "fourthfmt.plugin", "-p", "no:cacheprovider",
         "-k", "npr", *SUITES],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=230,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 20, proc.stdout[-1000:]
    assert "skipped" not in proc.stdout, "a test skipped the new format instead of running or failing"


@pytest.fixture
def npr(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry._TABLE, "npr", ("fourthfmt", None, None))  # the one registry line
    images = [bytes([i]) * (i + 1) for i in range(10)]
    from fastdata.formats import Sample

    samples = [Sample(image=img, label=i % 3, id=i) for i, img in enumerate(images)]
    write_dataset(tmp_path / "ds", "npr", samples, ["a", "b", "c"], shard_bytes=12)
    return tmp_path / "ds"


def _raw(batch):
    return [(bytes(image), int(label)) for image, label in batch]


def test_generic_dataset_stream_and_make_loader_read_it(npr):
    expected = [(bytes([i]) * (i + 1), i % 3) for i in range(10)]
    ds = FormatDataset(npr, decode=False)
    assert (public_class("npr"), public_class("npr", "stream")) == (FormatDataset, FormatStream)  # no aliases
    assert (ds.format, len(ds), ds.classes) == ("npr", 10, ["a", "b", "c"]) and len(ds.shards.paths) > 1
    loader = make_loader(ds, 4, train=False, workers=0, collate_fn=_raw, rank=0, world_size=1)
    assert [item for batch in loader for item in batch] == expected
    stream = FormatStream(npr, decode=False, shuffle=False)
    assert sorted(_raw(stream)) == sorted(expected)
    loader = make_loader(
        stream, 4, train=True, workers=0, collate_fn=_raw, seed=3, rank=0, world_size=1, drop_last=False
    )
    assert sorted(item for batch in loader for item in batch) == sorted(expected)


def test_open_dataset_picks_it_up(npr):
    assert (type(open_dataset(npr)), open_dataset(npr).format) == (FormatDataset, "npr")
    shard = npr / "shard-00000.npr"
    assert open_dataset(shard, decode=False)[0] == (b"\x00", 0)  # a single shard: found by its suffix
    stream = open_dataset(npr, streaming=True, decode=False, shuffle=False)
    assert type(stream) is FormatStream and len(list(stream)) == 10


def _cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_verify_and_index_take_it(npr, capsys):
    shard = npr / "shard-00000.npr"
    code, out, err = _cli(capsys, "inspect", npr)
    assert code == 0 and "fastdata dataset, format npr, 10 records" in out and "class=a" in out, out + err
    code, out, err = _cli(capsys, "inspect", shard, "--records", "2")
    assert code == 0 and "npr file" in out and "position=1, label=1, bytes=2" in out, out + err
    code, out, err = _cli(capsys, "verify", npr)
    assert code == 0 and f"OK, 10 records in {len(FormatDataset(npr).shards.paths)} shard(s) read" in out, out + err
    code, out, err = _cli(capsys, "verify", shard)
    assert code == 0 and "OK" in out, out + err
    shard.write_bytes(shard.read_bytes()[:-1])  # the last record runs past the end now
    code, out, _ = _cli(capsys, "verify", npr)
    assert code == 1 and f"PROBLEM {shard}: size is" in out
    code, _, err = _cli(capsys, "index", shard)  # npr declares no index hook: refused, naming the formats with one
    assert code == 2 and "have index files (this is shard / npr)" in err
