"""socm_summary on a Dask cluster (socm_lib.distributed): a LocalCluster of two worker processes gives the summary of
the single process bit for bit (counts, sums, histograms, median, extreme pairs), for all pairs of ragged and long
clouds, for listed pairs over a few thousand texts (pair by pair and grid tiles, from whole buckets or from each
block's own texts), with the median exact or from its fine histogram, and when a worker is killed during the run;
without dask[distributed], client= says what to install."""

from __future__ import annotations

import functools
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import socm_lib
from socm_lib import distributed as socm_distributed

RNG = np.random.default_rng(43)
D = 16
#: A few thousand texts: ragged (1 to 11 tokens, so one-token clouds and several buckets), and some long clouds
#: (more tokens than dimensions, shortened to a d x d factor).
CLOUDS = ([(RNG.normal(size=(int(n), D)) + 0.4).astype(np.float32) for n in RNG.integers(1, 12, size=3000)]
          + [RNG.normal(size=(int(n), D)) * 0.3 + 0.5 for n in (40, 61, 128)])
LONG = list(range(3000, 3003))
#: Block sizes small enough that every run has dozens of blocks, so tasks finish in many orders.
BLOCK = 1 << 16


def listed_pairs(count: int) -> np.ndarray:
    """Random pairs over every text (some listed twice, a text with itself, the long clouds among them)."""
    rng = np.random.default_rng(7)
    pairs = rng.integers(0, len(CLOUDS), size=(count, 2))
    pairs[:6] = [(0, 0), (LONG[0], 5), (LONG[1], LONG[2]), (9, LONG[0]), (3, 4), (3, 4)]
    return pairs


def assert_same_summary(got, want) -> None:
    """Every figure of two summaries equal, bit for bit."""
    assert got.summary() == want.summary()
    assert got.median_socm_error == want.median_socm_error
    for key, h in want.histograms.items():
        np.testing.assert_array_equal(got.histograms[key].edges, h.edges, err_msg=key)
        np.testing.assert_array_equal(got.histograms[key].counts, h.counts, err_msg=key)
    for kept in ("most_collapsed", "least_collapsed"):
        for field in ("i", "j", "d_mu", "d_sigma", "socm"):
            np.testing.assert_array_equal(getattr(getattr(got, kept), field), getattr(getattr(want, kept), field),
                                          err_msg=f"{kept}.{field}")


@pytest.fixture(scope="module")
def client():
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
        yield c


CASES = {
    "all pairs, ragged and long": (CLOUDS[:300] + [CLOUDS[k] for k in LONG], None, {}),
    "listed pairs over 3,003 texts": (CLOUDS, listed_pairs(40_000), {}),
    "a sparse list over 3,003 texts (blocks that form their own texts)": (CLOUDS, listed_pairs(1000), {}),
    "grid of 100 x 200 texts": (CLOUDS[:300], np.array([(a, b) for a in range(100) for b in range(100, 300)]), {}),
    "fine-histogram median": (CLOUDS[:300], None, {"exact_median_limit": 1000}),
}


@functools.cache
def single_process(case: str):
    """The summary of ``CASES[case]`` on this machine's cores (computed once for the tests that compare with it)."""
    clouds, pairs, options = CASES[case]
    return socm_lib.socm_summary(clouds, pairs, block_elems=BLOCK, progress=False, **options)


@pytest.mark.parametrize("case", CASES)
def test_the_cluster_gives_the_single_process_summary(client, case):
    clouds, pairs, options = CASES[case]
    want = single_process(case)
    got = socm_lib.socm_summary(clouds, pairs, block_elems=BLOCK, progress=False, client=client, **options)
    assert got.pairs == want.pairs == (len(pairs) if pairs is not None else len(clouds) * (len(clouds) - 1) // 2)
    assert_same_summary(got, want)
    assert (want.median_socm_error > 0) == ("exact_median_limit" in options)


def test_progress_is_reported_as_blocks_finish(client, capsys):
    clouds = CLOUDS[:60]
    socm_lib.socm_summary(clouds, block_elems=BLOCK, progress=True, client=client)
    bar = capsys.readouterr().err
    assert "SOCM" in bar and f"{len(clouds) * (len(clouds) - 1) // 2}/{len(clouds) * (len(clouds) - 1) // 2}" in bar


def kill_once(marker: str, after: int):
    """A worker plugin that kills its worker's process (SIGKILL, as a crash would) when it starts its ``after``-th
    task, once in all: the ``marker`` file says it happened, so the worker the nanny starts in its place is spared."""
    import distributed

    class KillOnce(distributed.WorkerPlugin):
        def __init__(self):
            self.started = 0

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing":
                self.started += 1
                if self.started == after and not os.path.exists(marker):
                    Path(marker).write_text(str(os.getpid()))
                    os.kill(os.getpid(), signal.SIGKILL)

    return KillOnce()


@pytest.mark.skipif(sys.platform == "win32", reason="kills a worker process with SIGKILL")
def test_a_worker_killed_during_the_run_changes_nothing(client, tmp_path):
    clouds, pairs, _ = CASES["listed pairs over 3,003 texts"]
    want = single_process("listed pairs over 3,003 texts")
    workers = set(client.scheduler_info()["workers"])
    marker = tmp_path / "killed"
    client.register_plugin(kill_once(str(marker), after=8), name="kill-once")
    try:
        got = socm_lib.socm_summary(clouds, pairs, block_elems=BLOCK, progress=False, client=client)
    finally:
        client.unregister_worker_plugin("kill-once")
    assert marker.exists(), "no worker was killed: the test did not test anything"
    client.wait_for_workers(2)
    assert set(client.scheduler_info()["workers"]) != workers  # the nanny started a new worker in its place
    assert_same_summary(got, want)


def test_a_refusal_on_a_worker_reaches_the_caller(client):
    """A pair that overflows without normalisation is refused on the worker that computes it, with the message of
    one machine (every range given: no pre-pass runs here first)."""
    edge = [np.asarray(c, np.float64) * 1e153 for c in CLOUDS[:12]]
    ranges = {k: (0.0, 1.0) for k in ("d_mu", "d_sigma", "socm")}
    with pytest.raises(ValueError, match=r"The pair \(clouds\[\d+\], clouds\[\d+\]\) gives a non-finite SOCM"):
        socm_lib.socm_summary(edge, normalize=False, range=ranges, client=client)


@pytest.mark.skipif(sys.platform == "win32", reason="kills a worker process with SIGKILL")
def test_data_lost_with_its_worker_is_scattered_again(client):
    """A bucket whose only copy was on a worker that died is scattered again from the caller, the same data."""
    import time

    import torch

    from socm_lib.block_runner import prepare_engine

    engine = prepare_engine(CLOUDS[:50], normalize=True, device="cpu", dtype=torch.float64, backend="auto",
                            bucket_tolerance=0.05)
    data = socm_distributed._Scattered(client, engine, None, None)
    first = data[("bucket", 0)]
    (holder,) = client.who_has(first)[first.key]
    os.kill(client.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while first.status == "finished" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first.status != "finished", "the scheduler never noticed the lost worker"
    again = data[("bucket", 0)]
    assert again.key != first.key and again.status == "finished"
    np.testing.assert_array_equal(again.result().factors, engine.cache.form(engine.buckets[0]).factors)
    data.release()
    client.wait_for_workers(2)


def test_client_without_the_extra_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if dask[distributed] were not installed
    with pytest.raises(ImportError, match=r"pip install 'socm-book\[distributed\]'"):
        socm_lib.socm_summary(CLOUDS[:5], client=object())


def test_the_library_imports_and_summarises_without_dask():
    code = ("import sys; sys.modules['dask'] = sys.modules['distributed'] = None; import numpy as np, socm_lib; "
            "rng = np.random.default_rng(0); "
            "print(socm_lib.socm_summary([rng.normal(size=(4, 3)) + 1 for _ in range(5)], progress=False).pairs)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "10"


def test_client_must_be_a_dask_client():
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        socm_lib.socm_summary(CLOUDS[:5], client="tcp://127.0.0.1:8786")


def test_options_the_cluster_cannot_take_are_refused_before_any_work(client):
    with pytest.raises(TypeError, match="on_pairs"):
        socm_lib.socm_summary(CLOUDS[:5], client=client, on_pairs=lambda start, chunk: None)
