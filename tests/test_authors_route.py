"""socm_lib.paper_route, the released code's d x d route: exact where it should be, and biased as derived where not.

Derivation (socm_lib.authors_route, book Proposition prop-ch07-regulariser): with eps I added before both square roots,
R^2 = Sigma_1 + eps I exactly, so R Sigma_2 R has the nonzero eigenvalues of B R^2 B^T = K^T K + eps B B^T (K = A B^T).
That gives the route's fidelity exactly in n_2 x n_2 matrices, and Weyl's inequality bounds its excess over
||K||_* from below by (d - r) sqrt(eps) + sum_k (sqrt(s_k^2 + eps) - s_k) and from above by the same count with
eps (1 + lambda) inside the roots. d_sigma is low by half the excess, or clamped to 0 when the exact d_sigma is at
most that. Every check here runs the route's d x d steps in float64 against the n_2 x n_2 expressions.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.authors_route import regulariser_excess

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


def route_shift(clouds, pairs=None):
    """The float64 route's d_sigma minus the exact one, for every pair (i < j, or the pairs given)."""
    exact = socm_lib.socm_pairs(clouds, pairs, device="cpu")
    route = socm_lib.paper_route(clouds, pairs, dtype=torch.float64, device="cpu")
    return exact, route.d_sigma - exact.d_sigma


@pytest.mark.parametrize("d", [128, 384])
def test_equal_lengths_the_lower_bound_is_the_shift(d):
    """25-token clouds (r = r_1 = r_2 = 24): the float64 route is low by exactly half the n_2 x n_2 excess (1e-6
    relative), the Weyl bounds enclose it and here pinch it (no extra directions): the lower bound, the book's
    displayed expression, is within 1e-4; its leading term (d - 24) sqrt(eps)/2 alone within 3 %."""
    rng = np.random.default_rng(d)
    leading = -(d - 24) * np.sqrt(EPS) / 2
    for spread in (0.6, 0.3):
        clouds = token_clouds(rng, d, [25, 25, 25], spread)
        exact, shift = route_shift(clouds)
        assert exact.d_sigma.min() > 2 * abs(leading)  # no pair is clamped here
        excess = [regulariser_excess(clouds[i], clouds[j]) for i, j in zip(exact.i, exact.j)]
        lower, full, upper = (np.array(v) for v in zip(*excess))
        np.testing.assert_allclose(shift, -full / 2, rtol=1e-6)
        assert np.all(lower <= full * (1 + 1e-12)) and np.all(full <= upper * (1 + 1e-12))
        np.testing.assert_allclose(shift, -lower / 2, rtol=1e-4)
        np.testing.assert_allclose(shift, leading, rtol=0.03)
        assert np.all(shift < leading)  # the sum over s_k only adds to the shift


def test_unequal_ranks_the_lower_bound_is_not_first_order():
    """r_1 = 9 < r_2 = 39 at d = 384: the r_2 - r_1 extra directions return sqrt(eps (1 + lambda_m)), not sqrt(eps).
    The exact n_2 x n_2 expression matches the d x d route to 1e-6 in both orders and lies between the bounds; the
    lower bound misses by a share that grows with the concentration of the second text (about tr Sigma_2 /
    (2 (d - r))), past 0.3 % at concentration 5, far beyond the 1e-6 of the exact expression."""
    d = 384
    misses = []
    for spread in (0.6, 1.5, 3.0):
        rng = np.random.default_rng(5)
        short, long_ = token_clouds(rng, d, [10, 40], spread)
        _, both = route_shift([short, long_], [(0, 1), (1, 0)])
        e12, e21 = regulariser_excess(short, long_), regulariser_excess(long_, short)
        np.testing.assert_allclose(both, [-e12.exact / 2, -e21.exact / 2], rtol=1e-6)
        for e in (e12, e21):
            assert e.lower <= e.exact <= e.upper
        c2 = socm_lib.concentration_ratio(long_)
        miss = 1 - e12.lower / e12.exact
        assert 0.3 * c2 / (2 * (d - 9)) < miss < 1.5 * c2 / (2 * (d - 9))
        misses.append((c2, miss))
        assert 1 - e21.lower / e21.exact < 1e-5  # long text first: no extra directions, the bound is tight
    assert misses[-1][0] > 5 and misses[-1][1] > 3e-3
    assert misses[0][1] < misses[1][1] < misses[2][1]


def test_the_route_is_not_symmetric_in_the_pair():
    """Unlike d_Sigma (symmetric, Chapter 4), the route's d_Sigma changes when the two texts swap places, by the
    amount the exact excess predicts (about 5e-6 here); with equal ranks there are no extra directions and what is
    left is of order eps lambda / s_k, some 1e-9."""
    d = 256
    rng = np.random.default_rng(7)
    short, long_ = token_clouds(rng, d, [8, 33], spread=1.0)
    route = socm_lib.paper_route([short, long_], [(0, 1), (1, 0)], dtype=torch.float64, device="cpu").d_sigma
    predicted = (regulariser_excess(long_, short).exact - regulariser_excess(short, long_).exact) / 2
    assert abs(route[0] - route[1]) > 1e-6
    np.testing.assert_allclose(route[0] - route[1], predicted, rtol=1e-4)
    a, b = token_clouds(rng, d, [20, 20], spread=1.0)
    same = socm_lib.paper_route([a, b], [(0, 1), (1, 0)], dtype=torch.float64, device="cpu").d_sigma
    predicted_same = (regulariser_excess(b, a).exact - regulariser_excess(a, b).exact) / 2
    assert abs(same[0] - same[1]) < 1e-2 * abs(route[0] - route[1])
    np.testing.assert_allclose(same[0] - same[1], predicted_same, rtol=0, atol=1e-10)


def test_the_clamp_threshold_is_the_shift_itself():
    """The route returns 0 exactly when the exact d_sigma is at most its own shift (exact excess / 2), that is when
    BW^2 <= 2 (F_route - F), about 2 (d - r) sqrt(eps): pairs at 0.6 to 0.95 of the threshold are clamped (a
    threshold of BW^2 < (d - r) sqrt(eps) would keep them), pairs at 1.05 to 1.6 times it are not, and lose
    exactly their shift."""
    d, n = 256, 25
    rng = np.random.default_rng(3)
    base = token_clouds(rng, d, [n], spread=0.3)[0]
    direction = rng.normal(size=(n, d))
    below = above = 0
    for t in np.linspace(0.08, 0.2, 30):
        pair = [base, base + t * direction]
        exact = socm_lib.socm(*pair).d_sigma
        shift = regulariser_excess(*pair).exact / 2
        ratio = exact / shift
        route = socm_lib.paper_route(pair, dtype=torch.float64, device="cpu").d_sigma[0]
        if 0.6 < ratio < 0.95:
            assert route == 0
            assert exact > (d - (n - 1)) * np.sqrt(EPS) / 4  # BW^2 above (d - r) sqrt(eps): the weaker threshold misses it
            below += 1
        elif 1.05 < ratio < 1.6:
            assert route > 0
            np.testing.assert_allclose(route, exact - shift, rtol=1e-5)
            above += 1
    assert below >= 3 and above >= 3


def test_bias_follows_the_smaller_rank_not_the_sum_of_ranks():
    """r_1 = 9, r_2 = 39, in both orders: the shift is about (d - min(r_1, r_2)) sqrt(eps)/2, not (d - r_1 - r_2) sqrt(eps)/2."""
    d = 200
    rng = np.random.default_rng(11)
    short, long_ = token_clouds(rng, d, [10, 40])
    _, both = route_shift([short, long_], [(0, 1), (1, 0)])
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
    with pytest.raises(ValueError, match="dtype=torch.float16 is not supported"):
        socm_lib.paper_route(clouds, dtype=torch.float16)
    with pytest.raises(ValueError, match="batch_size"):
        socm_lib.paper_route(clouds, batch_size=0)
    with pytest.raises(ValueError, match="no pairs"):
        socm_lib.paper_route(clouds[:1])


def test_step_dtypes_round_one_step_alone():
    """Naming every step's dtype is the same route; rounding one step in float32 moves the result by float32 noise."""
    rng = np.random.default_rng(5)
    clouds = token_clouds(rng, 64, (6, 9, 14, 20))
    route32 = socm_lib.paper_route(clouds, device="cpu")
    every = {step: torch.float32 for step in ("statistics", "first root", "second root")}
    same = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu", step_dtypes=every)
    np.testing.assert_array_equal(same.d_sigma, route32.d_sigma)
    np.testing.assert_array_equal(same.socm, route32.socm)
    route64 = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu")
    for step in every:
        one = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu", step_dtypes={step: "float32"})
        assert not np.array_equal(one.d_sigma, route64.d_sigma), step
        np.testing.assert_allclose(one.d_sigma, route64.d_sigma, rtol=0, atol=1e-4)
    second = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu", step_dtypes={"second root": "float32"})
    np.testing.assert_array_equal(second.d_mu, route64.d_mu)  # the statistics stayed float64
    with pytest.raises(ValueError, match="unknown steps"):
        socm_lib.paper_route(clouds, device="cpu", step_dtypes={"third root": torch.float32})
    with pytest.raises(TypeError, match="step_dtypes must be a dict"):
        socm_lib.paper_route(clouds, device="cpu", step_dtypes=[torch.float32])


def test_null_roots_are_the_regulariser_in_float64_and_spread_in_float32():
    """d - r roots, each sqrt(eps) in float64 when the second text is the shorter; float32 rounding spreads them."""
    from socm_lib.authors_route import null_roots

    rng = np.random.default_rng(8)
    long, short = token_clouds(rng, 96, (30, 12), spread=1.5)
    roots64 = null_roots(long, short, dtype=torch.float64)
    assert roots64.shape == (96 - 11,)  # r = min(30, 12) - 1
    np.testing.assert_allclose(roots64, np.sqrt(EPS), rtol=1e-6)
    roots32 = null_roots(long, short)
    assert roots32.shape == roots64.shape
    assert roots32.std() > 100 * roots64.std()
    assert roots32.max() < 1e-2  # still the regulariser's directions, not the cross-Gram's
