"""Headless tests of socm_lib.viz.plots (figures and tables) and socm_lib.viz.widgets (the encoder comparator)."""

import html

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Ellipse  # noqa: E402

from socm_lib.viz import plots, widgets  # noqa: E402
from socm_lib.pairs import PairResult, socm, socm_pairs  # noqa: E402
from socm_lib.encoders import OFFLINE_ENCODERS, REGISTRY  # noqa: E402
from socm_lib.extract import token_embeddings  # noqa: E402
from socm_lib.stats import concentration_ratio as socm_lib_concentration  # noqa: E402

R75 = np.sqrt(-2 * np.log(0.25))  # chi-square(2) 0.75 quantile is -2 ln(1 - 0.75)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _ellipses(ax):
    return [p for p in ax.patches if isinstance(p, Ellipse)]


def _colorbar_labels(fig):
    return [ax.get_ylabel() for ax in fig.axes]


# ------------------------------------------------------------------ plots


def test_the_ellipse_radius_is_the_chi_square_quantile():
    e = plots.covariance_ellipse((1.0, 2.0), np.diag([1.0, 4.0]))
    # larger axis along coordinate 2: width 2 r * 2, height 2 r * 1, rotated by 90 degrees
    assert e.width == pytest.approx(4 * R75) and e.height == pytest.approx(2 * R75)
    assert abs(np.cos(np.radians(e.angle))) == pytest.approx(0.0, abs=1e-12)
    assert e.center == pytest.approx((1.0, 2.0))


def test_socm_surface_has_colorbar_labels_and_points():
    fig = plots.socm_surface(points={"case": (0.2, 0.5), "other": ([0.1, 0.3], [0.2, 1.4])})
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(fig.axes) == 2 and "SOCM" in _colorbar_labels(fig)
    assert "d_\\mu" in ax.get_xlabel() and "d_\\Sigma" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["case", "other"]
    assert ax.get_ylim()[1] == pytest.approx(1.05 * 1.4)  # widened to show d_sigma > 1
    with pytest.raises(TypeError):
        plots.socm_surface(points=[0.1, 0.2])


def test_clouds_2d_draws_two_ellipses_of_the_population_covariance():
    X1 = np.array([[3.0, 1.0], [3.0, -1.0], [1.0, 1.0], [1.0, -1.0]])  # mean (2, 0), cov diag(1, 1)
    X2 = np.array([[5.0, 0.0], [1.0, 0.0]])  # mean (3, 0), cov diag(4, 0)
    fig = plots.clouds_2d(X1, X2, labels=("a", "b"), title="t")
    ax = fig.axes[0]
    ells = _ellipses(ax)
    assert len(ells) == 2
    assert ells[0].width == pytest.approx(2 * R75) and ells[0].height == pytest.approx(2 * R75)
    assert ells[1].width == pytest.approx(4 * R75) and ells[1].height == pytest.approx(0.0, abs=1e-12)
    means = [line.get_xydata()[0] for line in ax.lines if line.get_label().endswith("mean")]
    assert np.allclose(means, [[2.0, 0.0], [3.0, 0.0]])
    assert ax.get_title() == "t" and ax.get_xlabel() == "coordinate 1"
    normed = plots.clouds_2d(X1, X2, normalize=True).axes[0]
    means = [line.get_xydata()[0] for line in normed.lines if line.get_label().endswith("mean")]
    assert np.allclose(means, [[1.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="R\\^2"):
        plots.clouds_2d(np.ones((3, 3)), np.ones((3, 3)))


def _direct_projection(X1, X2):
    Y1 = X1 / np.linalg.norm(X1.mean(0))
    Y2 = X2 / np.linalg.norm(X2.mean(0))
    M = np.vstack([Y1, Y2, Y1.mean(0), Y2.mean(0)])
    V = np.linalg.svd(M)[2][:2]
    for r in range(2):  # sign convention: largest-magnitude entry positive
        V[r] *= np.sign(V[r][np.argmax(np.abs(V[r]))])
    return V, Y1, Y2


def test_pair_projection_matches_a_direct_numpy_computation():
    rng = np.random.default_rng(3)
    X1 = rng.normal(size=(9, 12)) + 2.0
    X2 = rng.normal(size=(14, 12)) * 0.5 + 1.0
    V, Y1, Y2 = _direct_projection(X1, X2)
    fig = plots.pair_projection(X1, X2, labels=("first", "second"))
    ax = fig.axes[0]
    means = np.array([line.get_xydata()[0] for line in ax.lines if line.get_label().endswith("mean")])
    assert np.allclose(means, [Y1.mean(0) @ V.T, Y2.mean(0) @ V.T], atol=1e-12)
    tokens = [c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
    assert np.allclose(tokens[0], Y1 @ V.T) and np.allclose(tokens[1], Y2 @ V.T)
    ells = _ellipses(ax)
    assert len(ells) == 2
    lam = np.linalg.eigvalsh(np.cov((Y1 @ V.T).T, bias=True))
    assert ells[0].width == pytest.approx(2 * R75 * np.sqrt(lam[1]))
    r = socm(X1, X2)
    title = ax.get_title()
    assert f"SOCM = {r.socm:.3f}" in title and f"{r.d_mu:.3f}" in title and f"{r.d_sigma:.3f}" in title
    # the library helper returns the same coordinates, and its basis follows the sign convention
    proj = plots.project_pair(X1, X2)
    assert np.allclose(proj["basis"], V, atol=1e-12)
    assert np.all(proj["basis"][np.arange(2), np.argmax(np.abs(proj["basis"]), axis=1)] > 0)


def test_pair_projection_draws_into_a_given_axes_with_a_title_prefix():
    rng = np.random.default_rng(0)
    fig, axes = plt.subplots(1, 2)
    out = plots.pair_projection(rng.normal(size=(5, 6)) + 1, rng.normal(size=(7, 6)) + 1, ax=axes[1], title="enc")
    assert out is fig and axes[1].get_title().startswith("enc\nSOCM = ") and not axes[0].get_title()
    with pytest.raises(ValueError, match="same encoder"):
        plots.pair_projection(np.ones((3, 4)), np.ones((3, 5)))


def _fake_result(n_pairs, seed=0):
    rng = np.random.default_rng(seed)
    dm, ds = rng.uniform(0, 1, n_pairs), rng.uniform(0, 1.5, n_pairs)
    i, j = np.triu_indices(300, k=1)
    return PairResult(i=i[:n_pairs], j=j[:n_pairs], d_mu=dm, d_sigma=ds, socm=(1 - dm) * ds)


def test_scatter_subsamples_large_results_and_says_so():
    big = _fake_result(30_000)
    fig = plots.scatter_dmu_dsigma(big, title="enc")
    assert len(fig.axes) == 4 and "SOCM" in _colorbar_labels(fig)
    main = fig.axes[0]
    assert main.get_xlabel() == r"$d_\mu$" and main.get_ylabel() == r"$d_\Sigma$"
    assert len(main.collections[0].get_offsets()) == 20_000
    assert "subsample of 20,000 of 30,000 pairs (seed 0)" in fig._suptitle.get_text()
    again = plots.scatter_dmu_dsigma(big, title="enc")
    assert np.array_equal(again.axes[0].collections[0].get_offsets(), main.collections[0].get_offsets())
    small = plots.scatter_dmu_dsigma(_fake_result(500))
    assert len(small.axes[0].collections[0].get_offsets()) == 500 and small._suptitle.get_text() == "500 pairs"
    with pytest.raises(TypeError):
        plots.scatter_dmu_dsigma({"socm": [1.0]})


def test_extreme_pairs_table_orders_truncates_and_formats():
    res = _fake_result(200, seed=1)
    texts = [f"text {k} " + "word " * (k % 30) for k in range(300)]
    df = plots.extreme_pairs_table(res, texts, k=3)
    assert list(df["collapse"]) == ["most"] * 3 + ["least"] * 3
    top = int(np.argmax(res.socm))
    assert (int(df["i"][0]), int(df["j"][0])) == (int(res.i[top]), int(res.j[top]))
    assert df["SOCM"][0] == f"{res.socm.max():.4f}" and df["SOCM"][5] == f"{np.sort(res.socm)[2]:.4f}"
    shown = list(df["text i"]) + list(df["text j"])
    assert all(len(t) <= 80 for t in shown) and any(t.endswith("...") for t in shown)
    with pytest.raises(ValueError, match="beyond"):
        plots.extreme_pairs_table(res, texts[:5])


def test_dsigma_bound_plots_each_pair_below_its_bound():
    rng = np.random.default_rng(2)
    clouds = [rng.normal(size=(int(n), 8)) + 0.5 for n in rng.integers(3, 9, size=12)]
    res = socm_pairs(clouds, progress=False)
    c = np.array([socm_lib_concentration(X) for X in clouds])
    fig = plots.dsigma_bound(res, c, title="toy")
    ax = fig.axes[0]
    xy = ax.collections[0].get_offsets()
    assert np.allclose(xy[:, 0], (c[res.i] + c[res.j]) / 4) and np.allclose(xy[:, 1], res.d_sigma)
    assert np.all(xy[:, 1] <= xy[:, 0] + 1e-10)
    assert "SOCM" in _colorbar_labels(fig) and ax.get_title() == "toy\n66 pairs"
    with pytest.raises(ValueError, match="one ratio per text"):
        plots.dsigma_bound(res, c[:3])


# ------------------------------------------------------------------ widgets


@pytest.fixture(scope="module")
def texts():
    return widgets.source_texts("corpus", 16, seed=0)


def test_source_texts_are_deterministic_and_sized():
    assert widgets.source_texts("corpus", 12) == widgets.source_texts("corpus", 12)
    assert len(widgets.source_texts("labelled", 30)) == 30
    assert widgets.source_size("labelled") == len(set(widgets._source_pool("labelled")))
    with pytest.raises(ValueError, match="Unknown text source"):
        widgets.source_texts("nope", 3)


def test_compare_averages_equal_socm_pairs_directly(texts):
    c = widgets.compare("untrained-minilm-l6", "all-minilm-l6", texts)
    assert c.names == ("untrained-minilm-l6", "all-minilm-l6")
    for name, res in zip(c.names, c.results):
        direct = socm_pairs(token_embeddings(widgets.cached_encoder(name), texts), progress=False)
        assert np.allclose(res.socm, direct.socm, atol=1e-12)
        assert c.mean_socm()[name] == pytest.approx(float(np.mean(direct.socm)), abs=1e-12)
    assert len(c.results[0]) == 16 * 15 // 2
    ranked = c.results[0].socm[c.order]
    assert np.all(np.diff(ranked) <= 0) and c.pair_at(0) == int(np.argmax(c.results[0].socm))
    table = c.summary_table()
    assert list(table["encoder"]) == list(c.names) and table["mean SOCM"][1] == f"{c.mean_socm()[c.names[1]]:.4f}"
    assert c.summary_text().splitlines()[0].startswith("A untrained-minilm-l6: average SOCM ")


def _shown(w):
    """What the comparator's Output widget holds: exactly one output, as text (HTML or stream)."""
    assert len(w.out.outputs) == 1
    out = w.out.outputs[0]
    return out["text"] if out["output_type"] == "stream" else out["data"]["text/html"]


def test_comparator_reacts_to_controls_and_survives_unavailable_models(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    w = widgets.Comparator(n_texts=20, show_figures=False)
    assert (w.encoder_a.value, w.encoder_b.value) == ("all-minilm-l6", "multilingual-e5-small-4bit")
    labels, names = zip(*w.encoder_a.options)
    assert names[:len(OFFLINE_ENCODERS)] == OFFLINE_ENCODERS  # the offline encoders come first, unmarked
    assert labels[:len(OFFLINE_ENCODERS)] == OFFLINE_ENCODERS
    # no Hub here (HF_HUB_OFFLINE): every encoder that needs it says so in the menu
    assert {label for label, name in w.encoder_b.options if name not in OFFLINE_ENCODERS} == {
        name + widgets.NEEDS_NETWORK for name in REGISTRY if name not in OFFLINE_ENCODERS}
    assert w.last_error is None and "over 190 pairs of 20 texts" in w.last_summary
    assert _shown(w) == w.last_html and "190 pairs" in _shown(w)
    first, pair0 = w.last_summary, w.last_pair
    w.pair.value = 7
    assert w.last_pair != pair0 and w.last_summary == first
    w.n_texts.value = 30
    assert "over 435 pairs of 30 texts" in w.last_summary and "435 pairs" in _shown(w)
    second = w.last_summary
    w.encoder_a.value = "untrained-minilm-l6"
    assert w.last_summary != second and w.last_summary.startswith("A untrained-minilm-l6")
    # an encoder that needs the network: clear message, other controls keep working
    w.encoder_b.value = "bert"
    assert w.last_summary is None and w.last_pair is None and w.pair.disabled
    assert "bert" in w.last_error and "network" in w.last_error and "Colab" in w.last_error
    # one list of the offline encoders (the library's), no advice about a button only the book has, and shown as
    # HTML paragraphs, which break lines between words (a text output breaks them anywhere)
    assert w.last_error.count("Offline encoders") == 1 and "rocket" not in w.last_error
    assert all(repr(name) in w.last_error for name in OFFLINE_ENCODERS)
    assert _shown(w) == "".join(f"<p>{html.escape(line)}</p>" for line in w.last_error.splitlines())
    w.n_texts.value = 20  # still responds (the error stays, because encoder B is still unavailable)
    assert "bert" in w.last_error
    w.encoder_b.value = "untrained-minilm-l6"
    assert w.last_error is None and not w.pair.disabled and "190 pairs" in _shown(w)
    assert w.last_summary.splitlines()[1].startswith("B untrained-minilm-l6") and "190 pairs" in w.last_summary
    # code from a model repository is never run by the widget: a ValueError, reported the same way
    w.encoder_a.value = "nomic-embed"
    assert "nomic-embed" in w.last_error and "trust_remote_code" in w.last_error
    w.encoder_a.value = "all-minilm-l6"
    assert w.last_error is None and w.last_summary is not None


def test_comparator_source_change_and_rendering_with_figures(capsys):
    w = widgets.Comparator(n_texts=10, show_figures=True)
    renders = w.renders
    w.source.value = "labelled"
    assert w.renders == renders + 1  # one recomputation, not one per adjusted control
    assert w.n_texts.max == min(widgets.MAX_N_TEXTS, widgets.source_size("labelled"))
    assert w.comparison.texts == widgets.source_texts("labelled", 10)
    assert list(w.last_table.columns)[:3] == ["collapse", "i", "j"] and len(w.last_table) == 10
    assert _shown(w).count("<img src=\"data:image/png;base64,") == 3 and "<table" in _shown(w)
    figs = widgets.comparison_figures(w.comparison, w.comparison.pair_at(0))
    assert len(figs) == 3 and len(_ellipses(figs[2].axes[0])) == 2
    bundle = w._repr_mimebundle_()  # the object itself displays as its widget container
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.widget.model_id


def test_comparator_colab_path_renders_without_error(monkeypatch, capsys):
    import sys
    import types

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    colab = types.ModuleType("google.colab")
    colab.output = types.SimpleNamespace(enable_custom_widget_manager=lambda: None)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    w = widgets.Comparator(n_texts=10, show_figures=False)  # the "with out: clear_output(wait=True)" form
    before = w.last_pair
    w.pair.value = 3
    assert w.last_pair != before and w.last_error is None
    w.encoder_a.value = "bert"
    assert "bert" in w.last_error and "This Colab session could not reach the Hugging Face Hub" in w.last_error


def test_comparing_the_same_texts_again_runs_no_forward_pass(texts):
    widgets.compare("untrained-minilm-l6", "all-minilm-l6", texts)
    passes = []
    hooks = [widgets.cached_encoder(name).model.register_forward_hook(lambda *a: passes.append(1))
             for name in ("untrained-minilm-l6", "all-minilm-l6")]
    try:
        widgets.compare("all-minilm-l6", "untrained-minilm-l6", texts)  # the encoders swapped, the same texts
        assert passes == []
        widgets.compare("all-minilm-l6", "untrained-minilm-l6", texts[:-1])
        assert passes  # other texts are extracted: the hook does count
    finally:
        for hook in hooks:
            hook.remove()


def test_the_menu_marks_only_the_encoders_that_cannot_load_here(standin_hub, monkeypatch):
    """Offline, with bert and gte in the local cache (stand-ins): those two load and stay unmarked, every other Hub
    encoder is marked; with the Hub reachable nothing is marked."""
    labels = {name: label for label, name in widgets.encoder_options()}
    assert labels["bert"] == "bert" and labels["gte"] == "gte" and labels["all-minilm-l6"] == "all-minilm-l6"
    assert labels["e5"] == "e5" + widgets.NEEDS_NETWORK and labels["nomic-embed"].endswith(widgets.NEEDS_NETWORK)
    monkeypatch.setattr(widgets, "hub_reachable", lambda: True)
    assert all(label == name for label, name in widgets.encoder_options())
