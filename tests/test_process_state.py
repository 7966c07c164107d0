"""Concurrent calls leave the process as they found it: BLAS threads, torch's threads, its float32 matmul precision
and TF32 switch are the same after eight threads of mixed calls as before, and every call gives the numbers it gives
alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

import socm_lib
from socm_lib.reference import lowrank_pairs

RNG = np.random.default_rng(34)
#: Ragged clouds in several length buckets, so that every engine run has many blocks (small ``BLOCK``) and runs
#: them in more than one worker thread.
CLOUDS = [RNG.normal(size=(int(n), 12)) + 0.5 for n in RNG.integers(2, 30, size=24)]
BLOCK = 400
LISTED = np.array([(0, 5), (3, 17), (9, 2), (20, 21), (7, 7 + 1), (11, 23)])


def _calls() -> dict:
    """Each kind of call the process state could be changed by, as a function returning arrays to compare."""
    def pairs():
        r = socm_lib.socm_pairs(CLOUDS, block_elems=BLOCK, progress=False, device="cpu")
        return r.d_mu, r.d_sigma, r.socm

    def summary():
        s = socm_lib.socm_summary(CLOUDS, block_elems=BLOCK, progress=False, device="cpu")
        return np.array([s.mean_socm, s.median_socm, s.mean_d_mu, s.mean_d_sigma]), s.histograms["socm"].counts

    def cross():
        r = socm_lib.socm_cross(CLOUDS[:10], CLOUDS[10:], block_elems=BLOCK, progress=False, device="cpu")
        return r.d_mu, r.d_sigma, r.socm

    def torch_path():  # float32 products: the one run that must switch TF32 and the matmul precision off
        r = socm_lib.socm_pairs(CLOUDS, block_elems=BLOCK, progress=False, device="cpu", backend="torch",
                                dtype=torch.float32)
        return r.d_mu, r.d_sigma, r.socm

    def reference():
        r = lowrank_pairs(CLOUDS, LISTED, workers=1)
        return r.d_mu, r.d_sigma, r.socm

    return {"pairs": pairs, "summary": summary, "cross": cross, "torch": torch_path, "reference": reference}


def _state() -> dict:
    """The process-wide settings the library could change."""
    return {
        "threadpools": sorted((p["internal_api"], p["filepath"], p["num_threads"]) for p in threadpool_info()),
        "torch_threads": torch.get_num_threads(),
        "matmul_precision": torch.get_float32_matmul_precision(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


@pytest.fixture
def user_settings():
    """Settings a user might have chosen, none of them the library's: two torch threads (so that the engine runs
    its blocks in two worker threads) and the float32 matmul precision "high"; BLAS keeps its own default (one thread
    per core: the library's one-thread limit is visible wherever there are two cores or more)."""
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    torch.set_num_threads(2)
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_float32_matmul_precision(precision)


def test_eight_threads_of_mixed_calls_leave_the_process_state_as_it_was(user_settings):
    calls = _calls()
    alone = {name: call() for name, call in calls.items()}
    before = _state()
    assert before["matmul_precision"] == "high" and before["torch_threads"] == 2

    names = list(calls) * 2  # 10 threads ...
    names = names[:8]  # ... cut to 8: every kind at least once, the engine's several times
    start = threading.Barrier(len(names))
    results, errors = {}, []

    def worker(k, name):
        try:
            start.wait(timeout=60)
            results[k] = [calls[name]() for _ in range(3)]
        except BaseException as exc:  # reported below, with the thread's call
            errors.append((name, exc))

    threads = [threading.Thread(target=worker, args=(k, name)) for k, name in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    assert not errors, errors
    assert _state() == before
    for k, name in enumerate(names):
        for got in results[k]:
            for a, b in zip(got, alone[name]):
                np.testing.assert_array_equal(a, b, err_msg=name)

