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
    assert list(table["status"]) == ["met, within noise (not against the baseline's fastest process)", "met"]
    assert benchmarking.within_noise(close) and not benchmarking.within_noise(clear)


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
