r"""Read, tabulate and plot the benchmark results (``benchmarks/results/*.json``; notebook 9).

The benchmark scripts in ``benchmarks/`` measure and write JSON; the same functions here
turn those files into the tables the scripts print and the notebook shows, and draw the
scaling figure, so that the two never disagree. Nothing in this module times anything.

* :func:`load_results` -- the three result files as dicts;
* :func:`metric_table`, :func:`allpairs_table`, :func:`extraction_table`, :func:`scaling_table`,
  :func:`targets_table` -- tables as DataFrames of fixed-format strings;
* :func:`noise_verdict` -- what a target met by its median figure still misses (:func:`within_noise`: whether it does);
* :func:`speedups_per_process` -- socm_pairs' speed-up against each process that timed a slow route;
* :func:`cluster_seconds` -- the Dask cluster model of chapter 6, and :func:`cluster_projection`, its projection
  from distributed.json with the range that the fastest and the slowest measured inputs give;
* :func:`fit_power_law` -- the exponent :math:`b` of :math:`y \approx a x^b` (least squares in log-log), and
  :func:`exponent_interval`, its confidence interval;
* :func:`plot_scaling` -- time and peak memory of ``socm_pairs`` against the number of texts and against ``d``.

Every timing of the result files is a list of repeated runs (``runs_s``) with their median (``median_s``); the
tables give the median with the fastest and the slowest run (:func:`run_range`), so that a figure and its spread
travel together, and say how many runs there were.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..report import RESULT_NAMES, RESULTS_URL, load_results  # re-exported for the notebooks



# ----------------------------------------------------------------------------- formatting
def rate(x) -> str:
    """A throughput or ratio: thousands separators from 100 up, 2 decimals from 1, 3 significant digits below."""
    if x is None:
        return "-"
    x = float(x)
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def sci(x) -> str:
    """An error in scientific notation with two significant digits (``-`` when absent)."""
    return "-" if x is None else f"{float(x):.1e}"


def seconds(x) -> str:
    """A duration in seconds with two decimals (``-`` for a missing value)."""
    return "-" if x is None else f"{float(x):.2f}"


def run_range(runs, show=seconds) -> str:
    """The smallest and the largest figure of repeated runs, ``"min-max"`` (``"single run"`` for one).

    ``runs`` are the runs' seconds, or a figure of each run such as a speed ratio; ``show`` formats one figure
    (:func:`seconds` by default, :func:`rate` for ratios).
    """
    runs = [float(r) for r in runs]
    if len(runs) == 1:
        return "single run"
    return f"{show(min(runs))}-{show(max(runs))}"


def mib(x) -> str:
    """A memory size in MiB, whole, with thousands separators (``-`` for a missing value)."""
    return "-" if x is None else f"{float(x):,.0f}"


def yes_no(met: bool, evaluated: bool = True) -> str:
    """A target's verdict: ``met``, ``MISSED``, or ``not evaluated (quick run)``."""
    if not evaluated:
        return "not evaluated (quick run)"
    return "met" if met else "MISSED"


# ----------------------------------------------------------------------------- tables
def metric_table(metric: dict) -> pd.DataFrame:
    """One row per dataset and route: pairs timed, pairs/s, speed ratio of socm_pairs, largest errors.

    "socm_pairs speed-up" divides socm_pairs' pairs/s over every pair of the same texts by the route's
    pairs/s; "same pairs" divides socm_pairs' pairs/s when called on exactly the route's subsample
    (fixed cost per call included) by the route's. A route timed in several fresh processes (the paper's) has
    its speed-up's range, from its fastest process to its slowest (:func:`speedups_per_process`), and their
    number; a route timed in one process says so. "timing" is how the record says each route was timed (for
    example "median over 10 single pairs after a warm-up, in one fresh process"). Errors are against the
    float64 reference, over the pairs "errors over pairs" counts (a random sample of a corpus's pairs where
    checking every pair would take too long).
    """
    rows = []
    for ds_name, ds in metric["datasets"].items():
        for r in ds["routes"]:
            if r.get("status", "ok") != "ok":
                rows.append({"data": ds_name, "route": r["route"], "pairs": "-", "pairs/s": "-",
                             "socm_pairs speed-up": r["status"], "speed-up min-max": "-", "processes": "-",
                             "same pairs": "-", "max abs err d_sigma": "-",
                             "max rel err d_sigma": "-", "max rel err SOCM": "-", "non-finite": "-",
                             "errors over pairs": "-", "timing": "-"})
                continue
            e = r["errors"]
            same = r.get("speed_ratio_same_pairs")
            processes = len(r.get("pairs_per_s_per_process", []))
            rows.append({
                "data": ds_name, "route": r["route"], "pairs": f"{r['pairs']:,}", "pairs/s": rate(r["pairs_per_s"]),
                "socm_pairs speed-up": "-" if r["speed_ratio"] is None else rate(r["speed_ratio"]) + "x",
                "speed-up min-max": (run_range(speedups_per_process(r), rate) + "x" if processes > 1
                                     else "one process" if processes == 1 else "-"),
                "processes": str(processes) if processes else "-",
                "same pairs": "-" if same is None else rate(same) + "x",
                "max abs err d_sigma": sci(e["d_sigma"]["max_abs"]), "max rel err d_sigma": sci(e["d_sigma"]["max_rel"]),
                "max rel err SOCM": sci(e["socm"]["max_rel"]),
                "non-finite": str(max(e[k]["non_finite"] for k in ("d_mu", "d_sigma", "socm"))),
                "errors over pairs": f"{e['d_sigma'].get('n', r['pairs']):,}",  # a random sample where not every pair was checked
                "timing": r.get("timing", "-"),
            })
    return pd.DataFrame(rows)


def speedups_per_process(route: dict, same_pairs: bool = False) -> list[float]:
    """socm_pairs' speed-up per pair against each fresh process that timed a d x d route of metric.json.

    socm_pairs' pairs/s (over every pair, or with ``same_pairs`` on the route's own subsample) divided by each
    process's pairs/s. With an odd number of processes their median is the route's recorded ``speed_ratio`` (the
    denominator is the median process); the smallest is the speed-up against the route's fastest process and the
    largest against its slowest.
    """
    per_process = route["pairs_per_s_per_process"]
    socm = route["socm_pairs_per_s_same_pairs"] if same_pairs else route["speed_ratio"] * route["pairs_per_s"]
    return [socm / x for x in per_process]


def cluster_seconds(pairs: int, blocks: int, workers: int, *, pair_s: float, block_s: float, serial_s: float,
                    task_s: float) -> float:
    r"""Wall time of ``socm_summary`` on a Dask cluster by chapter 6's model (seconds).

    .. math:: T_k = t_{\mathrm{serial}} + \max\Big(\frac{P\,t_{\mathrm{pair}} + B\,t_{\mathrm{block}}}{k},\;
              B\,t_{\mathrm{task}}\Big)

    for :math:`P` pairs in :math:`B` blocks on :math:`k` workers of one core each: the workers share the pairs'
    work and the blocks' overhead, while the scheduler hands out the :math:`B` tasks one after another.
    """
    if min(pairs, blocks, workers) < 1:
        raise ValueError(f"pairs, blocks and workers must be at least 1; got {pairs}, {blocks}, {workers}.")
    return serial_s + max((pairs * pair_s + blocks * block_s) / workers, blocks * task_s)


def cluster_projection(distributed: dict) -> dict[int, tuple[float, float, float]]:
    """The projection of distributed.json for each worker count: (median, fastest, slowest) seconds.

    The median uses the median of each measured input, as the benchmark's ``prediction`` does (so it reproduces
    the recorded seconds); the fastest takes the smallest per-pair and per-block times over the runs (whose times
    are recorded to the microsecond), the slowest the largest. The caller's serial work and
    the scheduler's time per task were timed once, so they carry no range.
    """
    settings, prediction = distributed["settings"], distributed["prediction"]
    pair_s = [(run - distributed["serial_s"]) / settings["pairs"] for run in distributed["single_one_core"]["runs_s"]]
    block_s = distributed["overhead_per_block_s"]["runs_s"]
    median_pair_s = (distributed["single_one_core"]["median_s"] - distributed["serial_s"]) / settings["pairs"]
    inputs = {"median": (median_pair_s, distributed["overhead_per_block_s"]["median_s"]),
              "fastest": (min(pair_s), min(block_s)), "slowest": (max(pair_s), max(block_s))}
    return {int(k): tuple(cluster_seconds(prediction["pairs"], prediction["blocks"], int(k), pair_s=c, block_s=h,
                                          serial_s=prediction["serial_s"], task_s=distributed["scheduler_task_s"])
                          for c, h in inputs.values())
            for k in prediction["seconds"]}


def allpairs_table(metric: dict) -> pd.DataFrame:
    """Every pair of each dataset: wall time, pairs/s, peak memory, and where the time goes.

    "matmul s" and "SVD s" are the time spent in the cross-Gram products and in the SVDs, summed over
    the cores and divided by their number (the steps overlap: each core takes whole blocks of work);
    "other s" is the rest of the wall time (preparation, bookkeeping, idle cores). "max rel err (d_mu, d_sigma,
    SOCM)" is the largest of the three figures' largest relative errors, over the "pairs checked".

    "one svd call per pair s" is the time the SVDs take as one ``numpy.linalg.svd`` call per pair (unpadded
    cross-Grams, each call with numpy's own overhead) on all cores; the compiled lane kernel
    (:mod:`socm_lib.nuclear`, many matrices at once) takes less.
    """
    rows = []
    for ds_name, ds in metric["datasets"].items():
        a = ds["allpairs"]
        p = a.get("profile", {})
        rows.append({
            "data": ds_name, "texts": f"{ds['n_texts']:,}", "d": str(ds["d"]), "pairs": f"{a['pairs']:,}",
            "seconds (median)": seconds(a["median_s"]), "min-max s": run_range(a["runs_s"]),
            "runs": str(len(a["runs_s"])), "pairs/s": rate(a["pairs_per_s"]), "peak MiB": mib(a["peak_mib"]),
            "matmul s": seconds(p.get("matmul_s")), "SVD s": seconds(p.get("svd_s")), "other s": seconds(p.get("other_s")),
            "one svd call per pair s": seconds(a.get("svd_floor", {}).get("floor_s")),
            "max rel err (d_mu, d_sigma, SOCM)": sci(max(a["errors"][k]["max_rel"] for k in ("d_mu", "d_sigma", "socm"))),
            "pairs checked": f"{a['pairs_checked']:,}",
        })
    return pd.DataFrame(rows)


def extraction_table(extraction: dict) -> pd.DataFrame:
    """One row per text set and extractor: texts, tokens, tokens/s, speed-up, peak memory, largest difference.

    "socm_lib speed-up" is read as in :func:`metric_table`: socm_lib's speed over the row's extractor, so 1.00x in
    socm_lib's own row and, in sentence-transformers' row, the median of the per-run ratios (the two extractors
    alternate, one ratio a run); "speed-up min-max" gives the smallest and the largest of them, "runs" the runs of
    the row's extractor.
    """
    rows = []
    for ds_name, ds in extraction["datasets"].items():
        ours = next((r for r in ds["routes"] if r["route"].startswith("socm_lib")), None)
        per_run = ours.get("speed_ratios_per_run") if ours else None
        for r in ds["routes"]:
            if r.get("status", "ok") != "ok":
                rows.append({"texts": ds_name, "extractor": r["route"], "n texts": f"{ds['n_texts']:,}",
                             "tokens": f"{ds['tokens']:,}", "tokens/s": "-", "socm_lib speed-up": r["status"],
                             "speed-up min-max": "-", "runs": "-", "peak MiB": "-", "max abs diff": "-"})
                continue
            own = r is ours
            rows.append({
                "texts": ds_name, "extractor": r["route"], "n texts": f"{ds['n_texts']:,}", "tokens": f"{ds['tokens']:,}",
                "tokens/s": rate(r["tokens_per_s"]),
                "socm_lib speed-up": rate(1.0 if own else 1.0 / r["speed_ratio"]) + "x",
                "speed-up min-max": run_range(per_run, rate) if per_run and not own else "-",
                "runs": str(len(r["runs_s"])), "peak MiB": mib(r.get("peak_mib")), "max abs diff": sci(r.get("max_abs_diff")),
            })
    return pd.DataFrame(rows)


def scaling_table(scaling: dict) -> pd.DataFrame:
    """Time and peak memory of socm_pairs at each measured size, and of socm_summary where it was measured.

    The last row (sweep ``summary``), present when the record has it, streams the largest all-pairs point
    through ``socm_summary``, whose memory does not grow with the number of pairs.
    """
    points = [("texts" if sweep == "texts" else "d", p) for sweep in ("texts", "dim") for p in scaling[sweep]["points"]]
    if "summary" in scaling:
        points.append(("summary", scaling["summary"]))
    return pd.DataFrame([{
        "sweep": sweep, "texts": f"{p['n_texts']:,}", "d": str(p["d"]), "pairs": f"{p['pairs']:,}",
        "seconds (median)": seconds(p["median_s"]), "min-max s": run_range(p["runs_s"]), "runs": str(len(p["runs_s"])),
        "pairs/s": rate(p["pairs"] / p["median_s"]), "peak MiB": mib(p["peak_mib"]),
    } for sweep, p in points])


def noise_verdict(target: dict) -> str | None:
    """What a target met by its median figure still misses, in words; ``None`` where it is met clearly or missed.

    The baseline's speed varies between fresh processes, and a figure between runs; where the threshold lies
    inside that spread, "met" holds only in part, and the verdict says which part: "met by the median run only,
    not by every run" where the figure of some run misses the threshold, "met against the baseline's median
    process only, not against its fastest" where the ratio against the baseline's fastest process misses it.
    ``target["runs"]``, where present, holds the figure of each run (a ratio: higher is better; seconds: lower is
    better).
    """
    runs, threshold = target.get("runs"), target.get("threshold")
    if threshold is None:  # a target judged otherwise (peak memory against the baseline's): no noise to weigh
        return None
    parts = []
    if "ratio" in target:
        if target["ratio"] >= threshold:
            if runs and min(runs) < threshold:
                parts.append("by the median run only, not by every run")
            fastest = target.get("ratio_vs_fastest_process")
            if fastest is not None and fastest < threshold:
                parts.append("against the baseline's median process only, not against its fastest")
    elif "seconds" in target and runs and target["seconds"] <= threshold < max(runs):
        parts.append("by the median run only, not by every run")
    return "met " + ", and ".join(parts) if parts else None


def within_noise(target: dict) -> bool:
    """Whether a target met by its median figure is missed by one of its runs or against the baseline's fastest process
    (:func:`noise_verdict` says which)."""
    return noise_verdict(target) is not None


def targets_table(targets: dict) -> pd.DataFrame:
    """Each target with the measured figure and whether it is met.

    A speed target is judged on the median speed of the baseline over its fresh processes; where the
    record has it, the ratio against the fastest of those processes (the baseline at its best) follows,
    and a target met against the median but not against the fastest, or not by every run, gets the verdict of
    :func:`noise_verdict`, which says what holds. A target with ``runs`` (the figure of each run) gives their range.
    """
    rows = []
    for key, t in targets.items():
        runs = t.get("runs")
        if "ratio" in t:
            measured = f"{rate(t['ratio'])}x (threshold {rate(t['threshold'])}x)"
            if runs:
                measured += f"; from {rate(min(runs))}x to {rate(max(runs))}x over {len(runs)} runs"
            if t.get("ratio_vs_fastest_process") is not None:
                measured += f"; {rate(t['ratio_vs_fastest_process'])}x against the baseline's fastest process"
        elif "seconds" in t:
            measured = f"{seconds(t['seconds'])} s (threshold {t['threshold']} s)"
            if runs:
                measured += f"; from {seconds(min(runs))} to {seconds(max(runs))} s over {len(runs)} runs"
        elif "max_rel_err" in t:
            measured = f"max rel err {sci(t['max_rel_err'])} (threshold {sci(t['threshold'])})"
        elif "max_abs_diff" in t:
            measured = f"max abs diff {sci(t['max_abs_diff'])} (threshold {sci(t['threshold'])})"
        else:
            measured = "-"
        status = yes_no(t["met"], t.get("evaluated", True))
        if status == "met":
            status = noise_verdict(t) or status
        rows.append({"target": t["target"], "measured": measured, "status": status})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- scaling
def fit_power_law(x, y) -> tuple[float, float]:
    """Exponent ``b`` and factor ``a`` of ``y ~ a x^b`` by least squares on ``log y`` against ``log x``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2 or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("fit_power_law needs at least two points with positive x and y.")
    b, log_a = np.polyfit(np.log(x), np.log(y), 1)
    return float(b), float(np.exp(log_a))


def exponent_interval(x, y, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval of the exponent ``b`` of :func:`fit_power_law`: the t-interval of a least-squares slope.

    With ``k`` points the slope of ``log y`` on ``log x`` has the standard error of ordinary least squares, and the
    interval is ``b -/+ t * se`` with the ``(1 + level)/2`` quantile of Student's t with ``k - 2`` degrees of freedom
    (``scipy.stats.linregress``). It measures how far the points stray from one power law, not the noise of each
    point. Two points determine the line exactly: the interval is then ``(nan, nan)``.
    """
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2 or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("exponent_interval needs at least two points with positive x and y.")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}.")
    if len(x) < 3:
        return float("nan"), float("nan")
    fit = stats.linregress(np.log(x), np.log(y))
    half = stats.t.ppf((1 + level) / 2, len(x) - 2) * fit.stderr
    return float(fit.slope - half), float(fit.slope + half)


def _exponent_label(what: str, b: float, interval) -> str:
    if interval is None or not np.all(np.isfinite(np.asarray(interval, dtype=float))):
        return f"{what} (exponent {b:.2f})"
    return f"{what} (exponent {b:.2f} [{interval[0]:.2f}, {interval[1]:.2f}])"


def drawn_from(record_path) -> str:
    """The line a figure drawn from a result file carries in its metadata: the file's name and SHA-256.

    ``benchmarks/bench_scaling.py`` writes it into ``scaling.png`` (PNG text chunk ``Source``), so that a test can
    tell a figure drawn from the committed ``scaling.json`` from one left over from an earlier run.
    """
    import hashlib
    from pathlib import Path

    path = Path(record_path)
    return f"{path.name} sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}"


def plot_scaling(scaling: dict):
    """Two panels, log-log: seconds and peak MiB of socm_pairs against the number of texts, and against ``d``.

    Each time point is the median of its runs, with a bar from the fastest to the slowest run; a point measured
    once is drawn hollow. Dashed lines are the fitted power laws recorded in ``scaling``, and the legend gives each
    exponent with its 95 % interval where the record has one. Returns the Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, sweep, xkey, xlabel in ((axes[0], "texts", "n_texts", "number of texts N"),
                                     (axes[1], "dim", "d", "embedding dimension d")):
        s = scaling[sweep]
        x = np.array([p[xkey] for p in s["points"]], dtype=float)
        t = np.array([p["median_s"] for p in s["points"]])
        m = np.array([p["peak_mib"] for p in s["points"]])
        ax.loglog(x, t, "o-", color="C0",
                  label=_exponent_label("time", s["time_exponent"], s.get("time_exponent_interval")))
        xx = np.geomspace(x.min(), x.max(), 50)
        ax.loglog(xx, s["time_factor"] * xx ** s["time_exponent"], "--", color="C0", alpha=0.5)
        runs = [np.asarray(p["runs_s"], dtype=float) for p in s["points"]]
        ax.vlines(x, [r.min() for r in runs], [r.max() for r in runs], color="C0", lw=2, alpha=0.6)
        once = np.array([len(r) == 1 for r in runs])
        if once.any():
            ax.loglog(x[once], t[once], "o", color="C0", mfc="white", label="a single run")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("seconds (median)", color="C0")
        ax2 = ax.twinx()
        ax2.loglog(x, np.maximum(m, 1e-3), "s-", color="C1", label=f"peak memory (exponent {s['memory_exponent']:.2f})")
        ax2.loglog(xx, s["memory_factor"] * xx ** s["memory_exponent"], "--", color="C1", alpha=0.5)
        ax2.set_ylabel("peak memory above baseline (MiB)", color="C1")
        for a, y in ((ax, t), (ax2, m)):
            narrow = np.max(y) / max(np.min(y), 1e-12) < 10  # less than a decade: label more ticks
            subs = tuple(float(k) for k in range(1, 10)) if narrow else (1.0, 2.0, 5.0)
            a.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
            a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            a.yaxis.set_minor_formatter(NullFormatter())
        fixed = f"d = {s['fixed']['d']}" if sweep == "texts" else f"N = {s['fixed']['n_texts']:,} texts"
        ax.set_title(f"socm_pairs, all pairs ({fixed})")
        lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
        ax.legend(lines, labels, loc="upper left", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels([f"{int(v):,}" for v in x])
        ax.minorticks_off()
    return fig
