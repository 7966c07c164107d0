"""socm_lib.paper_route, the released code's d x d route: exact where it should be, and biased as derived where not.

Derivation (socm_lib.authors_route, Chapter 6): with eps I added before both square roots, R = (Sigma_1 + eps I)^(1/2)
is invertible, and R Sigma_2 R has r = rank(A B^T) = min(r_1, r_2) eigenvalues s_k^2 (s_k the singular values of the
cross-Gram) plus d - r eigenvalues that are zero or of order eps; after + eps I each of the latter returns about
sqrt(eps). So in exact arithmetic d_sigma is low by [(d - r) sqrt(eps) + sum_k (sqrt(s_k^2 + eps) - s_k)] / 2.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.reference import lowrank_factor

EPS = 1e-9


def full_rank_clouds(rng, d, lengths=(40, 55, 70, 90)):
    """n >> d tokens with per-axis spreads in [0.3, 1] around a mean of norm about 2 sqrt(d): well-conditioned covariances."""
    return [2.0 + rng.normal(size=d) + rng.normal(size=(n, d)) * rng.uniform(0.3, 1.0, size=d) for n in lengths]


def token_clouds(rng, d, lengths, spread=0.6):
    base = rng.normal(size=d)
    return [base + 0.5 * rng.normal(size=d) + spread * rng.normal(size=(n, d)) for n in lengths]


@pytest.mark.parametrize("d", [4, 12])
def test_full_rank_float32_agrees_with_exact_engine(d):
    clouds = full_rank_clouds(np.random.default_rng(d), d)
    exact = socm_lib.socm_pairs(clouds, device="cpu")
    route = socm_lib.paper_route(clouds, device="cpu")
    assert isinstance(route, socm_lib.PairResult)
    np.testing.assert_array_equal(route.i, exact.i)
    np.testing.assert_array_equal(route.j, exact.j)
    np.testing.assert_allclose(route.d_mu, exact.d_mu, rtol=1e-6, atol=1e-7)
    # d_sigma is tr S1 + tr S2 - 2 F: float32 round-off in the two eigendecompositions (about 1e-7 of the largest
    # eigenvalue, divided by the root of the smallest) leaves it good to about 1e-4 of the traces, not of itself.
    traces = np.array([socm_lib.concentration_ratio(x) for x in clouds])
    scale = traces[exact.i] + traces[exact.j]
    assert np.all(np.abs(route.d_sigma - exact.d_sigma) <= 1e-4 * scale)
    assert np.all(np.abs(route.socm - exact.socm) <= 1e-4 * scale)
    route64 = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu")
    # full rank: eps I moves each root by about eps / (2 sqrt(lambda)), far below the rank-deficient bias (~1e-3)
    np.testing.assert_allclose(route64.d_sigma, exact.d_sigma, rtol=0, atol=1e-6)


def derived_shift(X1, X2, d, eps=EPS):
    """The derived shift of d_sigma: -[(d - r) sqrt(eps) + sum_k (sqrt(s_k^2 + eps) - s_k)] / 2, r = min(r_1, r_2).

    s_k are the r nonzero singular values of the cross-Gram A B^T (the low-rank reference's factors).
    """
    A, B = lowrank_factor(X1)[0], lowrank_factor(X2)[0]
    r = min(np.linalg.matrix_rank(A), np.linalg.matrix_rank(B))
    s = np.linalg.svd(A @ B.T, compute_uv=False)[:r]
    return -((d - r) * np.sqrt(eps) + np.sum(np.sqrt(s**2 + eps) - s)) / 2


@pytest.mark.parametrize("d", [128, 384])
def test_rank_deficient_bias_matches_derivation_in_float64(d):
    """25-token clouds (r = 24): the shift is the derived one to 1e-4 relative; its leading term (d - 24) sqrt(eps)/2
    alone is within 3 %, for wide and for concentrated clouds (more concentrated: slightly larger shift)."""
    rng = np.random.default_rng(d)
    leading = -(d - 24) * np.sqrt(EPS) / 2
    for spread in (0.6, 0.3):
        clouds = token_clouds(rng, d, [25, 25, 25], spread)
        exact = socm_lib.socm_pairs(clouds, device="cpu")
        assert exact.d_sigma.min() > 2 * abs(leading)  # no pair is clamped here
        shift = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu").d_sigma - exact.d_sigma
        derived = [derived_shift(clouds[i], clouds[j], d) for i, j in zip(exact.i, exact.j)]
        np.testing.assert_allclose(shift, derived, rtol=1e-4)
        np.testing.assert_allclose(shift, leading, rtol=0.03)
        assert np.all(shift < leading)  # the second term only adds to the shift


def test_bias_follows_the_smaller_rank_not_the_sum_of_ranks():
    """r_1 = 9, r_2 = 39, in both orders: the shift is about (d - min(r_1, r_2)) sqrt(eps)/2, not (d - r_1 - r_2) sqrt(eps)/2."""
    d = 200
    rng = np.random.default_rng(11)
    short, long_ = token_clouds(rng, d, [10, 40])
    exact = socm_lib.socm(short, long_).d_sigma
    both = socm_lib.paper_route([short, long_], [(0, 1), (1, 0)], dtype=torch.float64, device="cpu").d_sigma - exact
    np.testing.assert_allclose(both, [derived_shift(short, long_, d), derived_shift(long_, short, d)], rtol=1e-3)
    np.testing.assert_allclose(both, -(d - 9) * np.sqrt(EPS) / 2, rtol=0.05)
    assert np.all(both < -1.2 * (d - 9 - 39) * np.sqrt(EPS) / 2)


def test_pairs_below_the_shift_are_clamped_to_zero():
    d = 256
    rng = np.random.default_rng(3)
    clouds = token_clouds(rng, d, [25, 25, 25], spread=0.02)  # tiny spread: exact d_sigma far below the shift
    exact = socm_lib.socm_pairs(clouds, device="cpu")
    assert exact.d_sigma.max() < (d - 24) * np.sqrt(EPS) / 2
    route = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu")
    assert np.all(route.d_sigma == 0) and np.all(route.socm == 0)


def test_batches_do_not_change_the_result_and_pairs_are_honoured():
    rng = np.random.default_rng(4)
    clouds = token_clouds(rng, 32, [3, 8, 5, 12, 7])
    pairs = np.array([[0, 1], [3, 2], [1, 0], [4, 4], [2, 4]])
    a = socm_lib.paper_route(clouds, pairs, dtype=torch.float64, batch_size=2, device="cpu")
    b = socm_lib.paper_route(clouds, pairs, dtype=torch.float64, device="cpu")
    np.testing.assert_allclose(a.d_sigma, b.d_sigma, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(a.i, pairs[:, 0])
    exact = socm_lib.socm_pairs(clouds, pairs, device="cpu")
    np.testing.assert_allclose(b.d_mu, exact.d_mu, rtol=1e-12, atol=1e-15)


def test_bad_arguments_are_refused():
    clouds = [np.ones((3, 4)) + np.eye(3, 4), np.ones((2, 4))]
    with pytest.raises(TypeError, match="dtype"):
        socm_lib.paper_route(clouds, dtype=torch.float16)
    with pytest.raises(ValueError, match="batch_size"):
        socm_lib.paper_route(clouds, batch_size=0)
    with pytest.raises(ValueError, match="no pairs"):
        socm_lib.paper_route(clouds[:1])
