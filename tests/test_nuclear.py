"""Nuclear norms of many small matrices (socm_lib.nuclear): the compiled lane kernel, each of its variants, and the
LAPACK fallback, against a per-matrix reference (LAPACK's other SVD driver, ``gesvd``), on the engine's own kinds of
cross matrices and on edge cases; the engine's results with and without the kernel."""

from __future__ import annotations

import os
import shutil
import sysconfig

import numpy as np
import pytest
import scipy.linalg
import torch

import socm_lib
from socm_lib import nuclear
from socm_lib import pairs as engine
from socm_lib.report import device_report

RTOL = 1e-12
#: Set to 1 where the kernel is expected not to be built (no C compiler, or SOCM_BUILD_KERNEL=0 at install).
EXPECT_NO_KERNEL = os.environ.get("SOCM_EXPECT_NO_KERNEL") == "1"
ROUTES = ["lapack", *nuclear.variants()]


def reference(G: np.ndarray) -> np.ndarray:
    """Each matrix's singular values from LAPACK ``gesvd`` (implicit QR, one matrix at a time), summed."""
    flat = G.reshape(-1, *G.shape[-2:])
    sums = [scipy.linalg.svd(g, compute_uv=False, lapack_driver="gesvd").sum() for g in flat]
    return np.array(sums).reshape(G.shape[:-2])


def assert_exact(values: np.ndarray, G: np.ndarray) -> float:
    """Every matrix within RTOL of the reference (a zero matrix: exactly zero); the largest relative error."""
    ref = reference(G)
    assert values.shape == ref.shape and values.dtype == np.float64
    assert np.all(values[ref == 0] == 0)
    nz = ref != 0
    err = float(np.max(np.abs(values[nz] - ref[nz]) / ref[nz])) if nz.any() else 0.0
    assert err <= RTOL, err
    return err


@pytest.fixture(params=ROUTES)
def route(request, monkeypatch):
    """Each route in turn: LAPACK forced, then every kernel variant this CPU runs."""
    monkeypatch.setenv(nuclear.KERNEL_ENV, request.param)
    return request.param


# ----------------------------------------------------------------------------- the engine's kinds of matrices
def helmert_factors(clouds) -> list[np.ndarray]:
    """Each cloud's float64 factor A (n-1 scaled Helmert rows), as the engine forms it."""
    return [engine._factor(torch.as_tensor(np.asarray(x, dtype=np.float64)), True, "x")[1].numpy() for x in clouds]


def cross_batches(clouds, n_pairs: int, seed: int = 0) -> list[np.ndarray]:
    """Cross matrices A_i A_j^T of random pairs, zero-padded as in the engine's buckets (rows rounded up to a
    multiple of 8), grouped into batches of one shape."""
    factors = helmert_factors(clouds)
    rng = np.random.default_rng(seed)
    groups: dict[tuple, list] = {}
    for i, j in rng.integers(0, len(clouds), size=(n_pairs, 2)):
        A, B = factors[i], factors[j]
        p, q = -(-len(A) // 8) * 8, -(-len(B) // 8) * 8
        G = np.zeros((p, q))
        G[: len(A), : len(B)] = A @ B.T
        groups.setdefault((p, q), []).append(G)
    return [np.stack(g) for g in groups.values()]


def random_clouds(rng, count=60, d=32):
    return [rng.standard_normal((int(rng.integers(2, 61)), d)) + 1.0 for _ in range(count)]


def ill_conditioned_clouds(rng, count=60, d=32):
    """Spread decaying over 14 orders of magnitude across directions: cross matrices with graded spectra."""
    scales = np.logspace(0, -14, d)
    return [1.0 + rng.standard_normal((int(rng.integers(2, 61)), d)) * scales for _ in range(count)]


def repeated_token_clouds(rng, count=60, d=32):
    """A few distinct tokens repeated: rank-deficient factors and cross matrices."""
    out = []
    for _ in range(count):
        distinct = rng.standard_normal((int(rng.integers(1, 5)), d)) + 1.0
        out.append(distinct[rng.integers(0, len(distinct), size=int(rng.integers(2, 61)))])
    return out


@pytest.fixture(scope="module")
def real_clouds():
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 40, seed=11)
    return socm_lib.token_embeddings(enc, texts)


@pytest.mark.parametrize("kind", ["random", "ill_conditioned", "repeated_tokens"])
def test_cross_matrices_of_synthetic_clouds(route, kind):
    rng = np.random.default_rng(["random", "ill_conditioned", "repeated_tokens"].index(kind))
    clouds = {"random": random_clouds, "ill_conditioned": ill_conditioned_clouds,
              "repeated_tokens": repeated_token_clouds}[kind](rng)
    for G in cross_batches(clouds, 500):
        assert_exact(nuclear.nuclear_norms(G), G)


def test_cross_matrices_of_real_clouds(route, real_clouds):
    for G in cross_batches(real_clouds, 500, seed=3):
        assert_exact(nuclear.nuclear_norms(G), G)


# ----------------------------------------------------------------------------- edge cases
def spectrum_matrices(rng, count: int, p: int, q: int, sigma) -> np.ndarray:
    """``count`` random p x q matrices U diag(sigma) V^T with orthonormal U, V."""
    r = len(sigma)
    U = np.linalg.qr(rng.standard_normal((count, p, r)))[0]
    V = np.linalg.qr(rng.standard_normal((count, q, r)))[0]
    return (U * np.asarray(sigma)) @ np.swapaxes(V, -1, -2)


def edge_batches() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    mixed = rng.standard_normal((40, 12, 9)) * np.logspace(-160, 160, 40)[:, None, None]
    return {
        "zero": np.zeros((5, 6, 7)),
        "one entry": rng.standard_normal((50, 1, 1)),
        "one row": rng.standard_normal((20, 1, 17)),
        "one column": rng.standard_normal((20, 17, 1)),
        "rank one": rng.standard_normal((30, 20, 1)) * rng.standard_normal((30, 1, 15)),
        "clustered": spectrum_matrices(rng, 30, 24, 20, 1.0 + 1e-10 * np.arange(20)),
        "graded": spectrum_matrices(rng, 30, 24, 20, np.logspace(0, -15, 20)),
        "tiny and large together": spectrum_matrices(rng, 30, 16, 16, [1.0] * 8 + [1e-300] * 8),
        "largest padded size": np.pad(rng.standard_normal((9, 59, 47)), ((0, 0), (0, 5), (0, 17))),
        "long side": rng.standard_normal((4, 160, 120)),
        "near 1e+160": rng.standard_normal((30, 10, 8)) * 1e160,
        "near 1e-160": rng.standard_normal((30, 10, 8)) * 1e-160,
        "1e-160 to 1e+160 in one batch": mixed,
        "subnormal": rng.standard_normal((10, 4, 4)) * 1e-310,
    }


@pytest.mark.parametrize("name", list(edge_batches()))
def test_edge_cases(route, name):
    G = edge_batches()[name]
    assert_exact(nuclear.nuclear_norms(G), G)


def test_any_strides_and_leading_shape(route):
    """A transposed view with two leading axes, as the engine hands its cross-Grams over (no copy needed)."""
    G = np.random.default_rng(1).standard_normal((6, 30, 5, 40)).transpose(0, 2, 1, 3)  # (6, 5, 30, 40)
    assert not G.flags.c_contiguous
    values = nuclear.nuclear_norms(G)
    assert values.shape == (6, 5)
    assert_exact(values, G)


def test_other_dtypes_take_lapack():
    """The kernel is float64 only; float32 goes to LAPACK's float32 SVD (about 1e-6 relative)."""
    G = np.random.default_rng(2).standard_normal((20, 8, 6))
    values = nuclear.nuclear_norms(G.astype(np.float32))
    assert values.dtype == np.float64
    np.testing.assert_allclose(values, reference(G), rtol=1e-5)


def test_not_finite_input_fails_as_lapack_does(route):
    """A NaN never converges in the kernel: that matrix goes to LAPACK, which raises as it always has."""
    G = np.random.default_rng(3).standard_normal((40, 6, 6))
    G[17, 2, 3] = np.nan
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.svd(G[17:18], compute_uv=False)
    with pytest.raises(np.linalg.LinAlgError):
        nuclear.nuclear_norms(G)


# ----------------------------------------------------------------------------- non-convergence: LAPACK for that matrix only
@pytest.mark.skipif(not nuclear.variants(), reason="the compiled kernel is not built here (see test_kernel_is_built)")
@pytest.mark.parametrize("variant", nuclear.variants())
def test_unconverged_lanes_go_to_lapack_one_by_one(monkeypatch, variant):
    monkeypatch.setenv(nuclear.KERNEL_ENV, variant)
    sent = []
    lapack = nuclear.lapack_nuclear_norms

    def counting(G):
        sent.append(len(G))
        return lapack(G)

    monkeypatch.setattr(nuclear, "lapack_nuclear_norms", counting)
    rng = np.random.default_rng(4)
    G = np.concatenate([rng.standard_normal((50, 12, 10)),
                        np.repeat(np.eye(12, 10)[None], 50, axis=0)])  # diagonal: converged before any sweep
    assert_exact(nuclear.nuclear_norms(G), G)
    assert sent == []  # the default sweep budget is enough for all
    values = nuclear.nuclear_norms(G, max_sweeps=1)  # one sweep per matrix: most random ones do not converge
    assert_exact(values, G)
    assert len(sent) == 1 and 0 < sent[0] <= 50  # flagged random matrices only, in one LAPACK call


# ----------------------------------------------------------------------------- build, dispatch, reporting
def test_kernel_is_built():
    """Where a C compiler is found, the install must have built the kernel: a silent fallback fails here. Without
    one (or with SOCM_EXPECT_NO_KERNEL=1), the report must say that LAPACK runs and why."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if EXPECT_NO_KERNEL or not shutil.which(compiler):
        assert nuclear.kernel() is None and "LAPACK per matrix (compiled lane kernel not built" in \
            nuclear.kernel_report()
        return
    assert nuclear.variants(), f"the compiled lane kernel is not built: {nuclear.kernel_report()}"
    assert nuclear.variants()[-1] == "portable"
    assert nuclear.kernel() == nuclear.variants()[0]


def test_without_the_kernel_lapack_runs_and_says_so(monkeypatch):
    """An install without the compiled kernel (simulated): LAPACK's numbers, and the report says why."""
    monkeypatch.setattr(nuclear, "_lanes", None)
    monkeypatch.setattr(nuclear, "_MISSING", "not built: this install has no socm_lib._lanes extension")
    assert nuclear.variants() == () and nuclear.kernel() is None
    assert nuclear.kernel_report() == ("nuclear norms: LAPACK per matrix (compiled lane kernel not built: "
                                       "this install has no socm_lib._lanes extension)")
    G = np.random.default_rng(6).standard_normal((30, 9, 7))
    np.testing.assert_array_equal(nuclear.nuclear_norms(G), nuclear.lapack_nuclear_norms(G))


def test_route_choice_and_report(monkeypatch):
    monkeypatch.setenv(nuclear.KERNEL_ENV, "lapack")
    assert nuclear.kernel() is None and "LAPACK" in nuclear.kernel_report()
    monkeypatch.setenv(nuclear.KERNEL_ENV, "sse9")
    with pytest.raises(ValueError, match="auto, lapack, avx512, avx2 or portable"):
        nuclear.kernel()
    for name in {"avx512", "avx2", "portable"} - set(nuclear.variants()):
        monkeypatch.setenv(nuclear.KERNEL_ENV, name)
        with pytest.raises(ValueError, match="runs only"):
            nuclear.kernel()
    monkeypatch.delenv(nuclear.KERNEL_ENV)
    assert nuclear.kernel_report() in device_report()


def test_bad_shape_is_refused():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., p, q\)"):
        nuclear.nuclear_norms(np.ones(3))


# ----------------------------------------------------------------------------- the engine with and without the kernel
def test_engine_same_numbers_with_and_without_kernel(monkeypatch, real_clouds):
    rng = np.random.default_rng(5)
    clouds = list(real_clouds) + ill_conditioned_clouds(rng, 20, 384) + repeated_token_clouds(rng, 20, 384)
    listed = engine.all_pairs(len(clouds))[rng.choice(len(clouds) * (len(clouds) - 1) // 2, 300, replace=False)]
    results = {}
    for choice in ("lapack", "auto"):
        monkeypatch.setenv(nuclear.KERNEL_ENV, choice)
        results[choice] = (socm_lib.socm_pairs(clouds, progress=False),
                           socm_lib.socm_pairs(clouds, listed, progress=False, block_elems=1 << 14))
    for with_kernel, without in zip(results["auto"], results["lapack"]):
        for field in ("d_sigma", "socm"):
            a, b = getattr(with_kernel, field), getattr(without, field)
            assert np.max(np.abs(a - b)) <= RTOL * np.max(np.abs(b)), field


def test_gpu_check_names_the_cpu_route():
    from socm_lib import gpu_check as gc

    report = gc.gpu_check("untrained-minilm-l6", n_texts=3, device="cpu")
    assert report["cpu_nuclear_norms"] == nuclear.kernel_report()
    assert f"CPU reference: {nuclear.kernel_report()}" in gc.summary(report)
