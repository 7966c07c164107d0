"""Benchmark socm_summary on a Dask cluster against the single process: the cost per pair and per block.

    python benchmarks/bench_distributed.py            # full run (all pairs of 1,000 texts, d = 384; a few minutes)
    python benchmarks/bench_distributed.py --quick    # smoke run (small sizes)

On all pairs of N synthetic texts (``common.synthetic_clouds``, 5 to 60 tokens, d = 384, seed 0), each timing the
median of several runs after a warm-up, with every run kept:

* **single process, one core** (``torch.set_num_threads(1)``, BLAS on one thread): ``T_1``;
* **single process, every core**, for reference;
* **the cluster**: ``socm_summary(client=...)`` on a ``distributed.LocalCluster`` of ``k = 2`` worker processes with one
  thread each (the figures are checked identical to the single process's, every one of them);
* **the caller's serial part** ``S``: what runs before any block (preparing the clouds, the histograms' pre-pass), and
  on a cluster ``F``, forming and scattering every bucket's data, both timed alone;
* **the scheduler's time per task** ``tau``: the wall time of trivial tasks on the same cluster, one after another
  through its scheduler.

A simple model then predicts a cluster of ``k`` workers: ``T_k = S + F + max((P c + B h) / k, B tau)``, with ``P``
pairs in ``B`` blocks, ``c = (T_1 - S) / P`` the one-core seconds per pair, and ``h = (k (T_k - S - F) - P c) / B``
the seconds of worker time each block costs beyond its pairs (transfers, serialisation, merging its tally), measured
here at ``k = 2``; however many workers there are, the scheduler hands out one task at a time, hence the floor
``B tau`` (raise ``block_elems`` on a large cluster: fewer, longer blocks). For 10^6 texts of the same lengths, ``S``
and ``F`` grow like ``N``, ``P`` like ``N^2``, and ``B`` is counted by the engine's own rule
(:func:`socm_lib.block_plan.rows_per_block`) on the buckets of these texts, each 1,000 times larger. The record
gives the prediction at several ``k``.

Prints a summary and writes ``benchmarks/results/distributed.json`` (with ``--quick``, into a temporary folder).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SEED = 0
D = 384
#: (texts, runs per timing); full and quick.
SIZES = {False: (1000, 3), True: (60, 1)}
WORKERS = 2
#: The corpus the prediction is for, and the cluster sizes it is given for.
PREDICT_TEXTS = 1_000_000
PREDICT_WORKERS = (1, 10, 100, 1000)
#: Trivial tasks timed for the scheduler's time per task.
SCHEDULER_TASKS = {False: 2000, True: 200}


def _runs(fn, repeats: int) -> dict:
    """``fn()`` ``repeats`` times (the caller has warmed it up): median, spread and every run, in seconds."""
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return {"median_s": float(np.median(runs)), "min_s": float(min(runs)), "max_s": float(max(runs)),
            "runs_s": [round(r, 4) for r in runs]}


def serial_parts(clouds, client) -> tuple[float, float]:
    """``(S, F)``: the caller's work before any block (clouds prepared, range pre-pass), and forming and scattering
    every bucket's data on ``client``'s cluster, each timed alone."""
    import torch

    from socm_lib import summary
    from socm_lib.block_runner import prepare_engine

    t = time.perf_counter()
    engine = prepare_engine(clouds, normalize=True, device="cpu", dtype=torch.float64, backend="auto",
                            bucket_tolerance=0.05)
    n = len(clouds)
    summary._sampled_ranges(engine, None, n * (n - 1) // 2, 1 << 22, summary._ranges(engine.means, engine.traces))
    prepared = time.perf_counter() - t
    t = time.perf_counter()
    futures = [client.scatter(engine.cache.form(B), hash=False) for B in engine.buckets]
    scattered = time.perf_counter() - t
    client.cancel(futures)
    return prepared, scattered


def scheduler_seconds(client, tasks: int) -> float:
    """Wall seconds per task of ``tasks`` trivial tasks on ``client``'s cluster (after a warm-up batch)."""
    client.gather(client.map(abs, range(-50, 0), pure=False))
    t = time.perf_counter()
    client.gather(client.map(abs, range(-tasks, 0), pure=False))
    return (time.perf_counter() - t) / tasks


def blocks_when_larger(engine, factor: int, block_elems: int) -> int:
    """Blocks of all pairs of texts laid out like ``engine``'s, ``factor`` times as many in every bucket, by the
    engine's rule (:func:`socm_lib.block_plan.rows_per_block`)."""
    from socm_lib.block_plan import rows_per_block
    from socm_lib.factors import Bucket

    big = [Bucket(B.index, np.arange(len(B.members) * factor), B.rows) for B in engine.buckets]
    return sum(-(-len(Ba.members) // rows_per_block(Ba, Bb, block_elems)) for a, Ba in enumerate(big) for Bb in big[a:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args, record, t0 = common.start(__file__, parser, argv)
    import distributed
    import torch
    from threadpoolctl import threadpool_limits

    import socm_lib
    from socm_lib.block_runner import prepare_engine
    from socm_lib.viz.benchmarking import cluster_seconds

    n_texts, repeats = SIZES[args.quick]
    clouds = common.synthetic_clouds(n_texts, D, seed=SEED)
    pairs = n_texts * (n_texts - 1) // 2
    engine = prepare_engine(clouds, normalize=True, device="cpu", dtype=torch.float64, backend="auto",
                            bucket_tolerance=0.05)
    blocks = len(engine.plan(None, 1 << 22))
    assert blocks_when_larger(engine, 1, 1 << 22) == blocks  # the count follows the engine's plan
    record["versions"]["dask"] = distributed.__version__
    record["settings"] = {"seed": SEED, "d": D, "texts": n_texts, "pairs": pairs, "blocks": blocks,
                          "block_elems": 1 << 22, "workers": WORKERS, "threads_per_worker": 1, "runs": repeats,
                          "scheduler_tasks": SCHEDULER_TASKS[args.quick],
                          "model": "T_k = S + F + (P c + B h) / k"}
    summary = lambda **kw: socm_lib.socm_summary(clouds, progress=False, **kw)  # noqa: E731
    cores = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1, user_api="blas"):  # one core in all, as each worker has (its BLAS, one thread)
            socm_lib.socm_summary(clouds[:60], progress=False)  # warm-up
            one_core = _runs(summary, repeats)
    finally:
        torch.set_num_threads(cores)
    every_core = _runs(summary, repeats)
    single = summary()
    print(f"single process: {one_core['median_s']:.2f} s on one core, {every_core['median_s']:.2f} s on {cores}",
          flush=True)
    with distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        socm_lib.socm_summary(clouds[:60], progress=False, client=client)  # warm-up: the workers import the library
        on_cluster = _runs(lambda: summary(client=client), repeats)
        clustered = summary(client=client)
        S, F = serial_parts(clouds, client)
        tau = scheduler_seconds(client, SCHEDULER_TASKS[args.quick])
    identical = (clustered.summary() == single.summary() and clustered.median_socm_error == single.median_socm_error
                 and all(np.array_equal(clustered.histograms[k].counts, h.counts) for k, h in single.histograms.items())
                 and all(np.array_equal(getattr(clustered, kept).socm, getattr(single, kept).socm)
                         for kept in ("most_collapsed", "least_collapsed")))
    c = (one_core["median_s"] - S) / pairs
    per_block = [(WORKERS * (t - S - F) - pairs * c) / blocks for t in on_cluster["runs_s"]]
    h = float(np.median(per_block))
    scale = PREDICT_TEXTS // n_texts
    big_pairs = PREDICT_TEXTS * (PREDICT_TEXTS - 1) // 2
    big_blocks = blocks_when_larger(engine, scale, 1 << 22)
    record.update({
        "single_one_core": one_core, "single_every_core": {**every_core, "threads": cores}, "cluster": on_cluster,
        "serial_s": S, "scatter_s": F, "scheduler_task_s": tau, "identical": bool(identical),
        "per_pair_core_s": c, "pairs_per_block": pairs / blocks, "block_core_s": c * pairs / blocks,
        "overhead_per_block_s": {"median_s": h, "min_s": float(min(per_block)), "max_s": float(max(per_block)),
                                 "runs_s": per_block},
        "prediction": {"texts": PREDICT_TEXTS, "pairs": big_pairs, "blocks": big_blocks,
                       "serial_s": (S + F) * scale, "scheduler_floor_s": big_blocks * tau,
                       "seconds": {str(k): cluster_seconds(big_pairs, big_blocks, k, pair_s=c, block_s=h,
                                                           serial_s=(S + F) * scale, task_s=tau)
                                   for k in PREDICT_WORKERS}},
    })
    path = common.finish(record, "distributed", t0)
    print(f"cluster of {WORKERS} workers: {on_cluster['median_s']:.2f} s (runs {on_cluster['runs_s']}); identical "
          f"to the single process: {identical}")
    print(f"per pair {c * 1e6:.2f} us of one core; {blocks} blocks of {pairs / blocks:,.0f} pairs "
          f"({c * pairs / blocks * 1e3:.1f} ms of one core each); overhead per block {h * 1e3:.1f} ms "
          f"(runs {min(per_block) * 1e3:.1f} to {max(per_block) * 1e3:.1f}); serial {S:.2f} s + scatter {F:.2f} s; "
          f"scheduler {tau * 1e3:.2f} ms a task")
    print(f"{PREDICT_TEXTS:,} texts: {big_blocks:,} blocks, the scheduler alone {big_blocks * tau / 3600:.1f} hours")
    for k, seconds in record["prediction"]["seconds"].items():
        print(f"  {PREDICT_TEXTS:,} texts on {k} workers: about {seconds / 86400:.1f} days")
    print(f"\nwrote {path} ({record['script_seconds']} s)")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
