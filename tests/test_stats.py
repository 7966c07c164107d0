"""Per-cloud statistics (socm_lib.stats) and the d x d Bures route (socm_lib.bures) against numpy, scipy and POT."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import socm_lib


@pytest.fixture(scope="module")
def clouds():
    rng = np.random.default_rng(0)
    return [rng.normal(size=12) * 0.4 + 1.0 + rng.normal(size=(n, 12)) * s for n, s in [(1, 1), (2, 0.5), (7, 1.0), (30, 0.2), (50, 2.0)]]


def test_cloud_mean_and_covariance_match_numpy(clouds):
    for X in clouds:
        mu = socm_lib.cloud_mean(X)
        S = socm_lib.cloud_covariance(X)
        assert isinstance(mu, torch.Tensor) and mu.dtype == torch.float64 and mu.shape == (12,)
        np.testing.assert_allclose(mu.numpy(), np.mean(X, axis=0), rtol=1e-13, atol=1e-15)
        ref = np.cov(X, rowvar=False, bias=True) if len(X) > 1 else np.zeros((12, 12))
        np.testing.assert_allclose(S.numpy(), ref, rtol=1e-12, atol=1e-14)
        # the covariance is the population one (1/n), not the sample one (1/(n-1))
        if len(X) > 2:
            assert not np.allclose(S.numpy(), np.cov(X, rowvar=False), rtol=1e-6)


def test_statistics_accept_torch_and_float32(clouds):
    X = clouds[3]
    a = socm_lib.cloud_covariance(torch.from_numpy(X.astype(np.float32)))
    assert a.dtype == torch.float64
    np.testing.assert_allclose(a.numpy(), np.cov(X.astype(np.float32).astype(np.float64), rowvar=False, bias=True),
                               rtol=1e-10, atol=1e-12)


def test_spread_and_concentration_ratio(clouds):
    for X in clouds:
        mu = X.mean(axis=0)
        S = np.mean(np.sum((X - mu) ** 2, axis=1))
        assert socm_lib.spread(X) == pytest.approx(S, rel=1e-12, abs=1e-15)
        c = socm_lib.concentration_ratio(X)
        assert c == pytest.approx(S / np.sum(mu**2), rel=1e-12, abs=1e-15)
        # c equals the trace of the covariance of the normalised cloud
        Xn = X / np.linalg.norm(mu)
        assert c == pytest.approx(np.trace(np.cov(Xn, rowvar=False, bias=True)) if len(X) > 1 else 0.0,
                                  rel=1e-12, abs=1e-15)
        np.testing.assert_allclose(socm_lib.normalize_cloud(X).numpy(), Xn, rtol=1e-13)
        assert np.linalg.norm(socm_lib.normalize_cloud(X).numpy().mean(0)) == pytest.approx(1.0, rel=1e-13)
        # scale-free
        assert socm_lib.concentration_ratio(X * 37.5) == pytest.approx(c, rel=1e-12, abs=1e-15)


def test_avg_intra_cosine_equals_explicit_matrix_mean(clouds):
    for X in clouds:
        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        ref = float(np.mean(U @ U.T))  # n x n, self-pairs included
        assert socm_lib.avg_intra_cosine(X) == pytest.approx(ref, rel=1e-12)


def test_equal_norm_identity():
    rng = np.random.default_rng(1)
    for n, d, shift in [(5, 8, 1.0), (20, 16, 0.3), (40, 32, 2.0)]:
        X = rng.normal(size=(n, d)) + shift
        X = 3.7 * X / np.linalg.norm(X, axis=1, keepdims=True)  # every token has norm 3.7
        c = socm_lib.concentration_ratio(X)
        avgcos = socm_lib.avg_intra_cosine(X)
        assert c == pytest.approx(1 / avgcos - 1, rel=1e-10)
    # and it fails when norms differ (so the identity really needs equal norms)
    Y = rng.normal(size=(10, 8)) + 1.0
    Y *= np.linspace(0.2, 5, 10)[:, None]
    assert abs(socm_lib.concentration_ratio(Y) - (1 / socm_lib.avg_intra_cosine(Y) - 1)) > 1e-3


def random_spd(rng, d, rank=None):
    rank = d if rank is None else rank
    M = rng.normal(size=(d, rank))
    return M @ M.T / rank + (0.1 * np.eye(d) if rank == d else 0)


def sqrtm(S):
    """scipy's general matrix square root (Schur method): independent of socm_lib.bures, exact for SPD S."""
    return scipy.linalg.sqrtm(S).real


def test_psd_sqrt_and_fidelity():
    rng = np.random.default_rng(2)
    S1, S2 = random_spd(rng, 6), random_spd(rng, 6)
    R = socm_lib.psd_sqrt(S1).numpy()
    np.testing.assert_allclose(R @ R, S1, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(R, scipy.linalg.sqrtm(S1).real, rtol=1e-9, atol=1e-11)
    ref = np.trace(sqrtm(sqrtm(S1) @ S2 @ sqrtm(S1)))
    assert socm_lib.fidelity(S1, S2) == pytest.approx(ref, rel=1e-11)
    # symmetric in its arguments
    assert socm_lib.fidelity(S2, S1) == pytest.approx(ref, rel=1e-10)


def test_gaussian_w2_is_mean_part_plus_bures():
    rng = np.random.default_rng(3)
    S1, S2 = random_spd(rng, 5), random_spd(rng, 5)
    mu1, mu2 = rng.normal(size=5), rng.normal(size=5)
    bw2 = socm_lib.bures_wasserstein_sq(S1, S2)
    ref_bw2 = np.trace(S1) + np.trace(S2) - 2 * np.trace(sqrtm(sqrtm(S1) @ S2 @ sqrtm(S1)))
    assert bw2 == pytest.approx(ref_bw2, rel=1e-11)
    w2 = socm_lib.gaussian_w2_sq(mu1, S1, mu2, S2)
    assert w2 == pytest.approx(np.sum((mu1 - mu2) ** 2) + ref_bw2, rel=1e-11)
    assert socm_lib.gaussian_w2_sq(mu1, S1, mu1, S1) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="entries"):
        socm_lib.gaussian_w2_sq(mu1, S1, mu2[:3], S2)


@pytest.mark.parametrize("d", [2, 5, 10])
def test_bures_matches_pot(d):
    ot = pytest.importorskip("ot", reason="POT (package 'pot') is not installed")
    rng = np.random.default_rng(4 + d)
    for _ in range(3):
        S1, S2 = random_spd(rng, d), random_spd(rng, d)
        mu1, mu2 = rng.normal(size=d), rng.normal(size=d)
        # POT's bures_wasserstein_distance(ms, mt, Cs, Ct) is the W2 *distance* (not squared), means included
        bw = float(ot.gaussian.bures_wasserstein_distance(np.zeros(d), np.zeros(d), S1, S2))
        assert socm_lib.bures_wasserstein_sq(S1, S2) == pytest.approx(bw**2, rel=1e-8)
        w2 = float(ot.gaussian.bures_wasserstein_distance(mu1, mu2, S1, S2))
        assert socm_lib.gaussian_w2_sq(mu1, S1, mu2, S2) == pytest.approx(w2**2, rel=1e-8)


def test_bures_properties():
    rng = np.random.default_rng(5)
    S1 = random_spd(rng, 7)
    assert socm_lib.bures_wasserstein_sq(S1, S1) == pytest.approx(0.0, abs=1e-12)
    # commuting (diagonal) covariances: BW^2 = sum (sqrt a - sqrt b)^2
    a, b = rng.uniform(0, 2, 7), rng.uniform(0, 2, 7)
    assert socm_lib.bures_wasserstein_sq(np.diag(a), np.diag(b)) == pytest.approx(
        np.sum((np.sqrt(a) - np.sqrt(b)) ** 2), rel=1e-12
    )
    # PSD-safe on rank-deficient input (never NaN, never negative)
    S = random_spd(rng, 30, rank=3)
    v = socm_lib.bures_wasserstein_sq(S, S)
    assert np.isfinite(v) and 0 <= v < 1e-6
