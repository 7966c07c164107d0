"""The references themselves (socm_lib.reference, socm_lib.bures): closed forms, agreement with each other, batching."""

from __future__ import annotations

import numpy as np
import pytest

import socm_lib
from socm_lib.reference import lowrank_factor, lowrank_pair, lowrank_pairs


def cross_cloud(mean, s1, s2):
    """Four tokens mean +- s1 e1, mean +- s2 e2: mean exactly `mean`, covariance diag(s1^2/2, s2^2/2)."""
    m = np.asarray(mean, float)
    return np.array([m + [s1, 0], m - [s1, 0], m + [0, s2], m - [0, s2]])


@pytest.mark.parametrize("a,b", [((0.5, 0.1), (0.2, 0.3)), ((1.0, 0.0), (0.0, 1.0))])
def test_lowrank_pair_closed_form(a, b):
    m1, m2 = np.array([0.6, 0.8]), np.array([1.0, 0.0])  # unit means: normalisation changes nothing
    X1 = cross_cloud(m1, np.sqrt(2 * a[0]), np.sqrt(2 * a[1]))
    X2 = cross_cloud(m2, np.sqrt(2 * b[0]), np.sqrt(2 * b[1]))
    r = lowrank_pair(X1, X2)
    bw2 = sum((np.sqrt(x) - np.sqrt(y)) ** 2 for x, y in zip(a, b))
    assert r.d_sigma == pytest.approx(bw2 / 4, rel=1e-13, abs=1e-16)
    assert r.d_mu == pytest.approx((0.4**2 + 0.8**2) / 4, rel=1e-14)
    assert r.socm == pytest.approx((1 - r.d_mu) * r.d_sigma, rel=1e-15)
    assert (r.trace1, r.trace2) == pytest.approx((sum(a), sum(b)), rel=1e-14)


def test_lowrank_factor_definitions():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 5)) + 2.0
    A, m = lowrank_factor(X)
    Xn = X / np.linalg.norm(X.mean(0))
    np.testing.assert_allclose(m, Xn.mean(0), rtol=1e-14)
    np.testing.assert_allclose(A.T @ A, np.cov(Xn, rowvar=False, bias=True), rtol=1e-12, atol=1e-15)
    A_raw, m_raw = lowrank_factor(X, normalize=False)
    np.testing.assert_allclose(m_raw, X.mean(0), rtol=1e-14)
    np.testing.assert_allclose(A_raw.T @ A_raw, np.cov(X, rowvar=False, bias=True), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("d", [3, 6])
def test_two_references_agree_on_full_rank_clouds(d):
    """Full rank, well conditioned: the d x d reference (socm_lib.bures) is exact there, and so is the low-rank one."""
    rng = np.random.default_rng(d)
    for _ in range(4):
        X1, X2 = (2.0 + rng.normal(size=d) + rng.normal(size=(n, d)) @ (0.4 * np.eye(d) + 0.2 * rng.normal(size=(d, d)))
                  for n in (40, 70))
        r = lowrank_pair(X1, X2)
        S1, S2 = (socm_lib.cloud_covariance(socm_lib.normalize_cloud(X)) for X in (X1, X2))
        assert r.d_sigma == pytest.approx(socm_lib.bures_wasserstein_sq(S1, S2) / 4, rel=1e-10)
        assert r.trace1 == pytest.approx(float(S1.trace()), rel=1e-12)


@pytest.mark.parametrize("d,n", [(64, 5), (200, 30)])
def test_two_references_agree_to_1e6_on_rank_deficient_clouds(d, n):
    """n << d: the d x d reference is only good to about 1e-7 there (square roots of round-off zeros)."""
    rng = np.random.default_rng(d + n)
    X1, X2 = (rng.normal(size=d) + 0.6 * rng.normal(size=(k, d)) for k in (n, 17))
    r = lowrank_pair(X1, X2)
    S1, S2 = (socm_lib.cloud_covariance(socm_lib.normalize_cloud(X)) for X in (X1, X2))
    assert r.d_sigma == pytest.approx(socm_lib.bures_wasserstein_sq(S1, S2) / 4, rel=1e-6)


@pytest.mark.parametrize("workers", [1, 2])
def test_lowrank_pairs_is_lowrank_pair_in_a_loop(workers):
    rng = np.random.default_rng(5)
    clouds = [rng.normal(size=6) + rng.normal(size=(int(n), 6)) for n in rng.integers(1, 9, size=70)]
    pairs = np.stack(np.triu_indices(70, k=1), axis=1)  # 2,415 pairs: the pool is used when workers > 1
    res = lowrank_pairs(clouds, pairs, workers=workers)
    assert isinstance(res, socm_lib.PairResult) and len(res) == len(pairs)
    for k in (0, 1, 500, 2414):
        i, j = pairs[k]
        one = lowrank_pair(clouds[i], clouds[j])
        assert (res.d_mu[k], res.d_sigma[k], res.socm[k]) == (one.d_mu, one.d_sigma, one.socm)
    np.testing.assert_array_equal(res.i, pairs[:, 0])
    assert np.all(res.d_sigma >= 0)
