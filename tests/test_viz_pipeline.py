"""The Chapter 1 pipeline figure (socm_lib.viz.pipeline): it draws what the library computes from the cloud."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from socm_lib.viz.pipeline import pipeline  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _cloud(n=7, d=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) + 3.0


def test_five_panels_with_the_cloud_sizes_and_the_pooled_vector():
    X = _cloud()
    tokens = [f"t{i}" for i in range(len(X))]
    fig = pipeline(X, tokens, "A short text about seven tokens.")
    axes = fig.axes[:5]
    titles = [ax.get_title() for ax in axes]
    assert titles[1] == "2. tokens (n = 7)"
    assert "(7 × 12)" in titles[2]
    assert "rank 6" in titles[3]  # n - 1 = 6 < d: the covariance is singular
    assert "12 numbers" in titles[4]
    # panel 5 shows exactly the normalised mean, in order
    shown = np.asarray(axes[4].images[0].get_array()).ravel()[:12]
    mean = X.mean(axis=0)
    np.testing.assert_allclose(shown, mean / np.linalg.norm(mean), atol=1e-12)
    # panel 3 shows one point per token
    assert len(axes[2].collections[0].get_offsets()) == 7


def test_long_texts_list_first_and_last_pieces():
    X = _cloud(n=30, d=8)
    tokens = [f"p{i}" for i in range(30)]
    fig = pipeline(X, tokens, "long")
    listed = [t.get_text() for t in fig.axes[1].texts]
    assert listed[0] == "p0" and listed[-1] == "p29" and "…" in listed and len(listed) == 16


def test_bad_inputs_are_refused():
    X = _cloud()
    with pytest.raises(ValueError, match="one piece per token"):
        pipeline(X, ["a"], "text")
    with pytest.raises(TypeError, match="non-empty string"):
        pipeline(X, [str(i) for i in range(7)], "  ")
