"""Benchmark the sampled estimate against the exhaustive summary: the half-width reached per second.

    python benchmarks/bench_sampling.py            # full run (N up to 100,000 texts; about 12 minutes on 2 idle cores)
    python benchmarks/bench_sampling.py --quick    # smoke run (small sizes)

``socm_summary(clouds, target_halfwidth=h, seed=s)`` draws pairs uniformly without replacement until the mean SOCM's
95 % interval is at most +/- h (``socm_lib.sampling``); ``socm_summary(clouds)`` computes every pair. On the synthetic
clouds of ``common.synthetic_clouds`` (d = 384, 5 to 60 tokens, seed 0; the first N texts are the same at every N)
this script measures, for each number of texts N:

* **exhaustive**: the wall time of every pair (median of :data:`REPEATS` runs, every run recorded) for N up to
  :data:`EXHAUSTIVE_TEXTS`, and its exact mean SOCM; past that the time is *predicted* as the measured time per pair
  at the largest N measured times the number of pairs (marked ``predicted``; ``range_s`` from that point's fastest
  and slowest run);
* **sampled**: for each target half-width h (below 0.001 only up to :data:`FINE_TEXTS` texts), the wall time, the
  pairs drawn and the half-width reached, for
  :data:`REPEATS` seeds (their median, minimum and maximum are the spread), and, where the exhaustive mean is known,
  whether each interval covered it.

The time of a sampled estimate grows with the pairs drawn and with the texts they touch (each stage prepares their
factors), not with N(N-1)/2: N = 100,000 texts are 5e9 pairs. Writes ``benchmarks/results/sampling.json`` (with
``--quick``, a temporary folder).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SEED, D = 0, 384
#: Texts of the sampled runs, full and quick.
SAMPLED_TEXTS = {False: (1000, 2000, 5000, 10_000, 20_000, 100_000), True: (60, 120, 400)}
#: Texts whose every pair is computed (the rest are predicted from the largest). Up to 3,000 texts (4.5 million
#: pairs, about a minute a run on 2 idle cores), so that every exhaustive time is the median of REPEATS runs.
EXHAUSTIVE_TEXTS = {False: (1000, 2000, 3000), True: (60, 120)}
#: Target half-widths of the mean SOCM ...
TARGETS = {False: (0.003, 0.001, 0.0003), True: (0.01, 0.002)}
#: ... those below 0.001 only up to this many texts (about 10^5 pairs each, whose texts all need preparing: minutes).
FINE_TEXTS = 20_000
#: Seeds per sampled point (the spread), runs per exhaustive point below LONG_PAIRS pairs (one above: a larger
#: EXHAUSTIVE_TEXTS would quote a single run).
REPEATS = {False: 3, True: 2}
LONG_PAIRS = 5_000_000


def exhaustive(clouds, quick: bool) -> dict:
    """Every pair of ``clouds`` streamed by ``socm_summary``: run times and the exact figures."""
    import socm_lib

    pairs = len(clouds) * (len(clouds) - 1) // 2
    runs, result = [], None
    for _ in range(1 if pairs >= LONG_PAIRS else REPEATS[quick]):
        t = time.perf_counter()
        result = socm_lib.socm_summary(clouds, progress=False)
        runs.append(time.perf_counter() - t)
    return {"n_texts": len(clouds), "pairs": pairs, "runs_s": [round(r, 4) for r in runs],
            "median_s": float(np.median(runs)), "per_pair_us": 1e6 * float(np.median(runs)) / pairs,
            "predicted": False, "mean_socm": result.mean_socm, "median_socm": result.median_socm}


def sampled(clouds, h: float, quick: bool, exact: float | None) -> dict:
    """``REPEATS`` sampled estimates to +/- ``h`` (seeds 0, 1, ...): time, pairs, half-width, coverage of ``exact``."""
    import socm_lib

    runs = []
    for seed in range(REPEATS[quick]):
        t = time.perf_counter()
        r = socm_lib.socm_summary(clouds, target_halfwidth=h, seed=seed, progress=False)
        seconds = time.perf_counter() - t
        low, high = r.intervals["mean_socm"]
        runs.append({"seed": seed, "seconds": round(seconds, 4), "pairs": r.pairs, "stages": list(r.stages),
                     "halfwidth": r.halfwidth(), "mean_socm": r.mean_socm,
                     "std_socm": r.std_socm, "covers": None if exact is None else low <= exact <= high})
    seconds = [run["seconds"] for run in runs]
    return {"target_halfwidth": h, "runs": runs, "median_s": float(np.median(seconds)), "min_s": min(seconds),
            "max_s": max(seconds), "median_pairs": float(np.median([run["pairs"] for run in runs])),
            "halfwidth_per_s": float(np.median([1 / (run["halfwidth"] * run["seconds"]) for run in runs]))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args, record, t0 = common.start(__file__, parser, argv)
    quick = args.quick
    import socm_lib

    record["settings"] = {"seed": SEED, "d": D, "clouds": "synthetic, 5 to 60 tokens, float32 (benchmarks/common.py)",
                          "sampled": f"socm_summary(clouds, target_halfwidth=h, seed=s), seeds 0-{REPEATS[quick] - 1}",
                          "exhaustive": f"socm_summary(clouds): median of {REPEATS[quick]} runs, one from "
                                        f"{LONG_PAIRS:,} pairs up; predicted past {EXHAUSTIVE_TEXTS[quick][-1]:,} "
                                        "texts from the time per pair of the largest measured"}
    clouds = common.synthetic_clouds(max(SAMPLED_TEXTS[quick]), D, seed=SEED)
    socm_lib.socm_summary(clouds[:60], progress=False)  # warm-up: thread pools, first-touch memory
    socm_lib.socm_summary(clouds[:60], sample_pairs=100, seed=0, progress=False)
    points, measured = [], {}
    for n_texts in SAMPLED_TEXTS[quick]:
        pairs = n_texts * (n_texts - 1) // 2
        if n_texts in EXHAUSTIVE_TEXTS[quick]:
            print(f"  N = {n_texts:,}: every pair ({pairs:,}) ...", flush=True)
            measured[n_texts] = exhaustive(clouds[:n_texts], quick)
            full = measured[n_texts]
        else:
            largest = measured[max(measured)]
            full = {"n_texts": n_texts, "pairs": pairs, "predicted": True, "predicted_from": largest["n_texts"],
                    "median_s": largest["per_pair_us"] * 1e-6 * pairs, "per_pair_us": largest["per_pair_us"],
                    "range_s": [min(largest["runs_s"]) * pairs / largest["pairs"],
                                max(largest["runs_s"]) * pairs / largest["pairs"]]}
        exact = full.get("mean_socm")
        targets = []
        for h in (h for h in TARGETS[quick] if h >= 0.001 or n_texts <= FINE_TEXTS):
            print(f"  N = {n_texts:,}: sampled to +/- {h} ...", flush=True)
            targets.append(sampled(clouds[:n_texts], h, quick, exact))
            targets[-1]["speedup"] = full["median_s"] / targets[-1]["median_s"]
        points.append({"n_texts": n_texts, "pairs": pairs, "exhaustive": full, "sampled": targets})
    record["points"] = points
    covered = [run["covers"] for p in points for t in p["sampled"] for run in t["runs"] if run["covers"] is not None]
    record["coverage"] = {"intervals": len(covered), "covered": int(sum(covered)),
                          "note": "95 % intervals of the sampled runs whose exhaustive mean was measured"}
    common.finish(record, "sampling", t0)

    import pandas as pd

    rows = [{"texts": p["n_texts"], "pairs": p["pairs"], "target": t["target_halfwidth"],
             "pairs drawn": int(t["median_pairs"]), "sampled s": round(t["median_s"], 2),
             "spread s": f"{t['min_s']:.2f}-{t['max_s']:.2f}",
             "every pair s": round(p["exhaustive"]["median_s"], 1),
             "": "predicted" if p["exhaustive"]["predicted"] else "measured", "speed-up": round(t["speedup"], 1)}
            for p in points for t in p["sampled"]]
    common.print_table("Sampled estimate of the mean SOCM to +/- h against every pair (synthetic, d = 384)",
                       pd.DataFrame(rows))
    print(f"\nintervals covering the exhaustive mean: {record['coverage']['covered']} of "
          f"{record['coverage']['intervals']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
