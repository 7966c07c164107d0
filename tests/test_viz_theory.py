"""Figures of the theory chapters (socm_lib.viz.theory): what they draw equals what the library computes."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import socm_lib  # noqa: E402
from socm_lib.viz import theory  # noqa: E402

# the worked example of Chapter 3: d_mu = 1/5, |mu1 - mu2|^2 = 4/5, BW^2 = 13/80
X1 = np.array([[6.0, 1.0], [6.0, -1.0], [2.0, 1.0], [2.0, -1.0]])
X2 = np.array([[7.0, 11.0], [7.0, 5.0], [5.0, 11.0], [5.0, 5.0]])
# Example ch04-above-one: d_sigma = 2, SOCM = 8/5
T1 = np.array([[3.0, 0.0], [-1.0, 0.0]])
T2 = np.array([[3.0, 14.0], [3.0, -6.0]])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_mean_spread_basis_is_orthonormal_and_starts_with_the_mean():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 20)) + 2.0
    V = theory.mean_spread_basis(X)
    assert V.shape == (2, 20)
    np.testing.assert_allclose(V @ V.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(V[0], X.mean(0) / np.linalg.norm(X.mean(0)), atol=1e-12)
    # in the plane of X1 (d = 2) the second direction is the vertical spread of the rectangle
    np.testing.assert_allclose(theory.mean_spread_basis(X1), np.eye(2), atol=1e-12)


def test_mean_spread_basis_rejects_degenerate_clouds():
    with pytest.raises(ValueError, match="mean 0"):
        theory.mean_spread_basis(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    with pytest.raises(ValueError, match="no spread"):
        theory.mean_spread_basis(np.array([[1.0, 0.0], [2.0, 0.0]]))


def test_token_cloud_puts_the_normalised_mean_at_one():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 12)) + 1.0
    fig = theory.token_cloud(X, [f"t{k}" for k in range(7)])
    ax = fig.axes[0]
    means = [line for line in ax.get_lines() if line.get_marker() == "X"]
    assert len(means) == 1
    np.testing.assert_allclose([means[0].get_xdata()[0], means[0].get_ydata()[0]], [1.0, 0.0], atol=1e-12)
    assert f"c = {socm_lib.concentration_ratio(X):.3f}" in ax.get_title()
    assert sorted(t.get_text() for t in ax.texts if t.get_text()) == [f"t{k}" for k in range(7)]
    with pytest.raises(ValueError, match="one string per token"):
        theory.token_cloud(X, ["only one"])


def test_pair_on_surface_reports_the_pair_and_marks_socm_one_beyond_the_square():
    fig = theory.pair_on_surface(T1, T2)
    assert "SOCM = 1.6000" in fig._suptitle.get_text() and "= 2.0000" in fig._suptitle.get_text()
    surface = fig.axes[1]
    assert surface.get_ylim()[1] > 2.0
    assert "SOCM = 1" in [t.get_text() for t in surface.get_legend().get_texts()]
    inside = theory.pair_on_surface(X1, X2)  # d_sigma < 1: no extra contour
    assert "SOCM = 1" not in [t.get_text() for t in inside.axes[1].get_legend().get_texts()]
    with pytest.raises(ValueError, match="R\\^2"):
        theory.pair_on_surface(np.ones((3, 3)), np.ones((3, 3)))


def test_w2_decomposition_bars_are_the_closed_form_parts():
    fig = theory.w2_decomposition(X1, X2)
    bars = [p for p in fig.axes[1].patches if isinstance(p, Rectangle)]
    heights = sorted(round(b.get_height(), 12) for b in bars)
    np.testing.assert_allclose(heights, sorted([4 / 5, 13 / 80, 4 / 5 + 13 / 80]), atol=1e-9)
    assert "0.8000 + 0.1625 = 0.9625" in fig.axes[1].get_title()
    with pytest.raises(ValueError, match="R\\^2"):
        theory.w2_decomposition(np.ones((3, 5)), np.ones((4, 5)))


def test_the_w2_bar_is_the_cost_of_an_explicit_coupling():
    """The map T pushes Sigma_1 to Sigma_2, and the coupling's cost, computed from T alone, is the Bures formula's W_2^2."""
    rng = np.random.default_rng(5)
    for d in (2, 5):
        F1, F2 = rng.normal(size=(d, d)), rng.normal(size=(d, d))
        S1, S2 = F1 @ F1.T + 0.1 * np.eye(d), F2 @ F2.T  # non-commuting; Sigma_2 may be near-singular
        m1, m2 = rng.normal(size=d), rng.normal(size=d)
        cost, T = theory.linear_map_coupling(m1, S1, m2, S2)
        np.testing.assert_allclose(T, T.T, atol=1e-10)
        np.testing.assert_allclose(T @ S1 @ T, S2, atol=1e-9)
        assert cost == pytest.approx(socm_lib.gaussian_w2_sq(m1, S1, m2, S2), rel=1e-9)
        # a Monte Carlo estimate of E||X - Y||^2 for that coupling agrees too
        X = m1 + rng.multivariate_normal(np.zeros(d), S1, size=200_000)
        Y = m2 + (X - m1) @ T.T
        assert float(((X - Y) ** 2).sum(axis=1).mean()) == pytest.approx(cost, rel=2e-2)
    with pytest.raises(ValueError, match="singular"):
        theory.linear_map_coupling(np.zeros(2), np.diag([1.0, 0.0]), np.zeros(2), np.eye(2))


def test_coupling_and_procrustes_costs_are_w2_and_bures():
    """Left: the cheapest permutation (checked against all 4! of them); right: BW^2 of the covariances, below it."""
    from itertools import permutations

    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) * [2.0, 0.5]
    fig, (w2_sq, bw_sq) = theory.coupling_and_procrustes(A, B)
    Ca, Cb = A - A.mean(0), B - B.mean(0)
    best = min(((Ca - Cb[list(p)]) ** 2).sum(axis=1).mean() for p in permutations(range(4)))
    assert w2_sq == pytest.approx(best, rel=1e-12)
    exact = float(socm_lib.bures_wasserstein_sq(Ca.T @ Ca / 4, Cb.T @ Cb / 4))
    assert bw_sq == pytest.approx(exact, rel=1e-9)
    assert bw_sq <= w2_sq + 1e-12
    left, right = fig.axes
    assert len(left.lines) == 4 and len(right.lines) == 4
    assert f"{w2_sq:.4f}" in left.get_title() and f"{bw_sq:.4f}" in right.get_title()
    with pytest.raises(ValueError, match="same number of tokens"):
        theory.coupling_and_procrustes(A, B[:3])
