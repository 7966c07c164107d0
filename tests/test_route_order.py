"""Which order of a pair the paper's route shifts more depends on the pair (chapter 7, "The route is not symmetric").

By part 1 of ``prop-ch07-regulariser`` the route's excess fidelity involves the second text alone, through
``eps * B B^T``. With the longer text second, its extra directions add ``sqrt(eps (1 + lambda_m))`` terms; with the
shorter text second, its eigenvalues enter the roots of the ``s_k`` terms. Real clouds mostly follow the first
effect; a short, spread text with a long, tight one follows the second. Both orders are checked against the
float64 d x d route itself, so the counterexample is the route's behaviour, not an artifact of the formula.
"""

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.authors_route import regulariser_excess

D = 384


def clouds(n_short, spread_short, n_long, spread_long, seed=0):
    """Two clouds around one mean direction: ``n_short`` tokens spread by ``spread_short``, ``n_long`` by ``spread_long``."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(D)
    base /= np.linalg.norm(base)
    short = base + spread_short * rng.standard_normal((n_short, D)) / np.sqrt(D)
    long_ = base + spread_long * rng.standard_normal((n_long, D)) / np.sqrt(D)
    return short, long_


def route_shift(x1, x2):
    """Exact d_sigma minus the float64 route's d_sigma for the ordered pair (x1, x2)."""
    route = socm_lib.paper_route([x1, x2], [(0, 1)], dtype=torch.float64, device="cpu").d_sigma[0]
    return socm_lib.socm(x1, x2).d_sigma - route


@pytest.mark.parametrize("spreads, longer_second_larger", [
    ((0.5, 0.5), True),    # comparable spreads: the long text's extra directions dominate
    ((3.0, 0.01), False),  # a short, spread text with a long, tight one: the order reverses
])
def test_the_larger_shift_can_come_from_either_order(spreads, longer_second_larger):
    short, long_ = clouds(5, spreads[0], 40, spreads[1])
    longer_second = regulariser_excess(short, long_).exact
    longer_first = regulariser_excess(long_, short).exact
    assert bool(longer_second > longer_first) is longer_second_larger
    # the route itself, run in float64 in both orders, is low by half of each excess
    shift_second, shift_first = route_shift(short, long_), route_shift(long_, short)
    assert shift_second == pytest.approx(longer_second / 2, rel=1e-6)
    assert shift_first == pytest.approx(longer_first / 2, rel=1e-6)
    assert bool(shift_second > shift_first) is longer_second_larger
