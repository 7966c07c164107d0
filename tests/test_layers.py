"""Layer-wise profiles (socm_lib.layers): agreement with direct computation, shape, and the plot."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import socm_lib
from socm_lib.layers import largest_drop, layer_profile, norm_check
from socm_lib.viz.layers import plot_layer_profile, plot_pair_distributions

TEXTS = [
    "The cat sat quietly on the warm windowsill.",
    "Interest rates rose for the third month in a row.",
    "A short one.",
    "Volcanic ash closed the airport for two days, stranding thousands of travellers.",
    "She planted tomatoes, beans and basil in the new garden bed behind the house.",
]


@pytest.fixture(scope="module")
def encoder():
    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def control():
    return socm_lib.load_encoder("untrained-minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def profile(encoder):
    return layer_profile(encoder, TEXTS)


def test_row_count_and_columns(profile, encoder):
    assert len(profile) == encoder.num_layers + 1
    assert profile["layer"].tolist() == list(range(encoder.num_layers + 1))
    assert list(profile.columns) == ["layer", "concentration_ratio", "avg_cosine", "mean_socm", "mean_d_mu", "mean_d_sigma"]
    assert np.isfinite(profile.drop(columns="layer").to_numpy()).all()


def test_last_row_matches_direct_computation(profile, encoder):
    clouds = socm_lib.token_embeddings(encoder, TEXTS, layer=-1)
    direct = socm_lib.socm_pairs(clouds)
    last = profile.iloc[-1]
    assert last["concentration_ratio"] == pytest.approx(np.mean([socm_lib.concentration_ratio(c) for c in clouds]), rel=1e-12)
    assert last["avg_cosine"] == pytest.approx(np.mean([socm_lib.avg_intra_cosine(c) for c in clouds]), rel=1e-12)
    assert last["mean_socm"] == pytest.approx(float(np.mean(direct.socm)), rel=1e-10)
    assert last["mean_d_mu"] == pytest.approx(float(np.mean(direct.d_mu)), rel=1e-10)
    assert last["mean_d_sigma"] == pytest.approx(float(np.mean(direct.d_sigma)), rel=1e-10)


def test_first_row_is_the_embedding_output(profile, encoder):
    clouds = socm_lib.token_embeddings(encoder, TEXTS, layer=0)
    assert profile.iloc[0]["concentration_ratio"] == pytest.approx(
        np.mean([socm_lib.concentration_ratio(c) for c in clouds]), rel=1e-12
    )


def test_explicit_pairs_and_special_tokens(encoder):
    pairs = np.array([[0, 1], [2, 4]])
    prof = layer_profile(encoder, TEXTS, pairs=pairs, special_tokens=False)
    clouds = socm_lib.token_embeddings(encoder, TEXTS, layer=3, special_tokens=False)
    direct = socm_lib.socm_pairs(clouds, pairs)
    assert prof.iloc[3]["mean_socm"] == pytest.approx(float(np.mean(direct.socm)), rel=1e-10)
    assert layer_profile(encoder, TEXTS[:3], pairs="all").iloc[-1]["mean_socm"] == pytest.approx(
        float(np.mean(socm_lib.socm_pairs(socm_lib.token_embeddings(encoder, TEXTS[:3])).socm)), rel=1e-10
    )


def test_bad_arguments(encoder):
    with pytest.raises(ValueError, match="pairs must be"):
        layer_profile(encoder, TEXTS, pairs="some")
    with pytest.raises(ValueError, match="at least two texts"):
        layer_profile(encoder, TEXTS[:1])


def test_plot_has_three_axes_one_line_per_encoder(profile, control):
    profiles = {"all-minilm-l6": profile, "untrained-minilm-l6": layer_profile(control, TEXTS[:3])}
    fig = plot_layer_profile(profiles)
    try:
        assert len(fig.axes) == 3
        for ax in fig.axes:
            assert len(ax.lines) == 2
            for line, df in zip(ax.lines, profiles.values()):
                assert list(line.get_xdata()) == df["layer"].tolist()
        assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == list(profiles)
        np.testing.assert_allclose(fig.axes[2].lines[0].get_ydata(), profile["mean_socm"].to_numpy())
    finally:
        plt.close(fig)
    with pytest.raises(ValueError):
        plot_layer_profile({})


def test_largest_drop():
    df = pd.DataFrame({"layer": [0, 1, 2, 3], "concentration_ratio": [1.0, 1.5, 0.4, 0.3]})
    assert largest_drop(df) == 2
    assert largest_drop(df.iloc[::-1]) == 2


def test_norm_check_is_exact_for_equal_norms():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 16)) + 2.0
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    df = norm_check([x, 3.0 * x])
    np.testing.assert_allclose(df["concentration_ratio"], df["equal_norm_prediction"], rtol=1e-10)
    np.testing.assert_allclose(df["norm_cv"], 0.0, atol=1e-12)
    y = x.copy()
    y[0] *= 4.0
    assert norm_check([y])["norm_cv"].iloc[0] > 0.5


def test_pair_distributions_plot():
    rng = np.random.default_rng(1)
    clouds = [rng.normal(size=(n, 8)) + 1.0 for n in (3, 5, 6, 4)]
    res = socm_lib.socm_pairs(clouds)
    fig = plot_pair_distributions({"a": res, "b": res})
    try:
        assert len(fig.axes) == 3
        assert len(fig.axes[0].patches) > 0
    finally:
        plt.close(fig)
