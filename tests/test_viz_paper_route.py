"""socm_lib.viz.paper_route: the per-pair shift figure draws what it is given, headless."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from socm_lib.viz.paper_route import plot_route_shift  # noqa: E402


def test_points_and_diagonal_are_drawn():
    leading = {"a": np.array([0.005, 0.006]), "b": np.array([0.011, 0.012, 0.0118])}
    sets = {k: (v, 1.01 * v) for k, v in leading.items()}
    fig = plot_route_shift(sets, title="t")
    ax = fig.axes[0]
    offsets = [c.get_offsets() for c in ax.collections]
    np.testing.assert_allclose(offsets[1][:, 0], leading["b"])
    np.testing.assert_allclose(offsets[1][:, 1], 1.01 * leading["b"])
    x, y = ax.lines[0].get_data()
    np.testing.assert_allclose(x, y)  # the diagonal
    assert ax.get_xlim()[1] >= 1.01 * 0.012 and ax.get_title() == "t"
    assert "3 pairs" in ax.get_legend().get_texts()[1].get_text()
    plt.close(fig)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="empty"):
        plot_route_shift({})
    with pytest.raises(ValueError, match="one length"):
        plot_route_shift({"a": (np.ones(3), np.ones(2))})
