"""socm_lib.paper_route, the released code's d x d route: exact where it should be, and biased as derived where not.

Derivation (socm_lib.authors_route, Chapter 6): with eps I added before both square roots, the second
root sees R Sigma_2 R of rank r_2 with d - r_2 null directions, each returning sqrt(eps); so in exact
arithmetic d_sigma is low by (d - r_2) sqrt(eps) / 2, whatever the spread of the clouds.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib

EPS = 1e-9


def full_rank_clouds(rng, d, lengths=(40, 55, 70, 90)):
    return [2.0 + rng.normal(size=d) + rng.normal(size=(n, d)) @ (0.4 * np.eye(d) + 0.2 * rng.normal(size=(d, d)))
            for n in lengths]


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
    for field in ("d_mu", "d_sigma", "socm"):  # float32 accuracy: a few units of 1e-7, relative
        np.testing.assert_allclose(getattr(route, field), getattr(exact, field), rtol=3e-5, atol=1e-7)
    route64 = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu")
    np.testing.assert_allclose(route64.d_sigma, exact.d_sigma, rtol=1e-7)  # eps I moves full-rank roots by O(eps)


@pytest.mark.parametrize("d", [128, 384])
def test_rank_deficient_bias_matches_derivation_in_float64(d):
    """25-token clouds (r = 24): the shift is -(d - 24) sqrt(eps)/2 to 1 %, for wide and for concentrated clouds."""
    rng = np.random.default_rng(d)
    predicted = -(d - 24) * np.sqrt(EPS) / 2
    for spread in (0.6, 0.3):
        clouds = token_clouds(rng, d, [25, 25, 25], spread)
        exact = socm_lib.socm_pairs(clouds, device="cpu").d_sigma
        assert exact.min() > 2 * abs(predicted)  # no pair is clamped here
        shift = socm_lib.paper_route(clouds, dtype=torch.float64, device="cpu").d_sigma - exact
        np.testing.assert_allclose(shift, predicted, rtol=0.01)


def test_bias_depends_on_the_rank_of_the_second_cloud():
    """r_1 = 9, r_2 = 39 and the reverse: the shift follows d - r_2 (the rank of the sandwiched matrix), not d - r_1 - r_2."""
    d = 200
    rng = np.random.default_rng(11)
    short, long_ = token_clouds(rng, d, [10, 40])
    exact = socm_lib.socm(short, long_).d_sigma
    both = socm_lib.paper_route([short, long_], [(0, 1), (1, 0)], dtype=torch.float64, device="cpu").d_sigma - exact
    np.testing.assert_allclose(both, [-(d - 39) * np.sqrt(EPS) / 2, -(d - 9) * np.sqrt(EPS) / 2], rtol=0.03)
    assert abs(both[0] - both[1]) > 0.5 * 30 * np.sqrt(EPS) / 2


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
