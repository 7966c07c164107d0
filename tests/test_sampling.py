"""The sampled estimate of ``socm_summary(..., sample_pairs=m, seed=s, target_halfwidth=h)`` (``socm_lib.sampling``):
closed forms, the draw, all pairs drawn giving the exhaustive answer, the inputs it refuses, and the command line.
Its intervals' coverage is measured in ``tests/test_sampling_coverage.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import socm_lib
from socm_lib import sampling
from socm_lib.cli import main


def clouds_of(n_texts: int, seed: int = 0, d: int = 6) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.ones(d) + rng.standard_normal((int(rng.integers(2, 7)), d)) * rng.uniform(0.1, 1.5)
            for _ in range(n_texts)]


# -- the rule for m, the intervals' formulas ---------------------------------------------------------------------------

def test_pairs_needed_is_the_smallest_m_that_reaches_the_half_width():
    assert sampling.pairs_needed(0.1, 0.001, 5 * 10**9) == 38415  # ceil((1.959964 * 0.1 / 0.001)^2) = ceil(38414.6)
    for std, h, population in ((0.1, 0.001, 5 * 10**9), (0.2, 0.01, 1000), (0.05, 0.002, 499_500), (0.3, 1e-4, 50)):
        m = sampling.pairs_needed(std, h, population)
        z = stats.norm.ppf(0.975)

        def half(k):
            return z * std * math.sqrt((1 - k / population) / k)

        assert half(m) <= h * (1 + 1e-12) and (m == 1 or half(m - 1) > h), (std, h, population, m)
        assert m <= population
    with pytest.raises(ValueError, match="halfwidth = 0"):
        sampling.pairs_needed(0.1, 0.0, 100)


def test_the_share_interval_solves_the_score_equation():
    """Wilson's endpoints P solve (p - P)^2 = z^2 f P(1 - P)/m, f = (N_pairs - m)/(N_pairs - 1), and a share of 0 in
    the sample still has an upper end above 0."""
    z2 = stats.norm.ppf(0.975) ** 2
    for hits, m, population in ((0, 400, 19_900), (7, 400, 19_900), (150, 1000, 1200), (1000, 1000, 10**6)):
        p, low, high = sampling._share_interval(hits, m, population, 0.95)
        k = z2 * (population - m) / (population - 1) / m
        for end in (low, high):
            if 0 < end < 1:
                assert (p - end) ** 2 == pytest.approx(k * end * (1 - end), rel=1e-9)
        assert low <= p <= high and 0 <= low and high <= 1
    assert sampling._share_interval(0, 400, 19_900, 0.95)[2] > 0.005
    assert sampling._share_interval(3, 50, 50, 0.95) == (0.06, 0.06, 0.06)  # every pair drawn: no width


def test_the_mean_interval_is_the_t_interval_with_the_finite_population_factor():
    y = np.random.default_rng(3).exponential(size=500)
    mean, low, high = sampling._mean_interval(y, 2000, 0.95)
    half = stats.t.ppf(0.975, 499) * np.std(y, ddof=1) * math.sqrt((1 - 500 / 2000) / 500)
    assert mean == pytest.approx(y.mean(), rel=1e-14)
    assert (low, high) == pytest.approx((mean - half, mean + half), rel=1e-12)


def test_the_median_ranks_are_the_hypergeometric_ones():
    """The largest rank r with 2 P(Hyp <= r - 1) <= 5 %, checked against every rank; binomial ranks (draws with
    replacement) in the limit of many pairs; none for fewer than 6 pairs."""
    for m, population in ((10, 10), (11, 11), (9, 10), (30, 45), (400, 19_900), (4975, 19_900), (2000, 3000)):
        law = (population, (population + 1) // 2, m)
        r = sampling._median_rank(m, population, 0.95)
        assert 2 * stats.hypergeom.cdf(r - 1, *law) <= 0.05 < 2 * stats.hypergeom.cdf(r, *law), (m, population, r)
    # fewer than 1 in 10,000 pairs drawn: the binomial law's ranks (469 of 1,000, as the tables give), also where
    # scipy's hypergeometric law would take a minute (10^12 pairs)
    assert sampling._median_rank(1000, 10**12, 0.95) == stats.binom.ppf(0.025, 1000, 0.5) == 469
    assert sampling._median_rank(1000, 5 * 10**9, 0.95) == 469
    for m, population in ((499, 5 * 10**6), (501, 5 * 10**6), (20_000, 5 * 10**8)):  # the two laws at the switch
        assert abs(sampling._median_rank(m, population, 0.95)
                   - (stats.hypergeom.ppf(0.025, population, (population + 1) // 2, m) + 1)) <= 1
    assert sampling._median_rank(5, 10**9, 0.95) == 0 and sampling._median_rank(6, 10**9, 0.95) == 1


# -- the draw ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dense", [True, False], ids=["listed", "rejection"])
def test_the_draw_is_uniform_without_replacement(dense, monkeypatch):
    """Each position as likely to be drawn, first or at all, and never one already taken, whichever way it draws."""
    if not dense:
        monkeypatch.setattr(sampling, "DENSE_DRAW_LIMIT", 0)
    rng = np.random.default_rng(0)
    population, taken = 40, np.array([3, 17, 25])
    counts, first = np.zeros(population), np.zeros(population)
    for _ in range(4000):
        drawn = sampling._draw(rng, population, 12, taken)
        assert len(np.unique(drawn)) == 12 and not np.isin(drawn, taken).any() and drawn.max() < population
        counts[drawn] += 1
        first[drawn[0]] += 1
    free = np.setdiff1d(np.arange(population), taken)
    assert counts[taken].sum() == 0 and first[taken].sum() == 0
    for observed in (counts[free] / (4000 * 12 / 37), first[free]):  # chi-square against the uniform law on free
        expected = observed.sum() / len(free)
        assert stats.chi2.sf(((observed - expected) ** 2 / expected).sum(), len(free) - 1) > 0.001


def test_the_draw_never_lists_a_large_population():
    """5e9 pairs (100,000 texts) would take 40 GB as a list; the draw does not make one."""
    population = 100_000 * 99_999 // 2
    drawn = sampling._draw(np.random.default_rng(0), population, 50_000, np.zeros(0, np.int64))
    more = sampling._draw(np.random.default_rng(1), population, 1000, np.sort(drawn))
    assert len(np.unique(np.concatenate([drawn, more]))) == 51_000 and drawn.max() < population
    pairs = socm_lib.block_plan.condensed_pairs(drawn, 100_000)
    assert (pairs[:, 0] < pairs[:, 1]).all() and pairs.max() < 100_000


def test_the_same_seed_draws_the_same_pairs_and_another_seed_others():
    clouds = clouds_of(30)
    a, b = (socm_lib.socm_summary(clouds, sample_pairs=100, seed=7) for _ in range(2))
    c = socm_lib.socm_summary(clouds, sample_pairs=100, seed=8)
    assert a.summary() == b.summary() and a.intervals == b.intervals
    assert a.summary() != c.summary()
    fresh = socm_lib.socm_summary(clouds, sample_pairs=100)  # a seed from the system, recorded
    again = socm_lib.socm_summary(clouds, sample_pairs=100, seed=fresh.seed)
    assert again.summary() == fresh.summary() and fresh.seed >= 0


# -- all pairs drawn ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_texts", [20, 22], ids=["190 pairs", "231 pairs"])
def test_every_pair_drawn_gives_the_exhaustive_answer(n_texts):
    """m = N_pairs: the means and the share are the exhaustive ones with zero-width intervals, the median is the
    exhaustive median and its interval the two middle values (one when N_pairs is odd)."""
    clouds = clouds_of(n_texts, seed=1)
    every = socm_lib.socm_summary(clouds)
    population = n_texts * (n_texts - 1) // 2
    for options in ({"sample_pairs": population}, {"target_halfwidth": 1e-9}):  # the target asks for every pair
        drawn = socm_lib.socm_summary(clouds, seed=3, **options)
        assert drawn.pairs == drawn.population_pairs == population
        for name in ("mean_socm", "mean_d_mu", "mean_d_sigma", "share_d_sigma_above_1"):
            assert getattr(drawn, name) == pytest.approx(getattr(every, name), rel=1e-12, abs=1e-15), name
            low, high = drawn.intervals[name]
            assert low == high == getattr(drawn, name), name
        values = np.sort(socm_lib.socm_pairs(clouds).socm)
        middle = values[(population - 1) // 2], values[population // 2]
        assert drawn.median_socm == pytest.approx(every.median_socm, rel=1e-12)
        np.testing.assert_allclose(drawn.intervals["median_socm"], middle, rtol=1e-12)
        assert drawn.intervals["median_socm"][0] <= every.median_socm <= drawn.intervals["median_socm"][1]


def test_listed_pairs_are_the_population():
    clouds = clouds_of(12)
    pairs = np.array([[0, 5], [1, 2], [3, 11], [4, 7], [6, 9], [8, 10], [2, 9]])
    every = socm_lib.socm_pairs(clouds, pairs)
    drawn = socm_lib.socm_summary(clouds, pairs, sample_pairs=7, seed=0)
    assert drawn.population_pairs == 7
    assert drawn.mean_socm == pytest.approx(float(np.mean(every.socm)), rel=1e-12)


# -- the result --------------------------------------------------------------------------------------------------------

def test_the_result_says_it_is_an_estimate_and_prints_it():
    clouds = clouds_of(40)
    result = socm_lib.socm_summary(clouds, sample_pairs=300, seed=5)
    assert isinstance(result, socm_lib.SampledSummary) and result.estimate
    assert list(result.summary()) == list(socm_lib.socm_summary(clouds).summary())  # the exhaustive summary's keys
    text = str(result)
    assert "300 of the 780 pairs of 40 texts" in text and "seed 5" in text and "without replacement" in text
    for name in sampling.FIGURES:
        low, high = result.intervals[name]
        assert name in text and low <= getattr(result, name) <= high
    assert repr(result) == text
    staged = socm_lib.socm_summary(clouds_of(300), target_halfwidth=0.002, sample_pairs=1500, seed=0)
    assert staged.pairs == 1500 and staged.target_reached is False and "NOT reached" in str(staged)
    assert staged.stages[0] == sampling.PILOT_PAIRS and staged.stages[-1] == 1500


# -- refused inputs ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, error, words", [
    ({"sample_pairs": 191}, ValueError, "sample_pairs = 191 is outside 2 <= sample_pairs <= 190"),
    ({"sample_pairs": 1}, ValueError, "outside 2 <= sample_pairs"),
    ({"sample_pairs": 10.0}, TypeError, "sample_pairs must be an integer"),
    ({"sample_pairs": True}, TypeError, "sample_pairs must be an integer"),
    ({"sample_pairs": 10, "seed": -1}, ValueError, "seed = -1 is outside 0 <= seed"),
    ({"sample_pairs": 10, "seed": 1.5}, TypeError, "seed must be an integer"),
    ({"sample_pairs": 10, "seed": "0"}, TypeError, "seed must be an integer"),
    ({"seed": 0}, ValueError, "needs sample_pairs"),
    ({"target_halfwidth": 0.0}, ValueError, "target_halfwidth = 0"),
    ({"target_halfwidth": -0.01}, ValueError, "target_halfwidth = -0.01"),
    ({"target_halfwidth": float("nan")}, ValueError, "target_halfwidth = nan"),
    ({"target_halfwidth": "0.01"}, TypeError, "target_halfwidth must be a number"),
    ({"sample_pairs": 10, "bins": 50}, ValueError, "bins: these options of socm_summary apply to every pair"),
    ({"sample_pairs": 10, "top_k": 3, "on_pairs": print}, ValueError, "top_k, on_pairs: these options"),
    ({"sample_pairs": 10, "bins": np.array([200])}, ValueError, "bins: these options"),
    ({"sample_pairs": 10, "range": {"socm": (0, 1)}}, ValueError, "range: these options"),
])
def test_bad_sampling_options_are_refused(options, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        socm_lib.socm_summary(clouds_of(20), **options)


def test_options_at_their_defaults_are_not_refused():
    result = socm_lib.socm_summary(clouds_of(20), sample_pairs=10, seed=0, bins=200, top_k=np.int64(10), range=None)
    assert result.pairs == 10


def test_a_single_pair_is_not_sampled():
    with pytest.raises(ValueError, match="only 1 pair"):
        socm_lib.socm_summary(clouds_of(2), sample_pairs=2)


def test_every_cloud_is_checked_drawn_or_not():
    clouds = clouds_of(50)
    clouds[37][1, 2] = np.nan
    with pytest.raises(ValueError, match=r"clouds\[37\] contains NaN"):
        socm_lib.socm_summary(clouds, sample_pairs=2, seed=0)


def test_an_engine_error_names_the_callers_cloud():
    """The engine runs on the clouds drawn only; its errors still name the cloud by its place in the caller's list."""
    clouds = clouds_of(12)
    clouds[7] = np.array([[1.0, 0, 0, 0, 0, 0], [-1.0, 0, 0, 0, 0, 0]])  # mean 0: cannot be normalised
    with pytest.raises(ValueError, match=r"clouds\[7\]"):
        socm_lib.socm_summary(clouds, np.array([[3, 7], [7, 9], [3, 9]]), sample_pairs=3, seed=0)


# -- the command line --------------------------------------------------------------------------------------------------

def test_cli_sample_pairs_prints_the_estimate(capsys):
    code = main(["run", "--encoder", "all-minilm-l6", "--sample", "30", "--sample-pairs", "200", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Sampled estimate from 200 of the 435 pairs of 30 texts" in out and "seed 0" in out
    assert "mean_socm" in out and "median_socm" in out and "mean_concentration_ratio" in out


@pytest.mark.parametrize("args, words", [
    (["--sample-pairs", "500"], "--sample-pairs = 500 is outside 2 <= --sample-pairs <= 435"),
    (["--sample-pairs", "100", "--out", "x.csv"], "--out writes every pair"),
    (["--target-halfwidth", "0"], "--target-halfwidth = 0"),
    (["--sample-pairs", "100", "--seed", "-2"], "--seed = -2 is outside"),
])
def test_cli_refuses_bad_sampling_options_before_loading_a_model(args, words, capsys, monkeypatch):
    def no_model(*a, **k):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(socm_lib.cli, "load_encoder", no_model)
    code = main(["run", "--encoder", "all-minilm-l6", "--sample", "30", *args])
    assert code == 2 and words in capsys.readouterr().err
