"""socm_lib.downstream's statistics for labelled pairs: bootstrap intervals, Cliff's delta, Spearman interval,
lexical overlap and the per-kind tables, each against a slow, obviously-correct reference."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from socm_lib import downstream


def _loop_percentile_ci(replicate, n_resamples, level):
    """Reference: a plain Python loop over resamples, then numpy's percentiles."""
    reps = np.array([replicate() for _ in range(n_resamples)])
    alpha = (1 - level) / 2
    return tuple(np.percentile(reps, [100 * alpha, 100 * (1 - alpha)]))


def _scipy_percentile(data, statistic, n_resamples, level, seed):
    kw = {"n_resamples": n_resamples, "confidence_level": level, "method": "percentile", "vectorized": True}
    try:
        res = stats.bootstrap(data, statistic, rng=np.random.default_rng(seed), **kw)
    except TypeError:  # SciPy before 1.15 names the generator random_state
        res = stats.bootstrap(data, statistic, random_state=np.random.default_rng(seed), **kw)
    return res.confidence_interval.low, res.confidence_interval.high


@pytest.mark.parametrize("stat", [np.mean, np.median])
def test_bootstrap_ci_matches_loop_and_scipy(stat):
    x = np.random.default_rng(1).gamma(2.0, size=37)
    low, high = downstream.bootstrap_ci(x, stat, n_resamples=500, level=0.9, seed=3)
    rng = np.random.default_rng(3)
    ref = _loop_percentile_ci(lambda: stat(x[rng.integers(0, x.size, x.size)]), 500, 0.9)
    assert (low, high) == pytest.approx(ref, rel=1e-12)
    sp = _scipy_percentile((x,), lambda s, axis=-1: stat(s, axis=axis), 500, 0.9, 3)
    assert (low, high) == pytest.approx(sp, rel=1e-12)
    assert low < stat(x) < high


def test_bootstrap_diff_ci_matches_loop_and_scipy():
    g = np.random.default_rng(2)
    a, b = g.normal(0.3, 1.0, size=30), g.normal(0.0, 1.0, size=45)
    low, high = downstream.bootstrap_diff_ci(a, b, n_resamples=400, seed=5)
    rng = np.random.default_rng(5)
    ia = rng.integers(0, a.size, (400, a.size))
    ib = rng.integers(0, b.size, (400, b.size))
    reps = [a[ia[k]].mean() - b[ib[k]].mean() for k in range(400)]
    assert (low, high) == pytest.approx(tuple(np.percentile(reps, [2.5, 97.5])), rel=1e-12)
    sp = _scipy_percentile((a, b), lambda s, t, axis=-1: s.mean(axis=axis) - t.mean(axis=axis), 400, 0.95, 5)
    assert (low, high) == pytest.approx(sp, rel=1e-12)


@pytest.mark.parametrize("stat", [np.mean, np.median])
def test_bootstrap_paired_diff_ci_matches_loop_and_scipy(stat):
    g = np.random.default_rng(7)
    base = g.gamma(2.0, size=12)
    a, b = base + g.normal(0.0, 0.05, 12), base + 0.1 + g.normal(0.0, 0.05, 12)  # b above a, unit by unit
    low, high = downstream.bootstrap_paired_diff_ci(a, b, stat, n_resamples=400, level=0.9, seed=5)
    rng = np.random.default_rng(5)
    reps = []
    for _ in range(400):  # one draw of units, both values of each drawn unit
        units = rng.integers(0, a.size, a.size)
        reps.append(stat([a[k] for k in units]) - stat([b[k] for k in units]))
    assert (low, high) == pytest.approx(tuple(np.percentile(reps, [5, 95])), rel=1e-12)
    kw = {"n_resamples": 400, "confidence_level": 0.9, "method": "percentile", "vectorized": True, "paired": True}
    diff = lambda s, t, axis=-1: stat(s, axis=axis) - stat(t, axis=axis)
    try:
        sp = stats.bootstrap((a, b), diff, rng=np.random.default_rng(5), **kw).confidence_interval
    except TypeError:  # SciPy before 1.15 names the generator random_state
        sp = stats.bootstrap((a, b), diff, random_state=np.random.default_rng(5), **kw).confidence_interval
    assert (low, high) == pytest.approx((sp.low, sp.high), rel=1e-12)


def test_paired_interval_resolves_what_the_independent_one_cannot():
    # the units vary far more than the difference between their two values: pairing removes that spread
    g = np.random.default_rng(8)
    base = g.normal(0.0, 1.0, 10)
    a, b = base, base + 0.05 + g.normal(0.0, 0.01, 10)
    low, high = downstream.bootstrap_paired_diff_ci(a, b)
    assert high < 0
    assert np.mean(a - b) == pytest.approx(np.mean(a) - np.mean(b))
    assert (low, high) == pytest.approx(downstream.bootstrap_ci(a - b), rel=1e-12)  # the differences' interval
    low_ind, high_ind = downstream.bootstrap_diff_ci(a, b)
    assert low_ind < 0 < high_ind
    with pytest.raises(ValueError, match="one of each per unit"):
        downstream.bootstrap_paired_diff_ci(a, b[:-1])


def test_bootstrap_intervals_cover_a_clear_difference_and_can_fail():
    a, b = np.arange(40.0), np.arange(40.0) + 100
    low, high = downstream.bootstrap_diff_ci(a, b)
    assert high < 0  # b is far above a
    low, high = downstream.bootstrap_diff_ci(a, a + 0.01)
    assert low < 0 < high  # a tiny shift is not resolved


def test_bootstrap_is_deterministic_and_level_widens():
    x = np.random.default_rng(0).normal(size=50)
    assert downstream.bootstrap_ci(x) == downstream.bootstrap_ci(x)
    l90, h90 = downstream.bootstrap_ci(x, level=0.9)
    l99, h99 = downstream.bootstrap_ci(x, level=0.99)
    assert l99 < l90 and h90 < h99


@pytest.mark.parametrize("bad, exc", [({"n_resamples": 0}, ValueError), ({"level": 1.0}, ValueError),
                                      ({"level": 0}, ValueError), ({"n_resamples": 2.5}, TypeError)])
def test_bootstrap_rejects_bad_settings(bad, exc):
    with pytest.raises(exc):
        downstream.bootstrap_ci([1.0, 2.0, 3.0], **bad)


def test_bootstrap_rejects_bad_samples():
    with pytest.raises(ValueError, match="at least 2 are needed"):
        downstream.bootstrap_ci([1.0])
    with pytest.raises(ValueError, match="NaN"):
        downstream.bootstrap_diff_ci([1.0, np.nan], [1.0, 2.0])


def test_cliffs_delta_against_double_loop_and_separation():
    g = np.random.default_rng(4)
    a, b = g.integers(0, 6, size=23).astype(float), g.integers(0, 6, size=17).astype(float)  # many ties
    ref = sum(int(x > y) - int(x < y) for x, y in itertools.product(a.tolist(), b.tolist())) / (a.size * b.size)
    assert downstream.cliffs_delta(a, b) == pytest.approx(ref, abs=1e-15)
    assert downstream.cliffs_delta(a, b) == pytest.approx(2 * downstream.separation(a, b) - 1, abs=1e-12)
    assert downstream.cliffs_delta([3, 4], [1, 2]) == 1.0
    assert downstream.cliffs_delta([1, 2], [3, 4]) == -1.0
    assert downstream.cliffs_delta([1, 2], [1, 2]) == 0.0
    with pytest.raises(ValueError):
        downstream.cliffs_delta([], [1.0])


def test_spearman_ci_matches_loop():
    g = np.random.default_rng(6)
    x = g.normal(size=40)
    y = x + g.normal(size=40)
    low, high = downstream.spearman_ci(x, y, n_resamples=300, seed=2)
    rng = np.random.default_rng(2)
    idx = rng.integers(0, x.size, (300, x.size))
    reps = [stats.spearmanr(x[i], y[i]).statistic for i in idx]
    assert (low, high) == pytest.approx(tuple(np.percentile(reps, [2.5, 97.5])), rel=1e-10)
    rho = downstream.spearman(x, y)[0]
    assert low < rho < high
    with pytest.raises(ValueError, match="one of each"):
        downstream.spearman_ci(x, y[:-1])


def test_lexical_overlap():
    assert downstream.lexical_overlap("The cat sat.", "the CAT sat") == 1.0
    assert downstream.lexical_overlap("dog bites man", "man bites dog") == 1.0  # word order is ignored
    assert downstream.lexical_overlap("it is red", "it is not red") == pytest.approx(3 / 4)
    assert downstream.lexical_overlap("a b", "c d") == 0.0
    assert downstream.lexical_overlap("", "word") == 0.0
    with pytest.raises(ValueError, match="undefined"):
        downstream.lexical_overlap("...", "!")
    with pytest.raises(TypeError):
        downstream.lexical_overlap("text", None)


def test_kind_tables():
    g = np.random.default_rng(7)
    frame = pd.DataFrame({"kind": ["x"] * 20 + ["y"] * 25,
                          "socm": np.r_[g.normal(0.2, 0.05, 20), g.normal(0.5, 0.05, 25)]})
    t = downstream.kind_ci_table(frame, "kind", ["y", "x", "absent"], columns=("socm",), n_resamples=200)
    assert t["kind"].tolist() == ["y", "x"]
    assert t["pairs"].tolist() == [25, 20]
    row = t.iloc[1]
    assert row["mean_socm"] == pytest.approx(frame.loc[frame["kind"] == "x", "socm"].mean())
    assert (row["socm_low"], row["socm_high"]) == downstream.bootstrap_ci(
        frame.loc[frame["kind"] == "x", "socm"], n_resamples=200)
    c = downstream.kind_contrasts(frame, "kind", [("x", "y")], n_resamples=200)
    assert c.loc[0, "diff"] == pytest.approx(-0.3, abs=0.05)
    assert c.loc[0, "cliffs_delta"] == -1.0
    assert bool(c.loc[0, "excludes_0"]) and c.loc[0, "diff_high"] < 0
