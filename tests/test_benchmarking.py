"""Tests of socm_lib.viz.benchmarking (reading, tabulating and plotting benchmark results) and of the committed results."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from socm_lib.viz import benchmarking  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _scaling_sweep(key, xs, a, b, fixed):
    points = []
    for x in xs:
        n_texts = x if key == "n_texts" else 100
        points.append({"n_texts": n_texts, "d": x if key == "d" else 384, "pairs": n_texts * (n_texts - 1) // 2,
                       "median_s": a * x**b, "runs_s": [a * x**b] * 3, "peak_mib": 0.5 * x})
    return {"points": points, "time_exponent": b, "time_factor": a, "memory_exponent": 1.0,
            "memory_factor": 0.5, "fixed": fixed}


@pytest.fixture
def scaling():
    return {"texts": _scaling_sweep("n_texts", [100, 300, 1000], 2e-6, 2.0, {"d": 384}),
            "dim": _scaling_sweep("d", [128, 384, 768], 1e-3, 0.5, {"n_texts": 300})}


# ----------------------------------------------------------------------------- fit_power_law
@pytest.mark.parametrize("a,b", [(3.0, 1.7), (0.02, 2.0), (5.0, -0.5)])
def test_fit_power_law_recovers_exact_power_laws(a, b):
    x = np.array([10.0, 30.0, 100.0, 300.0])
    b_hat, a_hat = benchmarking.fit_power_law(x, a * x**b)
    assert b_hat == pytest.approx(b, abs=1e-10)
    assert a_hat == pytest.approx(a, rel=1e-10)


def test_fit_power_law_is_least_squares_in_log_log():
    x, y = np.array([1.0, 2.0, 4.0]), np.array([1.0, 5.0, 12.0])
    b_hat, a_hat = benchmarking.fit_power_law(x, y)
    design = np.stack([np.log(x), np.ones(3)], axis=1)
    b_ref, log_a_ref = np.linalg.lstsq(design, np.log(y), rcond=None)[0]
    assert b_hat == pytest.approx(b_ref, abs=1e-12)
    assert a_hat == pytest.approx(np.exp(log_a_ref), rel=1e-12)


@pytest.mark.parametrize("x,y", [([1.0], [2.0]), ([1.0, 0.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, -1.0])])
def test_fit_power_law_rejects_unusable_points(x, y):
    with pytest.raises(ValueError, match="positive"):
        benchmarking.fit_power_law(x, y)


# ----------------------------------------------------------------------------- exponent_interval
def test_exponent_interval_is_the_t_interval_of_the_least_squares_slope():
    x = np.array([100.0, 300.0, 1000.0, 3000.0])
    y = np.array([0.34, 1.18, 5.3, 74.8])
    low, high = benchmarking.exponent_interval(x, y)
    lx, ly = np.log(x), np.log(y)
    b = np.polyfit(lx, ly, 1)[0]
    residuals = ly - np.polyval(np.polyfit(lx, ly, 1), lx)
    se = np.sqrt(residuals @ residuals / (len(x) - 2) / ((lx - lx.mean()) @ (lx - lx.mean())))
    half = 4.302652729911275 * se  # Student's t, 2 degrees of freedom, 0.975 quantile
    assert (low, high) == pytest.approx((b - half, b + half), rel=1e-9)
    assert low < benchmarking.fit_power_law(x, y)[0] < high


def test_exponent_interval_covers_the_true_exponent_of_noisy_power_laws():
    rng = np.random.default_rng(0)
    x = np.geomspace(100, 3000, 5)
    covered = 0
    for _ in range(200):
        low, high = benchmarking.exponent_interval(x, 2e-6 * x**2 * np.exp(0.1 * rng.standard_normal(5)))
        covered += low <= 2.0 <= high
    assert 0.9 <= covered / 200 <= 0.99  # a 95 % interval


def test_exponent_interval_needs_three_points_and_a_level():
    assert all(np.isnan(benchmarking.exponent_interval([1.0, 2.0], [1.0, 4.0])))
    with pytest.raises(ValueError, match="level"):
        benchmarking.exponent_interval([1.0, 2.0, 3.0], [1.0, 4.0, 9.0], level=95)
    with pytest.raises(ValueError, match="positive"):
        benchmarking.exponent_interval([1.0, 2.0, 3.0], [1.0, -4.0, 9.0])


# ----------------------------------------------------------------------------- formatting
def test_run_range_gives_fastest_and_slowest_or_says_single_run():
    assert benchmarking.run_range([5.29, 5.41, 5.2]) == "5.20-5.41"
    assert benchmarking.run_range([8.4616]) == "single run"


@pytest.mark.parametrize("x,text", [(None, "-"), (1234.4, "1,234"), (100.0, "100"), (2.5, "2.50"), (0.012345, "0.0123")])
def test_rate_formats_by_magnitude(x, text):
    assert benchmarking.rate(x) == text


def test_a_target_met_only_against_the_median_process_is_within_noise():
    close = {"target": "fast", "ratio": 1527.0, "ratio_vs_fastest_process": 1457.0, "threshold": 1500, "met": True,
             "evaluated": True}
    clear = dict(close, ratio_vs_fastest_process=1510.0)
    table = benchmarking.targets_table({"close": close, "clear": clear})
    assert list(table["status"]) == ["met against the baseline's median process only, not against its fastest", "met"]
    assert benchmarking.within_noise(close) and not benchmarking.within_noise(clear)


def test_a_target_met_by_its_median_run_but_not_by_every_run_is_within_noise_and_shows_the_range():
    ratio = {"target": "fast", "ratio": 1.15, "runs": [0.91, 1.15, 1.16], "threshold": 1.0, "met": True}
    seconds = {"target": "quick", "seconds": 6.8, "runs": [6.3, 6.8, 21.0], "threshold": 20, "met": True}
    clear = dict(ratio, runs=[1.05, 1.15, 1.16])
    assert benchmarking.within_noise(ratio) and benchmarking.within_noise(seconds)
    assert not benchmarking.within_noise(clear) and not benchmarking.within_noise(dict(seconds, runs=[6.3, 6.8, 7.5]))
    table = benchmarking.targets_table({"ratio": ratio, "seconds": seconds})
    measured = table["measured"]
    assert "from 0.91x to 1.16x over 3 runs" in measured[0] and "from 6.30 to 21.00 s over 3 runs" in measured[1]
    # the verdict names only what applies: no baseline process here, so no word about one
    assert list(table["status"]) == ["met by the median run only, not by every run"] * 2


def test_noise_verdict_names_each_way_a_target_falls_short_and_nothing_for_a_clear_or_missed_one():
    both = {"target": "fast", "ratio": 1527.0, "ratio_vs_fastest_process": 1457.0, "runs": [1490.0, 1527.0, 1600.0],
            "threshold": 1500, "met": True}
    assert benchmarking.noise_verdict(both) == ("met by the median run only, not by every run, and against the "
                                                "baseline's median process only, not against its fastest")
    assert benchmarking.noise_verdict(dict(both, runs=[1510.0, 1527.0], ratio_vs_fastest_process=1501.0)) is None
    missed = dict(both, ratio=1400.0, met=False)
    assert benchmarking.noise_verdict(missed) is None and not benchmarking.within_noise(missed)
    assert benchmarking.noise_verdict({"target": "exact", "max_rel_err": 3e-14, "threshold": 1e-9, "met": True}) is None
    peak = {"target": "peak memory no higher than LAPACK's", "kernel_mib": 124.1, "lapack_mib": 144.8, "met": True}
    assert benchmarking.noise_verdict(peak) is None  # judged without a threshold: nothing to weigh against noise


def test_metric_table_gives_each_route_its_timing_and_marks_a_single_process():
    errors = {k: {"max_abs": 1e-15, "max_rel": 1e-14, "non_finite": 0} for k in ("d_mu", "d_sigma", "socm")}
    one = {"route": "scipy", "pairs": 10, "pairs_per_s": 6.0, "pairs_per_s_per_process": [6.0], "speed_ratio": 12000.0,
           "timing": "median over 10 single pairs after a warm-up, in each of 1 fresh process", "errors": errors}
    several = dict(one, route="paper", pairs_per_s=80.0, pairs_per_s_per_process=[70.0, 80.0, 90.0], speed_ratio=900.0,
                   timing="median over 8 batches of 16 pairs after a warm-up, in each of 3 fresh processes")
    table = benchmarking.metric_table({"datasets": {"synthetic": {"routes": [one, several]}}})
    assert list(table["timing"]) == [one["timing"], several["timing"]]
    assert list(table["speed-up min-max"]) == ["one process", "800-1,029x"]


def test_targets_table_says_met_or_missed_with_the_figure():
    targets = {
        "speed": {"target": "fast", "ratio": 250.0, "ratio_vs_fastest_process": 201.0, "threshold": 300, "met": False,
                  "evaluated": True},
        "time": {"target": "quick", "seconds": 12.345, "threshold": 20, "met": True, "evaluated": True},
        "exact": {"target": "exact", "max_rel_err": 3e-14, "threshold": 1e-9, "met": True, "evaluated": False},
    }
    table = benchmarking.targets_table(targets)
    assert list(table["status"]) == ["MISSED", "met", "not evaluated (quick run)"]
    assert list(table["measured"]) == ["250x (threshold 300x); 201x against the baseline's fastest process",
                                       "12.35 s (threshold 20 s)",
                                       "max rel err 3.0e-14 (threshold 1.0e-09)"]


# ----------------------------------------------------------------------------- loading
def test_load_results_reads_a_folder_and_names_what_is_missing(tmp_path):
    (tmp_path / "metric.json").write_text(json.dumps({"date": "today"}))
    assert benchmarking.load_results(tmp_path, names=("metric",)) == {"metric": {"date": "today"}}
    with pytest.raises(FileNotFoundError, match=r"scaling\.json.*notebooks/ beside benchmarks/results/.*run_all\.py"):
        benchmarking.load_results(tmp_path, names=("metric", "scaling"))


# ----------------------------------------------------------------------------- plot
def test_plot_scaling_draws_points_and_fitted_lines(scaling):
    fig = benchmarking.plot_scaling(scaling)
    time_axes = [ax for ax in fig.axes if ax.get_ylabel() == "seconds (median)"]
    assert len(time_axes) == 2
    for ax, sweep, key in zip(time_axes, ("texts", "dim"), ("n_texts", "d")):
        assert ax.get_xscale() == ax.get_yscale() == "log"
        measured, fitted = ax.get_lines()[:2]
        pts = scaling[sweep]["points"]
        np.testing.assert_allclose(measured.get_xdata(), [p[key] for p in pts])
        np.testing.assert_allclose(measured.get_ydata(), [p["median_s"] for p in pts])
        xx, yy = fitted.get_xdata(), fitted.get_ydata()  # on an exact power law the fit goes through the points
        np.testing.assert_allclose(yy, scaling[sweep]["time_factor"] * xx ** scaling[sweep]["time_exponent"])
        assert "exponent" in ax.get_legend().get_texts()[0].get_text()


def test_plot_scaling_draws_the_spread_of_the_runs_and_marks_single_runs(scaling):
    point = scaling["texts"]["points"][1]
    point["runs_s"] = [0.9 * point["median_s"], point["median_s"], 1.2 * point["median_s"]]
    scaling["texts"]["points"][2]["runs_s"] = [scaling["texts"]["points"][2]["median_s"]]
    scaling["texts"]["time_exponent_interval"] = [1.9, 2.1]
    fig = benchmarking.plot_scaling(scaling)
    ax = next(a for a in fig.axes if a.get_ylabel() == "seconds (median)")
    bars = ax.collections[0].get_segments()
    assert [tuple(b[:, 1]) for b in bars][1] == pytest.approx((0.9 * point["median_s"], 1.2 * point["median_s"]))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "time (exponent 2.00 [1.90, 2.10])" in labels and "a single run" in labels


# ----------------------------------------------------------------------------- the committed results
@pytest.fixture(scope="module")
def committed():
    return benchmarking.load_results(RESULTS)


def test_committed_results_record_machine_command_and_date(committed):
    for name, record in committed.items():
        assert record["command"].startswith("python benchmarks/bench_"), name
        assert record["machine"]["logical_cores"] >= 1 and record["date"], name
        assert not record.get("quick", False), f"{name}.json comes from a --quick run"


def test_committed_target_verdicts_follow_from_the_figures(committed):
    """Each 'met' flag in the committed files must agree with the measured figure and its threshold."""
    targets = {**committed["metric"]["targets"], **committed["extraction"]["targets"]}
    assert targets, "no targets recorded"
    for key, t in targets.items():
        if "ratio" in t:
            assert t["met"] == (t["ratio"] >= t["threshold"]), key
        elif "seconds" in t:
            assert t["met"] == (t["seconds"] <= t["threshold"]), key
        elif "max_rel_err" in t:
            assert t["met"] == (t["max_rel_err"] <= t["threshold"] and t.get("non_finite", 0) == 0), key
        elif "max_abs_diff" in t:
            assert t["met"] == (t["max_abs_diff"] <= t["threshold"]), key


def test_committed_speed_ratios_are_pairs_per_second_quotients(committed):
    for name, ds in committed["metric"]["datasets"].items():
        routes = [r for r in ds["routes"] if r.get("status", "ok") == "ok"]
        base = routes[0]
        assert base["route"].startswith("socm_pairs (all pairs)"), name
        for r in routes[1:]:
            if r["speed_ratio"] is not None:
                assert r["speed_ratio"] == pytest.approx(base["pairs_per_s"] / r["pairs_per_s"], rel=1e-9), r["route"]


def test_committed_scaling_exponents_refit_from_the_points(committed):
    for sweep, key in (("texts", "n_texts"), ("dim", "d")):
        s = committed["scaling"][sweep]
        x = [p[key] for p in s["points"]]
        b, a = benchmarking.fit_power_law(x, [p["median_s"] for p in s["points"]])
        assert s["time_exponent"] == pytest.approx(b, rel=1e-9)
        assert s["time_factor"] == pytest.approx(a, rel=1e-9)


def test_committed_timings_are_medians_of_repeated_runs(committed):
    """Every time the book quotes is the median of at least three runs, each recorded (sixth edition: no figure of
    a single run, and the N-exponent fitted to medians, with its interval)."""
    scaling = committed["scaling"]
    for p in scaling["texts"]["points"] + scaling["dim"]["points"] + [scaling["summary"]]:
        assert len(p["runs_s"]) >= 3, f"scaling point N = {p['n_texts']}, d = {p['d']}: runs {p['runs_s']}"
        assert p["median_s"] == pytest.approx(float(np.median(p["runs_s"])), rel=1e-3)
    for sweep in ("texts", "dim"):
        low, high = scaling[sweep]["time_exponent_interval"]
        assert low < scaling[sweep]["time_exponent"] < high, sweep
    for name, ds in committed["metric"]["datasets"].items():
        a = ds["allpairs"]
        assert len(a["runs_s"]) >= 3, f"{name}: all pairs timed {len(a['runs_s'])} times"
        assert len(a["svd_floor"]["floor_runs_s"]) >= 3, name


def test_scaling_table_adds_the_summary_row_when_recorded(scaling):
    assert "summary" not in set(benchmarking.scaling_table(scaling)["sweep"])
    point = scaling["texts"]["points"][-1]
    scaling["summary"] = {**point, "median_s": 7.5, "peak_mib": 12.0, "route": "socm_summary"}
    table = benchmarking.scaling_table(scaling)
    last = table.iloc[-1]
    assert len(table) == 7 and last["sweep"] == "summary"
    assert (last["texts"], last["pairs"]) == ("1,000", "499,500")
    assert last["peak MiB"] == benchmarking.mib(12.0)
    assert list(table["min-max s"].iloc[:3]) == [benchmarking.run_range(p["runs_s"]) for p in scaling["texts"]["points"]]


# ----------------------------------------------------------------------------- speed-ups, ranges, sources
def test_speedups_per_process_give_the_ratio_and_its_range():
    route = {"pairs_per_s": 88.1, "pairs_per_s_per_process": [88.8, 88.1, 89.4, 81.8, 29.3],
             "speed_ratio": 94441 / 88.1, "socm_pairs_per_s_same_pairs": 3000.0}  # the median process
    speedups = benchmarking.speedups_per_process(route)
    assert np.median(speedups) == pytest.approx(route["speed_ratio"], rel=1e-12)  # the median process's
    assert (min(speedups), max(speedups)) == pytest.approx((94441 / 89.4, 94441 / 29.3), rel=1e-12)
    assert benchmarking.speedups_per_process(route, same_pairs=True) == pytest.approx(
        [3000.0 / x for x in route["pairs_per_s_per_process"]], rel=1e-12)


def test_cluster_seconds_is_the_model_of_chapter_6():
    # T_k = S + max((P c + B h) / k, B tau): shared work on few workers, the scheduler's floor on many
    model = dict(pair_s=1.0, block_s=2.0, serial_s=5.0, task_s=0.5)
    assert benchmarking.cluster_seconds(100, 10, 2, **model) == 5.0 + (100 + 20) / 2
    assert benchmarking.cluster_seconds(100, 10, 1000, **model) == 5.0 + 10 * 0.5
    with pytest.raises(ValueError, match="at least 1"):
        benchmarking.cluster_seconds(100, 10, 0, **model)


def test_cluster_projection_reproduces_the_record_and_brackets_it():
    distributed = json.loads((RESULTS / "distributed.json").read_text())
    projection = benchmarking.cluster_projection(distributed)
    assert sorted(projection) == sorted(int(k) for k in distributed["prediction"]["seconds"])
    for k, (median, fastest, slowest) in projection.items():
        assert median == pytest.approx(distributed["prediction"]["seconds"][str(k)], rel=1e-9)
        assert fastest <= median <= slowest
    few = min(projection)  # on one worker the measured per-pair and per-block times decide: a real range
    assert projection[few][0] < projection[few][2]


def test_run_range_formats_any_figure_of_a_run():
    assert benchmarking.run_range([1.08, 1.13, 1.11], benchmarking.rate) == "1.08-1.13"
    assert benchmarking.run_range([2.5], benchmarking.rate) == "single run"


def test_extraction_table_gives_the_range_of_the_per_run_ratios():
    ours = {"route": "socm_lib.token_embeddings", "status": "ok", "tokens_per_s": 5837.0, "runs_s": [1.0, 1.0, 1.0],
            "speed_ratio": 1.11, "speed_ratios_per_run": [1.11, 1.13, 1.08], "peak_mib": None, "max_abs_diff": 5e-6}
    theirs = {"route": "sentence-transformers", "status": "ok", "tokens_per_s": 5216.0, "runs_s": [1.1, 1.1, 1.1],
              "speed_ratio": 0.9, "peak_mib": None, "max_abs_diff": 5e-6}
    table = benchmarking.extraction_table({"datasets": {"STS-B": {"n_texts": 500, "tokens": 5735,
                                                                  "routes": [ours, theirs]}}})
    # read as the metric table: socm_lib's speed over the row's extractor, so 1.00x in its own row
    assert list(table["socm_lib speed-up"]) == ["1.00x", f"{benchmarking.rate(1 / 0.9)}x"]
    assert list(table["speed-up min-max"]) == ["-", "1.08-1.13"] and list(table["runs"]) == ["3", "3"]


def test_drawn_from_names_the_record_and_its_digest(tmp_path):
    record = tmp_path / "scaling.json"
    record.write_text('{"a": 1}\n')
    line = benchmarking.drawn_from(record)
    assert line.startswith("scaling.json sha256 ") and len(line.split()[-1]) == 64
    record.write_text('{"a": 2}\n')
    assert benchmarking.drawn_from(record) != line


def _bench_scaling():
    import importlib
    import sys

    sys.path.insert(0, str(RESULTS.parent))
    return importlib.import_module("bench_scaling")


def _metric_record(quick=False):
    return {"quick": quick, "date": "2026-12-05 10:00 UTC", "settings": {"seed": 0},
            "datasets": {"synthetic d=384": {"n_texts": 1000, "allpairs": {
                "pairs": 499500, "runs_s": [5.29, 5.25, 5.34], "median_s": 5.29, "peak_mib": 314.0, "threads": 2,
                "load_average_1min": 1.8}}}}


def test_the_scaling_point_of_1000_texts_is_the_metric_benchmarks(tmp_path):
    """run_all.py reuses the metric benchmark's all-pairs runs for the scaling point of 1,000 texts: the same runs,
    so the book has one figure for the computation; a quick metric.json is never reused."""
    bench_scaling = _bench_scaling()
    path = tmp_path / "metric.json"
    path.write_text(json.dumps(_metric_record()))
    point = bench_scaling.reusable_point(str(path), quick=False)
    assert point["runs_s"] == [5.29, 5.25, 5.34] and point["median_s"] == 5.29 and (point["n_texts"], point["d"]) == (1000, 384)
    assert "metric.json of 2026-12-05" in bench_scaling.metric_point_note(point, point)
    path.write_text(json.dumps(_metric_record(quick=True)))
    assert bench_scaling.reusable_point(str(path), quick=False) is None


def test_a_scaling_run_alone_says_its_point_of_1000_texts_is_a_second_measurement(monkeypatch, tmp_path):
    bench_scaling = _bench_scaling()
    (tmp_path / "metric.json").write_text(json.dumps(_metric_record()))
    monkeypatch.setattr(bench_scaling.common, "RESULTS_DIR", tmp_path)
    note = bench_scaling.metric_point_note({"median_s": 8.46, "runs_s": [8.46, 8.1, 8.9]}, None)
    assert note.startswith("measured by this run (8.46 s, runs 8.10 to 8.90), not taken from the metric benchmark")
    assert "metric.json of 2026-12-05 10:00 UTC measured the same computation at 5.29 s (runs 5.25 to 5.34)" in note


def test_committed_scaling_point_is_the_metric_benchmarks(committed):
    """The point of 1,000 texts in scaling.json is the all-pairs measurement of metric.json: one figure for one
    computation (the fifth edition showed 8.46 s from one run beside the metric's 5.29 s)."""
    point = next(p for p in committed["scaling"]["texts"]["points"] if (p["n_texts"], p["d"]) == (1000, 384))
    allpairs = committed["metric"]["datasets"]["synthetic d=384"]["allpairs"]
    assert point["runs_s"] == allpairs["runs_s"] and point["median_s"] == allpairs["median_s"]
    assert committed["scaling"]["settings"]["point_1000"].startswith("the all-pairs measurement of metric.json")


def test_committed_scaling_figure_is_drawn_from_the_committed_record():
    """scaling.png names the scaling.json it was drawn from (bench_scaling.py writes its SHA-256 into the PNG): a
    figure left over from an earlier run (the fifth edition's, without bars or intervals) fails."""
    from PIL import Image

    with Image.open(RESULTS / "scaling.png") as png:
        source = png.text.get("Source")
    assert source == benchmarking.drawn_from(RESULTS / "scaling.json")


def test_committed_ratios_and_projections_rest_on_repeated_runs():
    """The extraction ratio of every text set, the exhaustive times the sampled benchmark predicts from, and the
    cluster's costs come from at least three runs each."""
    results = benchmarking.load_results(RESULTS, names=("extraction", "sampling", "distributed"))
    for name, ds in results["extraction"]["datasets"].items():
        ours = ds["routes"][0]
        assert len(ours["speed_ratios_per_run"]) >= 3, name
        assert ours["speed_ratio"] == pytest.approx(float(np.median(ours["speed_ratios_per_run"])), rel=1e-12), name
    for p in results["sampling"]["points"]:
        full = p["exhaustive"]
        assert full["predicted"] or len(full["runs_s"]) >= 3, f"every pair of {p['n_texts']} texts: {full['runs_s']}"
        assert all(len(t["runs"]) >= 3 for t in p["sampled"]), p["n_texts"]
    dist = results["distributed"]
    for key in ("single_one_core", "single_every_core", "cluster"):
        assert len(dist[key]["runs_s"]) >= 3, key
