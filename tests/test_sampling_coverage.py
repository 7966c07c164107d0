"""The sampled estimate's 95 % intervals cover the exhaustive value 93-97 % of the time (``socm_lib.sampling``).

A corpus of 200 small synthetic token clouds has 19,900 pairs, all computed once by ``socm_pairs``: their exhaustive
mean and median are known. The estimate is then drawn for 2,000 seeds (1,000 for the staged rule) through the code
path of
``socm_summary(..., sample_pairs=m, seed=s)`` (``sampling._sampled``: the draw, the stages, the intervals), with the
engine's call replaced by a look-up of the same pairs' exhaustive values, which keeps the test to seconds;
``test_the_lookup_is_the_engine`` checks that the real call gives the same estimate for the same seeds.

With 2,000 seeds the measured coverage of a 95 % interval has a standard error of 0.5 %, so 93-97 % is four standard
errors either side. Measured with deliberate bugs, the test fails on each: without the finite-population factor the
means' intervals cover 98 % of the time at a quarter of the pairs, with binomial ranks the median's 97.7 %, and with a
standard error too small by a factor of the square root of 2 the means' 83 %.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import socm_lib
from socm_lib import sampling

SEEDS = 2000
TEXTS = 200
LOW, HIGH = 0.93, 0.97
MEANS = ("mean_socm", "mean_d_mu", "mean_d_sigma")


def small_clouds(n_texts: int, d: int = 8, seed: int = 0) -> list[np.ndarray]:
    """Clouds of 2-8 tokens whose spread about the mean varies over a factor of 15, so that SOCM is skewed (most
    pairs small, a long tail) and a few pairs have d_sigma > 1."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_texts):
        n = int(rng.integers(2, 9))
        mean = np.ones(d) + 0.7 * rng.standard_normal(d)
        noise = rng.standard_normal((n, d))
        out.append(mean + noise * np.exp(rng.uniform(-2.0, 0.7)) * np.linalg.norm(mean) / np.sqrt(d))
    return out


@pytest.fixture(scope="module")
def corpus():
    """The clouds, their exhaustive pair values (``pdist`` order, as the sampler numbers pairs) and figures."""
    clouds = small_clouds(TEXTS)
    every = socm_lib.socm_pairs(clouds, progress=False)
    values = {k: getattr(every, k) for k in ("d_mu", "d_sigma", "socm")}
    n = len(every)
    truth = {"mean_socm": math.fsum(every.socm) / n, "median_socm": float(np.median(every.socm)),
             "mean_d_mu": math.fsum(every.d_mu) / n, "mean_d_sigma": math.fsum(every.d_sigma) / n,
             "share_d_sigma_above_1": float(np.mean(every.d_sigma > 1.0))}
    return clouds, values, truth


def lookup(values):
    return lambda positions: {k: v[positions] for k, v in values.items()}


def coverage(corpus, seeds: int = SEEDS, **options) -> tuple[dict[str, float], list[int]]:
    """Share of the ``seeds`` whose interval covers each exhaustive figure, and the pairs drawn per seed."""
    _, values, truth = corpus
    population = len(values["socm"])
    covered, drawn = dict.fromkeys(truth, 0), []
    for seed in range(seeds):
        result = sampling._sampled(lookup(values), population, TEXTS, seed=seed, **options)
        drawn.append(result.pairs)
        for name, value in truth.items():
            low, high = result.intervals[name]
            covered[name] += low <= value <= high
    return {name: count / seeds for name, count in covered.items()}, drawn


def test_the_corpus_is_a_hard_case(corpus):
    _, values, truth = corpus
    socm = values["socm"]
    skew = np.mean((socm - socm.mean()) ** 3) / np.std(socm) ** 3
    assert skew > 1.5  # a long right tail: the normal approximation is not given away
    assert truth["median_socm"] < 0.8 * truth["mean_socm"]
    assert 0 < truth["share_d_sigma_above_1"] < 0.01


@pytest.mark.parametrize("fraction", [0.02, 0.25], ids=["m=2%", "m=25%"])
def test_fixed_m_intervals_cover_at_their_level(corpus, fraction):
    """A few hundred pairs (finite-population factor near 1) and a quarter of the pairs (factor 0.75, which an
    interval must use to be neither too wide nor, at m = N_pairs, nonzero)."""
    population = len(corpus[1]["socm"])
    m = round(fraction * population)
    rates, _ = coverage(corpus, sample_pairs=m, target_halfwidth=None)
    for name in (*MEANS, "median_socm"):
        assert LOW <= rates[name] <= HIGH, (name, m, rates)
    assert rates["share_d_sigma_above_1"] >= LOW, rates  # Wilson's interval: at least its level, up to discreteness
    # the median's interval has an exact level (hypergeometric ranks), >= 95 % by discreteness; the measured rate
    # agrees with it within four standard errors
    r = sampling._median_rank(m, population, sampling.CONFIDENCE)
    exact = 1 - 2 * stats.hypergeom.cdf(r - 1, population, (population + 1) // 2, m)
    assert exact >= sampling.CONFIDENCE
    assert abs(rates["median_socm"] - exact) <= 4 * math.sqrt(exact * (1 - exact) / SEEDS), (rates, exact)


def test_target_halfwidth_intervals_cover_and_reach_the_target(corpus):
    """The staged rule: a pilot of 1,000 pairs, then as many as the pilot's spread asks for, until the mean SOCM's
    half-width is at most h; stopping on a small spread must not cost coverage."""
    h = 0.004
    population = len(corpus[1]["socm"])
    rates, drawn = coverage(corpus, SEEDS // 2, sample_pairs=None, target_halfwidth=h)
    assert LOW <= rates["mean_socm"] <= HIGH, rates
    assert LOW <= rates["median_socm"] <= HIGH, rates
    # the target needs about 3,100 pairs here: the rule takes more than the pilot, and far fewer than all
    assert sampling.PILOT_PAIRS < min(drawn) and max(drawn) < population // 4
    S = float(np.std(corpus[1]["socm"], ddof=1))
    assert abs(np.mean(drawn) / sampling.pairs_needed(S, h, population) - 1) < 0.15


def test_the_lookup_is_the_engine(corpus):
    """``socm_summary(clouds, sample_pairs=m, seed=s)`` gives, to round-off, the estimate the coverage tests drew
    for the same seed: the engine computes the same pairs the look-up returns."""
    clouds, values, _ = corpus
    population = len(values["socm"])
    for seed, options in ((0, {"sample_pairs": 400}), (1, {"sample_pairs": 400}), (2, {"target_halfwidth": 0.004})):
        real = socm_lib.socm_summary(clouds, seed=seed, **options)
        looked_up = sampling._sampled(lookup(values), population, TEXTS, seed=seed,
                                      **{"sample_pairs": None, "target_halfwidth": None, **options})
        assert (real.pairs, real.stages, real.median_ranks) == (looked_up.pairs, looked_up.stages,
                                                                looked_up.median_ranks)
        for name in sampling.FIGURES:
            assert getattr(real, name) == pytest.approx(getattr(looked_up, name), rel=1e-12, abs=1e-15)
            np.testing.assert_allclose(real.intervals[name], looked_up.intervals[name], rtol=1e-12, atol=1e-15)
