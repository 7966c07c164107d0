"""socm_lib.downstream: the paper's family table, Spearman helpers, separation, pair frames and summaries."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import socm_lib
from socm_lib import downstream, paper
from socm_lib.viz import display
from socm_lib.viz import downstream as viz_downstream
from socm_lib.viz import fixed


@pytest.fixture(scope="module")
def minilm():
    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


def test_family_table_matches_registry_and_paper():
    fam = downstream.paper_family_table()
    assert len(fam) == 8  # eight contrastive encoders under four backbones
    assert set(fam["backbone"]) == {"bert", "minilm", "mpnet", "nomic-bert"}
    for row in fam.itertuples():
        assert socm_lib.REGISTRY[row.backbone].kind == "backbone"
        assert socm_lib.REGISTRY[row.contrastive].kind == "contrastive"
        assert row.change == pytest.approx(row.contrastive_socm - row.backbone_socm)
    # the paper's one exception: all-MiniLM-L12-v2 (0.313) above its backbone MiniLM (0.242)
    assert fam.loc[~fam["lower"], "contrastive"].tolist() == ["all-minilm-l12"]
    assert int(fam["lower"].sum()) == 7
    # text columns are plain objects, so socm_lib.fixed can format the table
    assert fixed(fam)["change"].iloc[0] == "-0.2030"


def test_reported_p_values_follow_from_rho():
    for rho, p in paper.MTEB_SPEARMAN.values():
        assert round(downstream.spearman_p_from_rho(rho, paper.N_MODELS), 3) == p


def test_spearman_p_from_rho_matches_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=12)
    y = x + rng.normal(size=12)
    rho, p = downstream.spearman(x, y)
    assert p == pytest.approx(downstream.spearman_p_from_rho(rho, 12), rel=1e-9)
    assert rho == pytest.approx(stats.spearmanr(x, y).statistic)


def test_direction_and_fmt_p():
    assert display.direction(0.3, 0.2) == "higher"
    assert display.direction(0.2, 0.3) == "lower"
    assert display.direction(0.20001, 0.2) == "equal"  # agree at 4 decimals
    assert display.direction(-1, 0, words=("positive", "negative", "zero")) == "negative"
    assert display.fmt_p(0.01534) == "0.0153"
    assert display.fmt_p(1e-9) == "< 0.0001"
    assert not hasattr(downstream, "fmt_p") and not hasattr(downstream, "direction")  # display lives in viz only


def test_fixed_prints_floats_at_fixed_digits_and_a_missing_figure_as_a_dash():
    t = pd.DataFrame({"name": ["a", "b"], "count": [3, 0], "mean": [0.123456, float("nan")]})
    out = fixed(t, 3)
    assert out["mean"].tolist() == ["0.123", "\u2013"]  # a mean over no pairs is no number, not "nan"
    assert out["count"].tolist() == [3, 0] and out["name"].tolist() == ["a", "b"]  # other columns untouched
    assert np.isnan(t["mean"].iloc[1])  # the input is not changed


def test_format_ci_merges_estimate_and_interval():
    t = pd.DataFrame({"kind": ["x", "y"], "pairs": [3, 4], "mean_socm": [0.25, 0.5], "socm_low": [0.2, 0.41],
                      "socm_high": [0.3, 0.62], "diff": [-0.01, 0.125], "diff_low": [-0.05, 0.1],
                      "diff_high": [0.03, 0.15]})
    out = display.format_ci(t, ["socm", "diff"], digits=2)
    assert list(out.columns) == ["kind", "pairs", "socm [CI]", "diff [CI]"]
    assert out["socm [CI]"].tolist() == ["0.25 [0.20, 0.30]", "0.50 [0.41, 0.62]"]
    assert out["diff [CI]"].tolist() == ["-0.01 [-0.05, 0.03]", "0.12 [0.10, 0.15]"]
    assert list(t.columns)[2] == "mean_socm"  # the input is left as it was
    assert not hasattr(downstream, "format_ci")


def test_separation():
    assert downstream.separation([3, 4], [1, 2]) == 1.0
    assert downstream.separation([1, 2], [3, 4]) == 0.0
    assert downstream.separation([1, 2], [1, 2]) == 0.5
    a, b = np.random.default_rng(1).normal(size=(2, 40))
    u = stats.mannwhitneyu(a, b).statistic
    assert downstream.separation(a, b) == pytest.approx(u / (len(a) * len(b)))
    with pytest.raises(ValueError, match="at least one value"):
        downstream.separation([], [1.0])


def test_pair_frame_identity_and_agreement_with_socm(minilm):
    a = ["The museum closes at six on weekdays.", "Anna called Ben before lunch.", "It rained."]
    b = ["On weekdays, the museum shuts its doors at 6 p.m.", "Ben called Anna before lunch.",
         "The committee postponed its vote on the new budget until next spring."]
    f = downstream.pair_frame(minilm, a, b, progress=False, device="cpu")
    assert list(f.columns) == ["d_mu", "d_sigma", "socm", "cosine", "n_a", "n_b"]
    # Chapter 3: after normalisation d_mu = (1 - cos) / 2
    np.testing.assert_allclose(f["cosine"], 1 - 2 * f["d_mu"], atol=1e-10)
    clouds = socm_lib.token_embeddings(minilm, a + b)
    for k in range(3):
        ref = socm_lib.socm(clouds[k], clouds[k + 3])
        assert f["socm"][k] == pytest.approx(ref.socm, abs=1e-10)
        assert f["n_a"][k] == clouds[k].shape[0] and f["n_b"][k] == clouds[k + 3].shape[0]
    # the pairs (k, n + k) of the clouds of a + b, by the engine, exactly as before socm_cross built them
    before = socm_lib.socm_pairs(clouds, np.stack([np.arange(3), np.arange(3) + 3], axis=1), device="cpu")
    for key in ("d_mu", "d_sigma", "socm"):
        np.testing.assert_array_equal(f[key].to_numpy(), getattr(before, key))
    dropped = downstream.pair_frame(minilm, a, b, special_tokens=False, progress=False, device="cpu")
    assert (dropped["n_a"] == f["n_a"] - 2).all()  # [CLS] and [SEP]
    with pytest.raises(ValueError, match="one of each per pair"):
        downstream.pair_frame(minilm, a, b[:2])


def test_plots_return_figures():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    f = pd.DataFrame({"kind": ["a"] * 5 + ["b"] * 5, "d_mu": rng.random(10), "d_sigma": rng.random(10),
                      "socm": rng.random(10)})
    fig = viz_downstream.plot_by_kind({"e1": f, "e2": f}, ["a", "b"])
    assert [ax.get_title() for ax in fig.axes] == ["e1", "e2"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b"]
    means = [line.get_ydata()[0] for line in fig.axes[0].lines if line.get_marker() not in ("None", "", None, "o")]
    np.testing.assert_allclose(sorted(means), sorted(f.groupby("kind")["socm"].mean()))
    plt.close(fig)
    fig = viz_downstream.plot_dmu_dsigma({"e1": f}, ["a", "b"])
    (ax,) = fig.axes
    centres = [c.get_offsets()[0] for c in ax.collections[1::2]]  # the kind means, drawn after each kind's points
    np.testing.assert_allclose(centres, f.groupby("kind")[["d_mu", "d_sigma"]].mean().to_numpy())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    plt.close(fig)
    fig = viz_downstream.plot_lines([("x", "y", {"e1": ([1, 2], [3, 4])})])
    (ax,) = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x", "y")
    np.testing.assert_array_equal(ax.lines[0].get_xydata(), [[1, 3], [2, 4]])
    plt.close(fig)
