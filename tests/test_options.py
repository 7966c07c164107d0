"""One validator for the options every public entry point shares (issue 19, part 2): integers, dtypes, progress.

Every entry point is called with each bad value of each option and must raise a TypeError or ValueError naming
that option, before any work (the text entry points get ``encoder=None``: the option is refused before the
encoder is looked at). Good spellings (``np.int64``, ``np.float32``, ``"float32"``) give the same results as
the plain ones. Also: :func:`socm_lib.socm_cross` against the slow reference, in both modes.
"""

from __future__ import annotations

import io
import re
import sys

import numpy as np
import pytest
import torch

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import socm_lib  # noqa: E402
from socm_lib import checks, downstream, gpu_check, layers, protocol, q4, reference  # noqa: E402
from socm_lib.viz import layers as viz_layers  # noqa: E402
from socm_lib.viz import plots as viz_plots  # noqa: E402
from socm_lib.encoders import _resolve_dtype  # noqa: E402


def _clouds(count=4, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(int(n), d)) + 1.0 for n in rng.integers(1, 7, size=count)]


CLOUDS = _clouds()
_RESULT = socm_lib.socm_pairs(CLOUDS)
TEXTS = ["A first short text.", "A second, slightly longer text.", "Third."]

# (entry point, option) -> a call with that option set; the smallest valid value of the option
INTEGER_OPTIONS = {
    ("socm_pairs", "block_elems"): (lambda v: socm_lib.socm_pairs(CLOUDS, block_elems=v, progress=False), 1),
    ("socm_cross", "block_elems"): (lambda v: socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], block_elems=v), 1),
    ("socm_summary", "block_elems"): (lambda v: socm_lib.socm_summary(CLOUDS, block_elems=v), 1),
    ("socm_summary", "bins"): (lambda v: socm_lib.socm_summary(CLOUDS, bins=v), 1),
    ("socm_summary", "top_k"): (lambda v: socm_lib.socm_summary(CLOUDS, top_k=v), 0),
    ("socm_summary", "exact_median_limit"): (lambda v: socm_lib.socm_summary(CLOUDS, exact_median_limit=v), 0),
    ("socm_summary", "chunk_pairs"): (
        lambda v: socm_lib.socm_summary(CLOUDS, chunk_pairs=v, on_pairs=lambda start, chunk: None), 1),
    ("paper_route", "batch_size"): (lambda v: socm_lib.paper_route(CLOUDS, batch_size=v), 1),
    ("token_embeddings", "batch_size"): (lambda v: socm_lib.token_embeddings(None, TEXTS, batch_size=v), 1),
    ("layer_profile", "batch_size"): (lambda v: layers.layer_profile(None, TEXTS, batch_size=v), 1),
    ("measure", "batch_size"): (lambda v: protocol.measure(None, TEXTS, batch_size=v), 1),
    ("bootstrap_ci", "n_resamples"): (lambda v: downstream.bootstrap_ci([1.0, 2.0, 3.0], n_resamples=v), 1),
    ("bootstrap_diff_ci", "n_resamples"): (
        lambda v: downstream.bootstrap_diff_ci([1.0, 2.0], [2.0, 3.0], n_resamples=v), 1),
    ("bootstrap_paired_diff_ci", "n_resamples"): (
        lambda v: downstream.bootstrap_paired_diff_ci([1.0, 2.0], [2.0, 3.0], n_resamples=v), 1),
    ("spearman_ci", "n_resamples"): (
        lambda v: downstream.spearman_ci([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], n_resamples=v), 1),
}
VIZ_INTEGER_OPTIONS = {  # the figures' integer options go through the same validator
    ("point_density", "bins"): (lambda v: viz_plots.point_density([0.1, 0.2], [0.3, 0.4], bins=v), 1),
    ("scatter_dmu_dsigma", "bins"): (lambda v: viz_plots.scatter_dmu_dsigma(_RESULT, bins=v), 1),
    ("scatter_dmu_dsigma", "max_points"): (lambda v: viz_plots.scatter_dmu_dsigma(_RESULT, max_points=v), 1),
    ("plot_pair_distributions", "bins"): (lambda v: viz_layers.plot_pair_distributions({"a": _RESULT}, bins=v), 1),
    ("gpu_check", "n_texts"): (lambda v: gpu_check.gpu_check(n_texts=v, device="cpu"), 2),
}
BAD_INTEGERS = [(True, TypeError), (1.5, TypeError), ("3", TypeError), (None, TypeError), (0, ValueError),
                (-1, ValueError)]


def _raises_naming(exc, option, call):
    with pytest.raises(exc) as info:
        call()
    assert re.search(rf"\b{option}\b", str(info.value)), str(info.value)


@pytest.mark.parametrize("bad, exc", BAD_INTEGERS, ids=[repr(v) for v, _ in BAD_INTEGERS])
@pytest.mark.parametrize("entry, option", list(VIZ_INTEGER_OPTIONS), ids=["-".join(k) for k in VIZ_INTEGER_OPTIONS])
def test_bad_integer_options_of_figures_are_refused(entry, option, bad, exc):
    call, minimum = VIZ_INTEGER_OPTIONS[entry, option]
    if exc is ValueError and bad >= minimum:
        return  # a valid value: drawing it is the figures' tests' business
    _raises_naming(exc, option, lambda: call(bad))
    plt.close("all")


@pytest.mark.parametrize("bad, exc", BAD_INTEGERS, ids=[repr(v) for v, _ in BAD_INTEGERS])
@pytest.mark.parametrize("entry, option", list(INTEGER_OPTIONS), ids=["-".join(k) for k in INTEGER_OPTIONS])
def test_bad_integer_options_are_refused(entry, option, bad, exc):
    call, minimum = INTEGER_OPTIONS[entry, option]
    if exc is ValueError and bad >= minimum:
        call(bad)  # a valid value here (top_k=0 keeps no extreme pairs): it runs
        return
    _raises_naming(exc, option, lambda: call(bad))


@pytest.mark.parametrize("bad, exc", [(True, TypeError), ("0.1", TypeError), (-0.5, ValueError),
                                      (float("nan"), ValueError), (float("inf"), ValueError)])
@pytest.mark.parametrize("entry", ["socm_pairs", "socm_summary", "socm_cross"])
def test_bad_bucket_tolerance_is_refused(entry, bad, exc):
    call = {"socm_pairs": socm_lib.socm_pairs, "socm_summary": socm_lib.socm_summary,
            "socm_cross": lambda c, **kw: socm_lib.socm_cross(c[:2], c[2:], **kw)}[entry]
    _raises_naming(exc, "bucket_tolerance", lambda: call(CLOUDS, bucket_tolerance=bad))


PROGRESS_CALLS = {
    "socm_pairs": lambda v: socm_lib.socm_pairs(CLOUDS, progress=v),
    "socm_cross": lambda v: socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], progress=v),
    "socm_summary": lambda v: socm_lib.socm_summary(CLOUDS, progress=v),
    "paper_route": lambda v: socm_lib.paper_route(CLOUDS, progress=v),
    "token_embeddings": lambda v: socm_lib.token_embeddings(None, TEXTS, progress=v),
    "layer_profile": lambda v: layers.layer_profile(None, TEXTS, progress=v),
    "measure": lambda v: protocol.measure(None, TEXTS, progress=v),
    "protocol.q4_shift": lambda v: protocol.q4_shift(None, None, TEXTS, progress=v),
    "pair_frame": lambda v: downstream.pair_frame(None, TEXTS, TEXTS, progress=v),
    "labelled_frame": lambda v: downstream.labelled_frame(None, progress=v),
}


@pytest.mark.parametrize("bad", [1, 0, "yes", 1.5])
@pytest.mark.parametrize("entry", list(PROGRESS_CALLS))
def test_progress_is_true_false_or_none(entry, bad):
    _raises_naming(TypeError, "progress", lambda: PROGRESS_CALLS[entry](bad))


DTYPE_CALLS = {
    "socm_pairs": lambda v: socm_lib.socm_pairs(CLOUDS, dtype=v),
    "socm_cross": lambda v: socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], dtype=v),
    "socm_summary": lambda v: socm_lib.socm_summary(CLOUDS, dtype=v),
    "paper_route": lambda v: socm_lib.paper_route(CLOUDS, dtype=v),
    "load_encoder": lambda v: socm_lib.load_encoder("all-minilm-l6", device="cpu", dtype=v),
}
BAD_DTYPES = [("float8", ValueError), ("f32", ValueError), ("torch.float32", ValueError), (np.int32, ValueError),
              (3, TypeError), (float, TypeError), (True, TypeError)]


@pytest.mark.parametrize("bad, exc", BAD_DTYPES, ids=[repr(v) for v, _ in BAD_DTYPES])
@pytest.mark.parametrize("entry", list(DTYPE_CALLS))
def test_bad_dtypes_are_refused(entry, bad, exc):
    _raises_naming(exc, "dtype", lambda: DTYPE_CALLS[entry](bad))


@pytest.mark.parametrize("entry", ["socm_pairs", "socm_summary", "paper_route"])
def test_float16_is_not_an_engine_dtype(entry):
    _raises_naming(ValueError, "dtype", lambda: DTYPE_CALLS[entry](torch.float16))


def test_dtype_spellings_name_the_same_dtype():
    for want in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        name = str(want).removeprefix("torch.")
        spellings = [want, name] + ([np.dtype(name), getattr(np, name)] if hasattr(np, name) else [])
        assert {_resolve_dtype(s) for s in spellings} == {want}
    assert _resolve_dtype(None) is None


@pytest.mark.parametrize("call", [
    lambda dt: socm_lib.socm_pairs(CLOUDS, dtype=dt, device="cpu").socm,
    lambda dt: socm_lib.socm_pairs(CLOUDS, dtype=dt, device="cpu", backend="torch").socm,
    lambda dt: np.array([socm_lib.socm_summary(CLOUDS, dtype=dt, device="cpu").mean_socm]),
    lambda dt: socm_lib.paper_route(CLOUDS, dtype=dt, device="cpu").socm,
], ids=["socm_pairs", "socm_pairs-torch", "socm_summary", "paper_route"])
def test_float32_spellings_give_identical_results(call):
    want = call(torch.float32)
    for spelling in (np.float32, np.dtype("float32"), "float32"):
        np.testing.assert_array_equal(call(spelling), want)
    assert not np.array_equal(call(torch.float64), want)  # the dtype does reach the computation


def test_numpy_integers_are_integers():
    base = socm_lib.socm_pairs(CLOUDS, block_elems=64, device="cpu")
    same = socm_lib.socm_pairs(CLOUDS, block_elems=np.int64(64), bucket_tolerance=np.float32(0.05), device="cpu")
    np.testing.assert_array_equal(same.socm, base.socm)
    s = socm_lib.socm_summary(CLOUDS, bins=np.int64(7), top_k=np.int32(2), exact_median_limit=np.int64(0),
                              device="cpu")
    assert len(s.histograms["socm"].counts) == 7 and len(s.most_collapsed) == 2 and s.median_socm_error > 0
    route = socm_lib.paper_route(CLOUDS, batch_size=np.int64(2), device="cpu")
    np.testing.assert_array_equal(route.socm, socm_lib.paper_route(CLOUDS, batch_size=2, device="cpu").socm)
    x = np.arange(10.0)
    assert downstream.bootstrap_ci(x, n_resamples=np.int64(50)) == downstream.bootstrap_ci(x, n_resamples=50)


def test_numpy_integers_for_extraction():
    encoder = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    with pytest.warns(UserWarning, match="2 of 3 texts are longer than max_length = 6"):
        want = socm_lib.token_embeddings(encoder, TEXTS, batch_size=2, max_length=6)
    with pytest.warns(UserWarning, match="2 of 3 texts are longer than max_length = 6"):
        got = socm_lib.token_embeddings(encoder, TEXTS, batch_size=np.int64(2), max_length=np.int64(6))
    assert [g.shape for g in got] == [w.shape for w in want] and max(w.shape[0] for w in want) == 6
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # other batches may pad differently
    with pytest.raises(TypeError, match="max_length"):
        socm_lib.token_embeddings(encoder, TEXTS, max_length=6.0)


# --- the "no pairs" check and the progress threshold, once --------------------------------------

@pytest.mark.parametrize("call", [
    lambda: socm_lib.socm_pairs(CLOUDS[:1]),
    lambda: socm_lib.socm_summary(CLOUDS[:1]),
    lambda: socm_lib.paper_route(CLOUDS[:1]),
    lambda: layers.layer_profile(None, TEXTS[:1]),
    lambda: protocol.measure(None, TEXTS[:1]),
    lambda: protocol.q4_shift(None, None, TEXTS[:1]),
], ids=["socm_pairs", "socm_summary", "paper_route", "layer_profile", "measure", "protocol.q4_shift"])
def test_no_pairs_is_one_message(call):
    with pytest.raises(ValueError, match=r"There are no pairs: pass at least two (clouds|texts), or explicit pairs"):
        call()


def test_listed_pairs_are_checked_before_the_encoder_runs():
    for call in (lambda: protocol.measure(None, TEXTS, [(0, 3)]),
                 lambda: layers.layer_profile(None, TEXTS, pairs=[(0, 3)]),
                 lambda: protocol.q4_shift(None, None, TEXTS, pairs=[(0, 3)])):
        with pytest.raises(ValueError, match="outside"):
            call()


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self):
        return True


def test_progress_threshold(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert checks.show_progress(None, checks.PROGRESS_PAIRS + 1) is True
    assert checks.show_progress(None, checks.PROGRESS_PAIRS) is False
    assert checks.show_progress(True, 1) is True and checks.show_progress(False, 10**9) is False
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a notebook's stderr, a pipe, a log file
    assert checks.show_progress(None, 10**9) is False and checks.show_progress(True, 1) is True


@pytest.mark.parametrize("entry", [socm_lib.socm_pairs, socm_lib.socm_summary])
def test_progress_none_shows_a_bar_only_past_the_threshold_in_a_terminal(monkeypatch, entry):
    assert checks.PROGRESS_PAIRS == 20_000  # 200 clouds have 19,900 pairs, 201 have 20,100
    tiny = [np.array([[1.0, 0.0, 0.0], [1.0, 0.1 * k, 0.0]]) for k in range(201)]
    for stderr, shown in ((_Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stderr)
        entry(tiny[:200], device="cpu")
        assert stderr.getvalue() == ""
        entry(tiny, device="cpu")
        assert ("SOCM" in stderr.getvalue()) is shown, type(stderr).__name__


# --- socm_cross: cdist-style pairs of two sets ---------------------------------------------------

@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_socm_cross_all_pairs_matches_the_reference(normalize, backend):
    a, b = _clouds(4, d=6, seed=1), _clouds(3, d=6, seed=2)
    got = socm_lib.socm_cross(a, b, normalize=normalize, backend=backend, device="cpu")
    np.testing.assert_array_equal(got.i, np.repeat(np.arange(4), 3))
    np.testing.assert_array_equal(got.j, np.tile(np.arange(3), 4))
    matrix = got.socm.reshape(len(a), len(b))
    for p in range(len(a)):
        for q in range(len(b)):
            want = reference.lowrank_pair(a[p], b[q], normalize=normalize)
            assert matrix[p, q] == pytest.approx(want.socm, rel=1e-10, abs=1e-13)
            k = p * len(b) + q
            assert got.d_mu[k] == pytest.approx(want.d_mu, rel=1e-10, abs=1e-13)
            assert got.d_sigma[k] == pytest.approx(want.d_sigma, rel=1e-10, abs=1e-13)


def test_socm_cross_aligned_matches_the_reference():
    a, b = _clouds(5, seed=3), _clouds(5, seed=4)
    got = socm_lib.socm_cross(iter(a), b, aligned=True, device="cpu")
    np.testing.assert_array_equal(got.i, np.arange(5))
    np.testing.assert_array_equal(got.j, np.arange(5))
    want = reference.lowrank_pairs(a + b, socm_lib.cross_pairs(5, 5, aligned=True))
    np.testing.assert_allclose(got.socm, want.socm, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got.d_mu, want.d_mu, rtol=1e-10, atol=1e-13)


def test_socm_cross_refuses_misuse():
    a, b = _clouds(3), _clouds(2)
    with pytest.raises(ValueError, match="aligned=True pairs the k-th cloud of each set, but the sets have 3 and 2"):
        socm_lib.socm_cross(a, b, aligned=True)
    with pytest.raises(ValueError, match="clouds_a have d = 5 but clouds_b have d = 4"):
        socm_lib.socm_cross(a, _clouds(2, d=4))
    with pytest.raises(ValueError, match=r"clouds_b\[1\] contains NaN"):
        socm_lib.socm_cross(a, [b[0], b[1] * np.nan])
    with pytest.raises(TypeError, match="socm_cross takes no pairs"):
        socm_lib.socm_cross(a, b, pairs=[(0, 1)])
    with pytest.raises(TypeError, match="aligned must be True or False"):
        socm_lib.socm_cross(a, b, aligned="yes")
    with pytest.raises(ValueError, match="clouds_b is empty"):
        socm_lib.socm_cross(a, [])


def test_cross_pairs_is_cdist_order():
    from scipy.spatial.distance import cdist

    x, y = np.random.default_rng(0).normal(size=(4, 2)), np.random.default_rng(1).normal(size=(3, 2))
    pairs = socm_lib.cross_pairs(4, 3)
    both = np.concatenate([x, y])
    np.testing.assert_array_equal(np.linalg.norm(both[pairs[:, 0]] - both[pairs[:, 1]], axis=1),
                                  cdist(x, y).ravel())
