"""Right or refused: the public helpers on generated inputs (Hypothesis), NaN, inf, empty, complex, object, text and
ragged inputs included.

Every call either returns a result that passes the checks written beside it (a range, an identity or a slow
reference) or raises ``ValueError`` / ``TypeError`` from inside ``socm_lib`` itself: a refusal worded by the
library, never an exception surfacing from numpy, pandas, scipy or torch. Inputs are derandomised and the examples
bounded, so a run is the same everywhere and takes seconds.
"""

from __future__ import annotations

import itertools
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

import socm_lib
from socm_lib import checks, control, data, downstream, jacobi, nuclear
from socm_lib.block_plan import all_pairs, condensed_pairs

LIBRARY = Path(socm_lib.__file__).resolve().parent
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def right_or_refused(call, check=None):
    """``check(call())`` if the call returns; if it raises, the exception must be a ValueError or TypeError raised
    by a line of the library (the last frame of its traceback is in socm_lib/), not by a dependency."""
    try:
        result = call()
    except (ValueError, TypeError) as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        assert Path(frame.filename).resolve().is_relative_to(LIBRARY), (
            f"{type(exc).__name__} from {frame.filename}:{frame.lineno}, not the library: {exc}")
        assert str(exc).strip(), "a refusal without a message"
        return None
    if check is not None:
        outcome = check(result)  # a check asserts, or returns whether the result is right
        assert outcome is None or bool(outcome), f"a wrong result: {result!r:.200}"
    return result


# ------------------------------------------------------------------ inputs of every kind

SCALARS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**20, 10**20),
                    st.complex_numbers(max_magnitude=1e3), st.text(max_size=3), st.none(), st.booleans())
DTYPES = st.sampled_from([np.float64, np.float32, np.float16, np.longdouble, np.int64, np.int8, np.bool_,
                          np.complex128, np.dtype("<U3"), np.dtype(object), np.dtype(">f8")])


def _arrays(dims: tuple[int, int], side: int = 5):
    def build(dtype):
        dtype = np.dtype(dtype)
        elements = SCALARS if dtype == object else None
        return hnp.arrays(dtype, hnp.array_shapes(min_dims=dims[0], max_dims=dims[1], min_side=0, max_side=side),
                          elements=elements)
    return DTYPES.flatmap(build)


FINITE = st.floats(-1e6, 1e6, allow_nan=False)
SAMPLES = st.one_of(
    st.lists(FINITE, max_size=8),  # mostly right
    st.lists(SCALARS, max_size=6),  # NaN, inf, strings, None, complex, bools
    _arrays((0, 2)),
    st.lists(st.lists(FINITE, max_size=3), max_size=3),  # ragged or 2-D
    st.builds(lambda a: torch.tensor(a, dtype=torch.float64), st.lists(FINITE, max_size=6)),
    SCALARS,
)
MATRICES = st.one_of(
    _arrays((2, 2), side=4),
    _arrays((0, 3), side=3),
    st.lists(st.lists(SCALARS, max_size=3), max_size=3),
    SCALARS,
)
OPTIONS = st.one_of(st.integers(-3, 10**6), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=2),
                    st.none(), st.booleans())


def _finite_values(x) -> np.ndarray:
    """The sample a successful call must have received: finite real numbers."""
    arr = np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
    assert arr.ndim == 1 and np.isfinite(arr).all()
    return arr


# ------------------------------------------------------------------ statistics


@SETTINGS
@given(a=SAMPLES, b=SAMPLES)
def test_separation_and_cliffs_delta(a, b):
    def check_sep(value):
        x, y = _finite_values(a), _finite_values(b)
        want = np.mean([(u > v) + 0.5 * (u == v) for u, v in itertools.product(x, y)])
        assert value == pytest.approx(want, abs=1e-12) and 0 <= value <= 1

    sep = right_or_refused(lambda: downstream.separation(a, b), check_sep)
    right_or_refused(lambda: downstream.cliffs_delta(a, b),
                     lambda delta: delta == pytest.approx(2 * sep - 1, abs=1e-12))


@SETTINGS
@given(x=SAMPLES, y=SAMPLES)
def test_spearman(x, y):
    def check(result):
        rho, p = result
        u, v = _finite_values(x), _finite_values(y)
        ref = stats.spearmanr(u, v)
        assert -1 <= rho <= 1 and 0 <= p <= 1
        assert rho == pytest.approx(ref.statistic, abs=1e-12) and p == pytest.approx(ref.pvalue, abs=1e-12)

    right_or_refused(lambda: downstream.spearman(x, y), check)


@SETTINGS
@given(rho=st.one_of(st.floats(-1, 1), OPTIONS), n=OPTIONS)
def test_spearman_p_from_rho(rho, n):
    def check(p):
        assert 0 <= p <= 1
        assert p == 0 or abs(rho) < 1  # the limit at a perfect rank correlation

    right_or_refused(lambda: downstream.spearman_p_from_rho(rho, n), check)


@SETTINGS
@given(values=SAMPLES, other=SAMPLES, seed=OPTIONS, level=st.one_of(st.floats(0.5, 0.99), OPTIONS))
def test_bootstrap_intervals(values, other, seed, level):
    def inside(interval, low_bound, high_bound):
        low, high = interval
        assert low <= high and low_bound - 1e-9 <= low and high <= high_bound + 1e-9

    def one(interval):
        x = _finite_values(values)
        inside(interval, x.min(), x.max())

    def two(interval):
        x, y = _finite_values(values), _finite_values(other)
        inside(interval, x.min() - y.max(), x.max() - y.min())

    right_or_refused(lambda: downstream.bootstrap_ci(values, n_resamples=50, level=level, seed=seed), one)
    right_or_refused(lambda: downstream.bootstrap_diff_ci(values, other, n_resamples=50, level=level, seed=seed), two)
    right_or_refused(lambda: downstream.bootstrap_paired_diff_ci(values, other, n_resamples=50, level=level,
                                                                 seed=seed), two)
    right_or_refused(lambda: downstream.spearman_ci(values, other, n_resamples=50, level=level, seed=seed),
                     lambda interval: inside(interval, -1, 1))


@SETTINGS
@given(a=st.one_of(st.text(max_size=12), SCALARS), b=st.one_of(st.text(max_size=12), SCALARS))
def test_lexical_overlap(a, b):
    right_or_refused(lambda: downstream.lexical_overlap(a, b), lambda v: 0 <= v <= 1)


# ------------------------------------------------------------------ pairs, matrices, clouds


@SETTINGS
@given(positions=st.one_of(SAMPLES, st.lists(st.integers(-5, 60), max_size=6)), n=OPTIONS.map(
    lambda v: v % 12 if isinstance(v, int) and not isinstance(v, bool) else v))
def test_condensed_pairs(positions, n):
    def check(pairs):
        k = np.asarray(positions, dtype=np.int64).reshape(-1)
        np.testing.assert_array_equal(pairs, all_pairs(n)[k] if len(k) else np.zeros((0, 2), np.int64))

    right_or_refused(lambda: condensed_pairs(positions, n), check)


def _psd(matrix) -> bool:
    """Whether the matrix is what bures accepts: finite, square, symmetric and PSD up to its tolerances."""
    try:
        M = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return M.ndim == 2 and M.shape[0] == M.shape[1] > 0 and np.isfinite(M).all()


@SETTINGS
@given(S1=MATRICES, S2=MATRICES, scale=st.integers(-900, 900))
def test_bures_wasserstein(S1, S2, scale):
    rng = np.random.default_rng(abs(scale))
    A = rng.normal(size=(3, 3))
    P = A @ A.T * 2.0**scale  # a PSD matrix at a scale far from 1
    right_or_refused(lambda: socm_lib.bures_wasserstein_sq(S1, S2), lambda v: v >= 0 and np.isfinite(v))
    right_or_refused(lambda: socm_lib.psd_sqrt(S1),
                     lambda R: np.testing.assert_allclose((R @ R).numpy(), np.asarray(S1, dtype=np.float64),
                                                          atol=1e-6 * np.abs(np.asarray(S1, float)).max()))
    for other in (S2, P):
        right_or_refused(lambda: socm_lib.bures_wasserstein_sq(P, other),
                         lambda v: v == pytest.approx(socm_lib.bures_wasserstein_sq(other, P), rel=1e-9, abs=1e-300))
    assert socm_lib.bures_wasserstein_sq(P, P) <= 1e-10 * np.trace(P)  # 0, up to the d x d route's round-off


@SETTINGS
@given(G=st.one_of(_arrays((2, 4), side=4), MATRICES))
def test_nuclear_norms(G):
    def check(values):
        real = np.asarray(G).astype(np.float64)
        np.testing.assert_allclose(values, np.linalg.svd(real, compute_uv=False).sum(axis=-1),
                                   rtol=1e-3 if np.asarray(G).dtype.itemsize <= 2 else 1e-9, atol=1e-300)

    right_or_refused(lambda: nuclear.nuclear_norms(G), check)


@SETTINGS
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 7), st.integers(1, 7)), scale=st.integers(-1073, 1020),
       seed=st.integers(0, 100))
def test_batched_jacobi_at_every_float64_scale(shape, scale, seed):
    G = np.random.default_rng(seed).uniform(-1, 1, size=shape)
    G = np.ldexp(np.round(np.ldexp(G, 8)), scale - 8)  # 8 bits: exact even among subnormals
    want = np.linalg.svd(G, compute_uv=False)
    got = np.sort(jacobi.batched_svdvals(torch.from_numpy(G)).numpy(), axis=1)[:, ::-1]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * max(want.max(), 5e-324))


CLOUDS = st.one_of(_arrays((2, 2), side=4), MATRICES,
                   st.builds(lambda seed, e: np.ldexp(np.random.default_rng(seed).normal(size=(4, 3)) + 0.5, e),
                             st.integers(0, 50), st.integers(-1000, 1000)))


@SETTINGS
@given(X=CLOUDS)
def test_statistics_of_one_cloud(X):
    right_or_refused(lambda: socm_lib.spread(X), lambda v: v >= 0 and np.isfinite(v))
    right_or_refused(lambda: socm_lib.concentration_ratio(X), lambda v: v >= 0 and np.isfinite(v))
    right_or_refused(lambda: socm_lib.avg_intra_cosine(X), lambda v: -1e-12 <= v <= 1 + 1e-12)
    right_or_refused(lambda: socm_lib.normalize_cloud(X),
                     lambda Y: torch.linalg.vector_norm(Y.mean(dim=0)) == pytest.approx(1.0, rel=1e-9))
    right_or_refused(lambda: socm_lib.cloud_covariance(X), lambda C: bool(torch.isfinite(C).all()))


# ------------------------------------------------------------------ the control's predictions


COUNTS = st.one_of(st.integers(0, 8), st.integers(-2, 40), st.floats(allow_nan=True, allow_infinity=True),
                   SAMPLES, st.none())


@SETTINGS
@given(n1=COUNTS, n2=COUNTS, k=COUNTS, q1=COUNTS, beta=st.one_of(st.just(control.BETA), st.floats(0, 1), OPTIONS))
def test_the_controls_predictions(n1, n2, k, q1, beta):
    right_or_refused(lambda: control.predicted_concentration(n1, q1, beta=beta),
                     lambda c: np.all(np.asarray(c) >= -1e-12) and np.all(np.isfinite(c)))
    right_or_refused(lambda: control.predicted_mean_cosine(n1, n2, k, q1, beta=beta),
                     lambda c: np.all(np.abs(np.asarray(c)) <= 1 + 1e-12))
    right_or_refused(lambda: control.shares(n1, n2, beta), lambda s: 0 < s[0] <= 1 and 0 <= s[1] <= 1)


# ------------------------------------------------------------------ texts


TEXTS = st.one_of(st.lists(st.text(max_size=6), max_size=6), st.text(max_size=6), SAMPLES,
                  st.lists(st.sampled_from(["café", "cafe\u0301", "a\u00a0b", "a b", " a b ", "x"]), max_size=6))


@SETTINGS
@given(texts=TEXTS, k=OPTIONS, seed=OPTIONS)
def test_texts_are_drawn_and_compared_in_one_form(texts, k, seed):
    def distinct(drawn):
        forms = [checks.text_form(t) for t in drawn]
        assert len(drawn) == k and len(set(forms)) == len(forms)
        assert all(t in texts for t in drawn)

    right_or_refused(lambda: data.sample_texts(texts, k, seed), distinct)
    kept = right_or_refused(lambda: checks.distinct_texts(checks.as_texts(texts)))
    if kept is not None:
        forms = [checks.text_form(t) for t in kept]
        assert len(set(forms)) == len(forms) and {checks.text_form(t) for t in texts} == set(forms)
        assert all(checks.text_form(f) == f for f in forms)  # the form of a form is itself


@SETTINGS
@given(n1=st.integers(1, 6), n2=st.integers(1, 6), k=st.integers(0, 12), q1=st.integers(1, 36),
       q2=st.integers(1, 36))
def test_the_controls_cosine_is_a_cosine_or_the_counts_are_refused(n1, n2, k, q1, q2):
    right_or_refused(lambda: control.predicted_mean_cosine(n1, n2, k, q1, q2), lambda c: abs(c) <= 1 + 1e-12)
    right_or_refused(lambda: control.predicted_concentration(n1, q1), lambda c: c >= 0)
