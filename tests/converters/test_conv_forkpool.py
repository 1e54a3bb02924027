"""The converter's fork pool: results by token, errors and deaths come back, no worker outlives it."""

from __future__ import annotations

import inspect
import os
import signal
import time

import pytest
from convkit import make_folder, run_cli, tree
from fastdata.converters.workers.forkpool import ForkPool
from fastdata.converters.workers.parallel import SpawnPool
from fastdata.converters.workers.pool import Pool, WorkerDied
from fastdata.errors import FastDataError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the fork pool needs os.fork")

_STATE: dict = {}


def _init(channel, tag):
    _STATE["channel"], _STATE["tag"] = channel, tag


def _square(n):
    return n * n, _STATE["tag"], os.getpid()


def _fail(n):
    raise ValueError(f"bad {n}")


def _die(_):
    os.kill(os.getpid(), signal.SIGKILL)


def _report_then(n):
    for k in range(n):
        _STATE["channel"].put((k, n))
    return n


def _sleep(seconds):
    time.sleep(seconds)
    return os.getpid()


def _unpicklable(_):
    return lambda: None


def _drain(pool, tokens, timeout=60):
    got, deadline = {}, time.monotonic() + timeout
    while len(got) < len(tokens):
        assert time.monotonic() < deadline, "the pool stopped answering"
        for token, outcome in pool.completed(timeout=1):
            got[token] = outcome
    return got


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_every_task_comes_back_by_its_token_from_initialised_workers():
    with ForkPool(3, _init, args=("tagged",)) as pool:
        tokens = {pool.submit(_square, n): n for n in range(20)}  # more tasks than workers: queued here
        got = _drain(pool, tokens)
    assert {tokens[t]: o.result()[:2] for t, o in got.items()} == {n: (n * n, "tagged") for n in range(20)}
    pids = {o.result()[2] for o in got.values()}
    assert len(pids) <= 3 and os.getpid() not in pids
    assert all(_gone(pid) for pid in pids)  # shut down and reaped on leaving the block


def test_an_error_is_raised_by_its_outcome_and_the_pool_goes_on():
    with ForkPool(2, _init, args=(None,)) as pool:
        bad, good = pool.submit(_fail, 7), pool.submit(_square, 3)
        got = _drain(pool, [bad, good])
        with pytest.raises(ValueError, match="bad 7"):
            got[bad].result()
        assert got[good].result()[0] == 9
        again = pool.submit(_square, 4)
        assert _drain(pool, [again])[again].result()[0] == 16


def test_a_worker_killed_by_the_os_is_an_error_not_a_hang():
    with pytest.raises(WorkerDied, match="killed by signal 9"):
        with ForkPool(2, _init, args=(None,)) as pool:
            _drain(pool, [pool.submit(_die, 0), pool.submit(_sleep, 0.01)])
    assert issubclass(WorkerDied, FastDataError)


def test_progress_reports_arrive_with_the_results():
    with ForkPool(2, _init, report=True, args=(None,)) as pool:
        tokens = [pool.submit(_report_then, n) for n in (3, 5)]
        got = _drain(pool, tokens)
        reports = sorted(pool.reports())
    assert sorted(o.result() for o in got.values()) == [3, 5]
    assert reports == sorted([(k, 3) for k in range(3)] + [(k, 5) for k in range(5)])


def test_leaving_by_an_exception_kills_busy_workers_at_once():
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with ForkPool(2, _init, args=(None,)) as pool:
            first = pool.submit(_sleep, 0)
            pid = _drain(pool, [first])[first].result()
            pool.submit(_sleep, 60)
            pool.submit(_sleep, 60)
            raise KeyboardInterrupt
    assert time.monotonic() - start < 30 and _gone(pid)


def test_an_answer_that_cannot_be_pickled_says_so():
    with ForkPool(1, _init, args=(None,)) as pool:
        token = pool.submit(_unpicklable, 0)
        with pytest.raises(FastDataError, match="could not be sent back"):
            _drain(pool, [token])[token].result()


@pytest.mark.parametrize("pool_class", [ForkPool, SpawnPool])
def test_both_pools_have_what_the_pool_protocol_promises(pool_class):
    """The conversion and the scan are written against workers/pool.py's Pool, not either pool."""
    names = [name for name in vars(Pool) if not name.startswith("_")] + ["__enter__", "__exit__"]
    assert {"submit", "completed"} <= set(names)
    for name in names:
        ours = inspect.signature(getattr(pool_class, name)).parameters
        assert list(ours) == list(inspect.signature(getattr(Pool, name)).parameters), f"{pool_class.__name__}.{name}"


def _killing_write(job, report=None):
    if job.ref is not None and job.ref.position == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    from fastdata.converters.conversion.work import write_shard_job

    return write_shard_job(job, report)


def test_a_conversion_whose_worker_dies_says_how_and_resumes_to_the_same_bytes(tmp_path, capsys, monkeypatch):
    from fastdata.converters.conversion import schedule

    make_folder(tmp_path / "src", {"a": 6, "b": 6})
    common = ["--format", "recordio", "--shards", "3", "--no-shuffle", "--passthrough", "-q"]
    monkeypatch.setattr(schedule, "write_shard_job", _killing_write)
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "out", "--workers", "2", *common)
    assert code == 2 and "a worker process died" in err and "killed by signal 9" in err and "--resume" in err
    monkeypatch.undo()
    assert run_cli(capsys, "convert", tmp_path / "src", tmp_path / "out", "--workers", "2", "--resume", *common)[0] == 0
    assert run_cli(capsys, "convert", tmp_path / "src", tmp_path / "one", "--workers", "1", *common)[0] == 0
    assert tree(tmp_path / "out") == tree(tmp_path / "one")
