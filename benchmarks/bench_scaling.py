"""Benchmark how socm_pairs scales: time and peak memory against the number of texts and against d.

A last row streams the largest all-pairs point (2,000 texts, 2 million pairs) through
``socm_summary`` instead, whose memory does not grow with the number of pairs, next to
``socm_pairs`` on the same clouds (the texts sweep's point).

    python benchmarks/bench_scaling.py            # full run (N up to 2,000 texts: 2 million pairs; about 5 minutes)
    python benchmarks/bench_scaling.py --quick    # smoke run (small sizes)
    python benchmarks/bench_scaling.py --point 3000   # only N = 3,000 texts (d = 384), both routes

``--point N`` measures socm_pairs and socm_summary on all pairs of N texts (d = 384) alone, each in a
fresh process as in the full run, prints their time and peak memory and writes
``benchmarks/results/scaling_point.json`` (with ``--quick``, into a temporary folder).

Every pair of N synthetic texts (5 to 60 tokens, ``common.synthetic_clouds``, seed 0; the first
N texts are the same at every N) is measured in a fresh process: a warm-up on a small problem,
then repeated runs (``repeats``: five where a run takes seconds, three from 400,000 pairs up), each
recorded, with the peak memory of the first run above the process's memory before it. No point is a
single run: every figure of the sweep is a median with its fastest and slowest run.

The point of 1,000 texts at d = 384 is the metric benchmark's all-pairs measurement (same clouds,
seed and method): ``run_all.py`` passes ``--reuse-metric`` with the metric.json its own run has just
written, so the book has one figure for that computation. Run alone, this script measures the point
itself, records so (``settings["point_1000"]``) and prints the metric.json figure beside its own, since
the two are then separate measurements of one computation.
The fitted exponents are the slopes of log median time and log memory against log N (all pairs:
about 2 expected) and against log d (the matrix products grow like d, the SVDs do not depend on
it); each time exponent comes with its 95 % interval (``socm_lib.viz.benchmarking.exponent_interval``).

Prints a table, writes ``benchmarks/results/scaling.json`` and draws ``benchmarks/results/scaling.png``
(with ``--quick``, into a temporary folder instead).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SEED = 0
SWEEPS = {
    False: {"texts": {"values": [100, 300, 1000, 2000], "fixed": 384},
            "dim": {"values": [128, 256, 384, 768, 1024], "fixed": 150}},
    True: {"texts": {"values": [40, 80], "fixed": 384},
           "dim": {"values": [128, 384], "fixed": 30}},
}
#: Texts of the socm_summary row (d = 384): the largest point of the texts sweep.
SUMMARY_TEXTS = {False: 2000, True: 80}
#: Runs per point: five where a run takes seconds, three from this many pairs up (a run of 2,000 texts takes about
#: half a minute on two cores, so that the whole of ``make bench`` stays near 25 minutes), two in a smoke run.
#: Never one: a point's spread is part of its figure.
LONG_PAIRS = 400_000
REPEATS = {"short": 5, "long": 3, "quick": 2}


def repeats(pairs: int, quick: bool) -> int:
    """Runs of a point of ``pairs`` pairs (``REPEATS``)."""
    return REPEATS["quick" if quick else "long" if pairs >= LONG_PAIRS else "short"]


def point_worker(n_texts: int, d: int, repeats: int, route: str = "socm_pairs") -> dict:
    """In a fresh process: all pairs of ``n_texts`` synthetic texts at dimension ``d``, ``repeats`` times,
    with ``socm_lib.socm_pairs`` (every pair's result kept) or ``socm_lib.socm_summary`` (streamed)."""
    import socm_lib
    import torch

    fn = getattr(socm_lib, route)
    clouds = common.synthetic_clouds(n_texts, d, seed=SEED)
    fn(clouds[:60], device="cpu", progress=False)  # warm-up
    runs, peak = [], None
    for k in range(repeats):
        with common.PeakRSS() as mem:
            t = time.perf_counter()
            fn(clouds, device="cpu", progress=False)
            runs.append(time.perf_counter() - t)
        if k == 0:
            peak = mem.peak_mib
    return {"n_texts": n_texts, "d": d, "pairs": n_texts * (n_texts - 1) // 2, "runs_s": [round(r, 4) for r in runs],
            "median_s": float(np.median(runs)), "peak_mib": float(peak), "threads": torch.get_num_threads(),
            "load_average_1min": common.load_average()}


def reusable_point(path: str, quick: bool) -> dict | None:
    """The all-pairs measurement of 1,000 synthetic texts at d = 384 from a full metric.json, as a scaling point.

    The metric benchmark measures exactly this point (same clouds, seed, warm-up, fresh process, peak
    memory of the first run), with three runs; reusing it saves the longest-but-one run of this script.
    """
    import json

    p = Path(path)
    if quick or not p.exists():
        return None
    metric = json.loads(p.read_text())
    ds = metric.get("datasets", {}).get("synthetic d=384")
    if metric.get("quick") or ds is None or ds["n_texts"] != 1000 or metric["settings"].get("seed") != SEED:
        return None
    a = ds["allpairs"]
    return {"n_texts": 1000, "d": 384, "pairs": a["pairs"], "runs_s": a["runs_s"], "median_s": a["median_s"],
            "peak_mib": a["peak_mib"], "threads": a["threads"], "load_average_1min": a["load_average_1min"],
            "source": f"metric.json of {metric['date']}"}


def metric_point_note(point: dict, reused: dict | None) -> str:
    """What the scaling record says about its point of 1,000 texts at d = 384 (``point``): reused, or measured here.

    Measured here, the note gives the metric benchmark's figure of the same computation from ``results/metric.json``
    (when a full one exists) beside this run's, so that a reader of the two files sees that they are two
    measurements.
    """
    if reused is not None:
        return f"the all-pairs measurement of {reused['source']} (same clouds and method)"
    note = (f"measured by this run ({point['median_s']:.2f} s, runs {min(point['runs_s']):.2f} to "
            f"{max(point['runs_s']):.2f}), not taken from the metric benchmark")
    other = reusable_point(str(common.RESULTS_DIR / "metric.json"), quick=False)
    if other is not None:
        note += (f"; {other['source']} measured the same computation at {other['median_s']:.2f} s "
                 f"(runs {min(other['runs_s']):.2f} to {max(other['runs_s']):.2f}): two separate measurements, which "
                 "run_all.py makes one by reusing the metric benchmark's")
    return note


def single_point(n_texts: int, quick: bool, record: dict, t0: float) -> int:
    """``--point N``: both routes on all pairs of ``n_texts`` texts at the texts sweep's d, one fresh process each."""
    if n_texts < 2:
        raise SystemExit(f"--point needs at least 2 texts, got {n_texts}.")
    d = SWEEPS[quick]["texts"]["fixed"]
    pairs = n_texts * (n_texts - 1) // 2
    record["point"] = {}
    for route in ("socm_pairs", "socm_summary"):
        print(f"  N = {n_texts:,} texts, d = {d}: {pairs:,} pairs with {route} ...", flush=True)
        row = common.run_isolated("bench_scaling", "point_worker", n_texts=n_texts, d=d,
                                  repeats=repeats(pairs, quick), route=route)
        record["point"][route] = row
        print(f"{route}, {n_texts:,} texts ({pairs:,} pairs): {row['median_s']:.2f} s, peak {row['peak_mib']:.0f} MiB",
              flush=True)
    path = common.finish(record, "scaling_point", t0)
    print(f"wrote {path} ({record['script_seconds']} s)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--reuse-metric", metavar="JSON", help="take the point N = 1,000, d = 384 from this "
                        "metric.json (same clouds, measured the same way) instead of measuring it again")
    parser.add_argument("--point", type=int, metavar="N", help="measure only all pairs of N texts (d = 384) with "
                        "socm_pairs and socm_summary, print time and peak memory, write results/scaling_point.json")
    args, record, t0 = common.start(__file__, parser, argv)
    record["settings"] = {"seed": SEED, "clouds": "synthetic, 5 to 60 tokens, float32 (benchmarks/common.py)",
                          "timing": (f"median of {REPEATS['quick']} runs after a warm-up" if args.quick else
                                     f"median of {REPEATS['short']} runs after a warm-up; {REPEATS['long']} runs from "
                                     f"{LONG_PAIRS:,} pairs up"),
                          "memory": "peak RSS of the first run above the RSS before it, fresh process per point"}
    if args.point is not None:
        return single_point(args.point, args.quick, record, t0)
    reused = reusable_point(args.reuse_metric, args.quick) if args.reuse_metric else None
    from socm_lib.viz import benchmarking

    for sweep, spec in SWEEPS[args.quick].items():
        points = []
        for v in spec["values"]:
            n_texts, d = (v, spec["fixed"]) if sweep == "texts" else (spec["fixed"], v)
            pairs = n_texts * (n_texts - 1) // 2
            if reused is not None and (n_texts, d) == (reused["n_texts"], reused["d"]):
                print(f"  N = {n_texts:,} texts, d = {d}: taken from {args.reuse_metric}", flush=True)
                points.append(reused)
                continue
            print(f"  N = {n_texts:,} texts, d = {d}: {pairs:,} pairs ...", flush=True)
            points.append(common.run_isolated("bench_scaling", "point_worker", n_texts=n_texts, d=d,
                                              repeats=repeats(pairs, args.quick)))
        key = "n_texts" if sweep == "texts" else "d"
        x = [p[key] for p in points]
        medians = [p["median_s"] for p in points]
        b_t, a_t = benchmarking.fit_power_law(x, medians)
        b_m, a_m = benchmarking.fit_power_law(x, [max(p["peak_mib"], 1e-3) for p in points])
        record[sweep] = {
            "fixed": {"d": spec["fixed"]} if sweep == "texts" else {"n_texts": spec["fixed"]},
            "points": points, "time_exponent": b_t, "time_factor": a_t, "memory_exponent": b_m, "memory_factor": a_m,
            "time_exponent_interval": list(benchmarking.exponent_interval(x, medians)),
            "fit": "least squares of log(median time) and log(peak memory) on log(x) over all points; the time "
                   "exponent's interval is the 95 % t-interval of that slope (points - 2 degrees of freedom)",
        }
        if sweep == "texts":  # per pair, the cost should be flat: time / pairs against pairs
            record[sweep]["time_exponent_per_pair_count"] = benchmarking.fit_power_law(
                [p["pairs"] for p in points], [p["median_s"] for p in points])[0]
    n_texts, d = SUMMARY_TEXTS[args.quick], SWEEPS[args.quick]["texts"]["fixed"]
    pairs = n_texts * (n_texts - 1) // 2
    print(f"  N = {n_texts:,} texts, d = {d}: {pairs:,} pairs summarised with socm_summary ...", flush=True)
    streamed = common.run_isolated("bench_scaling", "point_worker", n_texts=n_texts, d=d,
                                   repeats=repeats(pairs, args.quick), route="socm_summary")
    kept = next(p for p in record["texts"]["points"] if (p["n_texts"], p["d"]) == (n_texts, d))
    record["summary"] = {**streamed, "route": "socm_summary",
                         "socm_pairs": {k: kept[k] for k in ("median_s", "peak_mib", "runs_s")}}
    point = next((p for p in record["texts"]["points"] if (p["n_texts"], p["d"]) == (1000, 384)), None)
    if point is not None:
        record["settings"]["point_1000"] = metric_point_note(point, reused)
        print(f"the point N = 1,000, d = 384: {record['settings']['point_1000']}", flush=True)
    path = common.finish(record, "scaling", t0)

    import matplotlib

    matplotlib.use("Agg")
    fig = benchmarking.plot_scaling(record)
    png = common.results_dir(args.quick) / "scaling.png"
    # the figure names the record it was drawn from: tests/test_benchmarking.py checks that the committed pair match
    fig.savefig(png, dpi=120, metadata={"Source": benchmarking.drawn_from(path)})

    common.print_table("Scaling of socm_pairs (all pairs, synthetic clouds)", benchmarking.scaling_table(record))
    print(f"\nfitted exponents: time ~ N^{record['texts']['time_exponent']:.2f} (95 % interval "
          f"{record['texts']['time_exponent_interval']}), memory ~ "
          f"N^{record['texts']['memory_exponent']:.2f} (d = {record['texts']['fixed']['d']}); time ~ "
          f"d^{record['dim']['time_exponent']:.2f}, memory ~ d^{record['dim']['memory_exponent']:.2f} "
          f"(N = {record['dim']['fixed']['n_texts']:,})")
    row = record["summary"]
    print(f"socm_summary, {row['n_texts']:,} texts ({row['pairs']:,} pairs): {row['median_s']:.2f} s, peak "
          f"{row['peak_mib']:.0f} MiB; socm_pairs on the same clouds: {row['socm_pairs']['median_s']:.2f} s, peak "
          f"{row['socm_pairs']['peak_mib']:.0f} MiB")
    print(f"wrote {path} and {png} ({record['script_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
