"""Benchmark the nuclear norms' compiled lane kernel against LAPACK, one matrix at a time, in the same run.

    python benchmarks/bench_kernel.py            # full run (about 3 minutes on 2 idle cores)
    python benchmarks/bench_kernel.py --quick    # smoke run (small sizes; targets not evaluated)

The exact engine spends most of its CPU time in the nuclear norms of small cross matrices ``A_i A_j^T``
(``socm_lib.nuclear``). This script measures the kernel against today's LAPACK route (``numpy.linalg.svd``),
each A/B interleaved in one process (the route switched by ``socm_lib.config_context(svd_kernel=...)`` between
runs, the order reversed every round), and reports ratios, which stay meaningful on a loaded machine where seconds
do not. Every timing is repeated (:data:`MATRIX_ROUNDS` rounds per matrix kind, the rounds of :data:`END_TO_END`
end to end) and every run is recorded: a round times both routes once, its ratio is LAPACK's time over the
kernel's in that round (``ratio_runs``), and the ratio quoted is the median of the rounds' ratios, with the
fastest and the slowest round beside it.

* **exactness**: the largest relative difference of the kernel's nuclear norms from LAPACK's on the engine's own
  matrices (recorded from its blocks) for four kinds of clouds: random (synthetic, shaped like an encoder's),
  ill-conditioned (spread decaying over 14 orders of magnitude), rank-deficient (a few tokens repeated), and the
  real all-minilm-l6 clouds of the embedded corpus;
* **per matrix**: microseconds per matrix on one thread (BLAS and the engine limited to one thread), on those
  recorded matrices;
* **end to end**: ``socm_pairs`` over all 499,500 pairs of 1,000 synthetic clouds (5 to 60 tokens) at d = 384, and
  on 400 clouds at d = 768, ``socm_summary`` on the same 1,000 clouds and ``socm_cross`` between their two halves
  (250,000 pairs), every core, routes alternated, three rounds each;
  peak memory of ``socm_pairs`` at d = 384 per route, each in a fresh process.

Writes ``benchmarks/results/kernel.json`` (with ``--quick``, a temporary folder), which records the kernel variant
that ran (``socm_lib.nuclear.kernel_report``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SEED = 0
ROUTES = ("lapack", "kernel")
#: (texts, d, rounds) of the end-to-end runs; full and quick. A round runs both routes once; three rounds give each
#: ratio a median and a spread (about 2.5 minutes of the full run on 2 idle cores, from the runs of 2 December 2026:
#: 11.2 + 5.6 s, 3.0 + 1.9 s, 12.0 + 6.1 s and 5.7 + 3.1 s a round).
END_TO_END = {
    False: {"socm_pairs d=384": (1000, 384, 3), "socm_pairs d=768": (400, 768, 3),
            "socm_summary d=384": (1000, 384, 3), "socm_cross d=384": (1000, 384, 3)},
    True: {"socm_pairs d=384": (80, 384, 2), "socm_pairs d=768": (40, 768, 2),
           "socm_summary d=384": (40, 384, 2), "socm_cross d=384": (40, 384, 2)},
}
#: Rounds of the one-thread timing of each kind's recorded matrices (well under a second a round).
MATRIX_ROUNDS = 5
#: Texts per kind whose engine matrices are recorded for exactness and the per-matrix timing.
MATRIX_TEXTS = {False: 120, True: 24}
#: Texts of the peak-memory runs (d = 384), each route in a fresh process.
PEAK_TEXTS = {False: 400, True: 40}
TARGET_RATIO = 1.8


def use(route: str):
    """The nuclear norms' route for the calls inside the ``with`` block (``kernel``: the best variant built)."""
    import socm_lib

    return socm_lib.config_context(svd_kernel="lapack" if route == "lapack" else "auto")


def clouds_of(kind: str, n_texts: int, d: int = 384) -> list[np.ndarray]:
    """Token clouds of one kind (see the module docstring); ``corpus`` runs all-minilm-l6 on the corpus."""
    if kind == "corpus":
        return common.corpus_clouds(n_texts)
    clouds = common.synthetic_clouds(n_texts, d, seed=SEED)
    rng = np.random.default_rng(SEED)
    if kind == "ill_conditioned":
        scales = np.logspace(0, -14, d)
        return [(x.mean(axis=0) + (x - x.mean(axis=0)) * scales).astype(np.float64) for x in clouds]
    if kind == "repeated_tokens":
        return [x[rng.integers(0, min(3, len(x)), size=len(x))] for x in clouds]
    return clouds


def engine_matrices(clouds) -> list[np.ndarray]:
    """The cross-matrix batches the engine hands to its nuclear norms for all pairs of ``clouds`` (copies)."""
    import socm_lib
    from socm_lib import block_math as engine

    seen, original = [], engine._nuclear_norms

    def record(G, use_torch):
        seen.append(np.array(G.numpy(), copy=True))
        return original(G, use_torch)

    engine._nuclear_norms = record
    try:
        socm_lib.socm_pairs(clouds, progress=False)
    finally:
        engine._nuclear_norms = original
    return seen


def round_ratios(seconds: dict) -> list[float]:
    """LAPACK's time over the kernel's in each round (``seconds``: route -> one time per round)."""
    return [a / b for a, b in zip(seconds["lapack"], seconds["kernel"], strict=True)]


def alternated(rounds: int):
    """The order of the routes in each of ``rounds`` rounds: LAPACK first, then the kernel first, and so on."""
    return [ROUTES if k % 2 == 0 else ROUTES[::-1] for k in range(rounds)]


def matrix_records(n_texts: int) -> dict:
    """Per kind: matrices, largest relative difference kernel vs LAPACK, and one-thread microseconds per matrix.

    Each of :data:`MATRIX_ROUNDS` rounds times both routes once over every matrix; ``runs_us_per_matrix`` keeps
    each run, ``ratio_runs`` each round's ratio, and ``ratio`` is their median.
    """
    from threadpoolctl import threadpool_limits

    import torch

    from socm_lib import nuclear

    out = {}
    torch.set_num_threads(1)
    with threadpool_limits(1):
        for kind in ("random", "ill_conditioned", "repeated_tokens", "corpus"):
            batches = engine_matrices(clouds_of(kind, n_texts))
            count = sum(int(np.prod(G.shape[:-2])) for G in batches)
            values, seconds = {}, {r: [] for r in ROUTES}
            for order in alternated(MATRIX_ROUNDS):
                for route in order:
                    with use(route):
                        t = time.perf_counter()
                        values[route] = np.concatenate([nuclear.nuclear_norms(G).ravel() for G in batches])
                        seconds[route].append(time.perf_counter() - t)
            ref = values["lapack"]
            nz = ref > 0
            rel = np.abs(values["kernel"][nz] - ref[nz]) / ref[nz]
            out[kind] = {
                "matrices": count,
                "shapes": len(batches),
                "largest_side": max(max(G.shape[-2:]) for G in batches),
                "max_rel_diff": float(rel.max()),
                "zero_matrices_equal": bool(np.all(values["kernel"][~nz] == ref[~nz])),
                "us_per_matrix": {r: 1e6 * float(np.median(s)) / count for r, s in seconds.items()},
                "runs_us_per_matrix": {r: [1e6 * x / count for x in s] for r, s in seconds.items()},
                "ratio_runs": round_ratios(seconds),
            }
            out[kind]["ratio"] = float(np.median(out[kind]["ratio_runs"]))
            print(f"{kind}: {count} matrices, max rel diff {out[kind]['max_rel_diff']:.1e}, "
                  f"{out[kind]['us_per_matrix']['lapack']:.1f} vs {out[kind]['us_per_matrix']['kernel']:.1f} us "
                  f"per matrix (ratio {out[kind]['ratio']:.2f})", flush=True)
    torch.set_num_threads(os.cpu_count() or 1)
    return out


def end_to_end(quick: bool) -> dict:
    """Wall time of each engine entry point, routes alternated round by round; each round's ratio and their median."""
    import socm_lib

    out = {}
    for name, (n_texts, d, reps) in END_TO_END[quick].items():
        clouds = common.synthetic_clouds(n_texts, d, seed=SEED)
        if name.startswith("socm_pairs"):
            call = lambda: socm_lib.socm_pairs(clouds, progress=False)  # noqa: E731
        elif name.startswith("socm_summary"):
            call = lambda: socm_lib.socm_summary(clouds, progress=False)  # noqa: E731
        else:
            half = n_texts // 2
            call = lambda: socm_lib.socm_cross(clouds[:half], clouds[half:], progress=False)  # noqa: E731
        with use("kernel"):
            socm_lib.socm_pairs(clouds[:60], progress=False)  # warm-up: thread pools, first-touch memory
        seconds, results = {r: [] for r in ROUTES}, {}
        for order in alternated(reps):
            for route in order:
                with use(route):
                    t = time.perf_counter()
                    results[route] = call()
                    seconds[route].append(time.perf_counter() - t)
                print(f"  {name}, {route}: {seconds[route][-1]:.2f} s", flush=True)
        entry = {"texts": n_texts, "d": d, "runs_s": seconds,
                 "median_s": {r: float(np.median(s)) for r, s in seconds.items()}, "ratio_runs": round_ratios(seconds)}
        entry["ratio"] = float(np.median(entry["ratio_runs"]))
        if hasattr(results["kernel"], "d_sigma"):
            a, b = results["kernel"].d_sigma, results["lapack"].d_sigma
            entry["pairs"] = len(a)
            entry["d_sigma_max_rel_diff"] = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
        out[name] = entry
        print(f"{name}: {n_texts} texts, LAPACK {entry['median_s']['lapack']:.2f} s, kernel "
              f"{entry['median_s']['kernel']:.2f} s, ratio {entry['ratio']:.2f} (rounds "
              f"{min(entry['ratio_runs']):.2f} to {max(entry['ratio_runs']):.2f})", flush=True)
    return out


def peak_worker(route: str, n_texts: int, d: int) -> dict:
    """In a fresh process: peak memory of ``socm_pairs`` over all pairs with one route."""
    import socm_lib

    clouds = common.synthetic_clouds(n_texts, d, seed=SEED)
    with use(route), common.PeakRSS() as peak:
        socm_lib.socm_pairs(clouds, progress=False)
    return {"peak_mib": peak.peak_mib}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run (targets not evaluated)")
    args, record, t0 = common.start(__file__, parser, argv)
    from socm_lib import nuclear

    with use("kernel"):
        record["kernel"] = {"variant": nuclear.kernel(), "variants_here": list(nuclear.variants()),
                            "report": nuclear.kernel_report()}
    record["settings"] = {
        "seed": SEED, "end_to_end": END_TO_END[args.quick], "matrix_texts": MATRIX_TEXTS[args.quick],
        "ratio": "median over the rounds of LAPACK's time / the kernel's time in the round (ratio_runs); each round "
                 "runs both routes once in one process, the order reversed every round",
        "matrix_rounds": MATRIX_ROUNDS,
        "per_matrix_threads": 1, "end_to_end_threads": "torch.get_num_threads() (every core)",
    }
    record["matrices"] = matrix_records(MATRIX_TEXTS[args.quick])
    record["end_to_end"] = end_to_end(args.quick)
    record["peak_memory_texts"] = PEAK_TEXTS[args.quick]
    record["peak_memory_mib"] = {r: common.run_isolated("bench_kernel", "peak_worker", route=r,
                                                        n_texts=PEAK_TEXTS[args.quick], d=384)["peak_mib"]
                                 for r in ROUTES}
    e2e, peaks = record["end_to_end"]["socm_pairs d=384"], record["peak_memory_mib"]
    worst = max(m["max_rel_diff"] for m in record["matrices"].values())
    full = not args.quick
    record["targets"] = {
        "exactness": {"target": "nuclear norms within 1e-12 of LAPACK's on every matrix of the four kinds",
                      "max_rel_err": worst, "non_finite": 0, "threshold": 1e-12, "met": bool(worst <= 1e-12)},
        "speedup_384": {"target": f"socm_pairs, all pairs of 1,000 texts at d = 384: at least {TARGET_RATIO}x "
                                  "LAPACK's route", "ratio": e2e["ratio"], "ratio_runs": e2e["ratio_runs"],
                        "threshold": TARGET_RATIO,
                        "met": bool(full and e2e["ratio"] >= TARGET_RATIO)},
        "peak_memory": {"target": f"socm_pairs peak memory ({PEAK_TEXTS[args.quick]} texts, d = 384) no higher than on "
                                  "LAPACK's route (4 MiB + 5 % for noise)",
                        "kernel_mib": peaks["kernel"], "lapack_mib": peaks["lapack"],
                        "met": bool(peaks["kernel"] <= 1.05 * peaks["lapack"] + 4)},
    }
    for t in record["targets"].values():
        t["evaluated"] = full
    path = common.finish(record, "kernel", t0)
    for name, t in record["targets"].items():
        shown = {k: v for k, v in t.items() if k not in ("target", "evaluated")}
        print(f"{name}: {t['target']}: {shown}")
    print(f"\nwrote {path} ({record['script_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
