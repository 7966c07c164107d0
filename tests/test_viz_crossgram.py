"""socm_lib.viz.crossgram: the cross-Gram figure draws the matrix and its singular values, headless."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import socm_lib  # noqa: E402
from socm_lib.reference import lowrank_pair  # noqa: E402
from socm_lib.viz.crossgram import cross_gram, plot_cross_gram  # noqa: E402


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    base = rng.normal(size=16)
    return base + 0.5 * rng.normal(size=(5, 16)), base + 0.5 * rng.normal(size=(7, 16))


def test_singular_values_sum_to_the_fidelity(pair):
    K, s = cross_gram(*pair)
    assert K.shape == (5, 7) and np.all(np.diff(s) <= 0)
    r = lowrank_pair(*pair)
    assert r.d_sigma == pytest.approx((r.trace1 + r.trace2 - 2 * s.sum()) / 4, rel=1e-12)
    assert socm_lib.socm(*pair).d_sigma == pytest.approx(r.d_sigma, rel=1e-10)


def test_plot_draws_heatmap_bars_and_labels(pair):
    fig = plot_cross_gram(*pair, tokens1=list("abcde"), tokens2=list("ABCDEFG"), title="t")
    ax, bx = fig.axes[0], fig.axes[1]  # then the colour bar
    K, s = cross_gram(*pair)
    np.testing.assert_allclose(ax.images[0].get_array(), K)
    np.testing.assert_allclose([p.get_height() for p in bx.patches], s)
    assert f"{s.sum():.4f}" in bx.get_title()
    assert [t.get_text() for t in ax.get_yticklabels()] == list("abcde")
    plt.close(fig)
    with pytest.raises(ValueError, match="one label per token"):
        plot_cross_gram(*pair, tokens1=["a"])
    plt.close("all")
