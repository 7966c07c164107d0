"""Nuclear norms of many small matrices (socm_lib.nuclear): the compiled lane kernel, each of its variants, and the
LAPACK fallback, against a per-matrix reference (LAPACK's other SVD driver, ``gesvd``), on the engine's own kinds of
cross matrices and on edge cases; the engine's results with and without the kernel."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sysconfig
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.linalg
import torch

import socm_lib
from socm_lib import nuclear
from socm_lib.factors import factor
from socm_lib.report import device_report

from notebook_cells import ROOT

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


@pytest.fixture
def choose():
    """``choose(route)``: the nuclear norms' route for the rest of the test (``socm_lib.config_context``)."""
    with contextlib.ExitStack() as stack:
        yield lambda name: stack.enter_context(socm_lib.config_context(svd_kernel=name))


@pytest.fixture(params=ROUTES)
def route(request, choose):
    """Each route in turn: LAPACK forced, then every kernel variant this CPU runs."""
    choose(request.param)
    return request.param


# ----------------------------------------------------------------------------- the engine's kinds of matrices
def helmert_factors(clouds) -> list[np.ndarray]:
    """Each cloud's float64 factor A (n-1 scaled Helmert rows), as the engine forms it."""
    return [factor(torch.as_tensor(np.asarray(x, dtype=np.float64)), True, "x")[1].numpy() for x in clouds]


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


def test_not_finite_input_is_refused_by_every_route(route):
    """A NaN or an infinity: ValueError naming the matrix, on the kernel and on LAPACK (which would raise for a NaN
    and return NaN for an infinity), for a batch, a single matrix and float32."""
    G = np.random.default_rng(3).standard_normal((40, 6, 6))
    G[17, 2, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or an infinite entry \(the matrix at index \(17,\), 1 such"):
        nuclear.nuclear_norms(G)
    for single in (np.array([[np.inf, 1.0], [0.0, 1.0]]), np.array([[1.0, -np.inf]], dtype=np.float32)):
        with pytest.raises(ValueError, match="NaN or an infinite entry: a nuclear norm needs finite entries"):
            nuclear.nuclear_norms(single)


# ----------------------------------------------------------------------------- non-convergence: LAPACK for that matrix only
@pytest.mark.skipif(not nuclear.variants(), reason="the compiled kernel is not built here (see test_kernel_is_built)")
@pytest.mark.parametrize("variant", nuclear.variants())
def test_unconverged_lanes_go_to_lapack_one_by_one(monkeypatch, choose, variant):
    choose(variant)
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


def test_a_single_matrix_whose_lane_is_flagged_goes_to_lapack(route):
    """A 2-D matrix (no leading axes) that the kernel flags: LAPACK's value, a 0-d array, never an exception."""
    B = np.array([[1.0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1]])
    X = np.random.default_rng(8).standard_normal((5, 4))
    for M, sweeps in ((B, None), (B, 1), (X, 1)):
        value = nuclear.nuclear_norms(M, max_sweeps=sweeps)
        assert value.shape == () and value.dtype == np.float64
        assert_exact(value, M)


# ----------------------------------------------------------------------------- zero and negligible diagonals
#: The 4 x 4 0/1 matrix whose bidiagonal has a zero inside: d = (1, 0, 1, 1), e = (1, 1, 1).
ZERO_INSIDE = np.array([[1.0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1]])


def bidiagonals_with(zero: float, n: int, count: int = 64, seed: int = 0) -> np.ndarray:
    """``count`` random n x n upper bidiagonal matrices, each with ``zero`` at one random place of its diagonal.
    (The kernel's bidiagonalisation leaves a bidiagonal matrix as it is, so these reach its QR sweeps intact.)"""
    rng = np.random.default_rng([seed, n])
    G = np.zeros((count, n, n))
    rows = np.arange(n)
    G[:, rows, rows] = rng.standard_normal((count, n))
    G[:, rows[:-1], rows[1:]] = rng.standard_normal((count, n - 1))
    G[np.arange(count), *(2 * [rng.integers(0, n, count)])] = zero
    return G


def sparse_01_batches(total: int = 2048, per_shape: int = 8, seed: int = 2) -> list[np.ndarray]:
    """``total`` random sparse 0/1 matrices, ``per_shape`` to a batch, with p x q of the engine's sizes (1 to 64
    rows and columns: the Helmert rows of texts of up to 65 tokens) and 2 % to 50 % ones. (The kernel without the
    zero shift flagged 3 of this draw.)"""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(total // per_shape):
        p, q = rng.integers(1, 65, size=2)
        out.append((rng.random((per_shape, p, q)) < rng.choice([0.02, 0.05, 0.1, 0.2, 0.3, 0.5])).astype(float))
    return out


def zero_diagonal_families() -> dict[str, np.ndarray | list[np.ndarray]]:
    families = {f"{zero:g} on the diagonal, n = {n}": bidiagonals_with(zero, n)
                for zero in (0.0, 1e-300) for n in (8, 16, 32, 64)}
    return {**families, "4 x 4 with a zero inside": ZERO_INSIDE[None], "sparse 0/1": sparse_01_batches()}


@pytest.mark.parametrize("variant", nuclear.variants())
@pytest.mark.parametrize("family", list(zero_diagonal_families()))
def test_zero_and_negligible_diagonals_converge_in_the_kernel(variant, family):
    """dbdsqr's zero shift and its deflation of a zero diagonal entry: no lane flagged (without them, 21 to 51 of
    each 64 bidiagonals here, the 4 x 4 matrix and 3 of the sparse ones stayed flagged at the sweep budget), and
    values within 1e-12 of LAPACK's."""
    batches = zero_diagonal_families()[family]
    for G in batches if isinstance(batches, list) else [batches]:
        values, flags = nuclear.kernel_nuclear_norms(G, variant)
        assert np.count_nonzero(flags) == 0, f"{np.count_nonzero(flags)} of {len(G)} lanes flagged"
        assert_exact(values, G)


def test_variants_give_the_same_bits_on_zero_diagonals(choose):
    """The AVX-512, AVX2 and portable copies agree to the last bit on the zero-shift families too."""
    families = zero_diagonal_families()
    G = [families[k] for k in families if k != "sparse 0/1"] + families["sparse 0/1"][::8]
    results = []
    for variant in nuclear.variants():
        choose(variant)
        results.append([nuclear.nuclear_norms(g) for g in G])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_a_matrix_gives_the_same_bits_alone_and_in_any_company():
    """Calls on 1, 2, 3, 5 or 8 matrices pack them 1, 2, 4 or 8 side by side (the workspace the call needs);
    every lane runs the same operations, so each matrix's nuclear norm is the same to the last bit, on every
    variant, and threads calling at once change nothing."""
    G = np.concatenate([bidiagonals_with(0.0, 12, 6), np.random.default_rng(9).standard_normal((13, 12, 12))])
    for variant in nuclear.variants():
        whole, _ = nuclear.kernel_nuclear_norms(G, variant)
        for count in (1, 2, 3, 5, 8):
            part, _ = nuclear.kernel_nuclear_norms(G[:count], variant)
            np.testing.assert_array_equal(part, whole[:count])
        np.testing.assert_array_equal(nuclear.kernel_nuclear_norms(G[4], variant)[0], whole[4])
        with ThreadPoolExecutor(8) as pool:
            threaded = list(pool.map(lambda g: nuclear.kernel_nuclear_norms(g, variant)[0], [G] * 16))
        for values in threaded:
            np.testing.assert_array_equal(values, whole)


# ----------------------------------------------------------------------------- at the door: layout, sizes, memory
def test_misaligned_and_byte_swapped_input(route):
    """A field of a structured array (misaligned doubles) and big-endian float64: the kernel's numbers (copied to
    aligned native memory first), not a TypeError; LAPACK's dtype rule is unchanged."""
    rng = np.random.default_rng(10)
    record = np.zeros(7, dtype=[("a", "u1"), ("m", "f8", (5, 4))])
    record["m"] = rng.standard_normal((7, 5, 4))
    G = record["m"]
    assert not G.flags.aligned
    aligned = np.array(G)
    for odd in (G, aligned.astype(">f8"), G[3]):
        values = nuclear.nuclear_norms(odd)
        np.testing.assert_array_equal(values, nuclear.nuclear_norms(np.array(odd, dtype=np.float64)))
        assert_exact(values, np.array(odd, dtype=np.float64))


@pytest.mark.parametrize("variant", nuclear.variants())
def test_the_kernel_refuses_what_it_cannot_hold_and_lapack_takes_it(monkeypatch, choose, variant):
    """The C code: ValueError for a side above MAX_SIDE, MemoryError for a workspace it cannot allocate, sized for
    the matrices packed side by side (1 for one matrix, 4 for three: not 8). nuclear_norms sends both to LAPACK."""
    from numpy.lib.stride_tricks import as_strided

    from socm_lib import _lanes

    def huge(count: int, p: int, q: int) -> np.ndarray:  # one zero, read count * p * q times: no memory
        return as_strided(np.zeros(1), shape=(count, p, q), strides=(0, 0, 0))

    with pytest.raises(ValueError, match="MAX_SIDE"):
        nuclear.kernel_nuclear_norms(huge(1, _lanes.MAX_SIDE + 1, 1), variant)
    side = 2**28  # m n doubles = 2^56 per lane (512 PiB): more than any machine has
    for count, lanes in ((1, 1), (3, 4), (9, 8)):
        with pytest.raises(MemoryError) as refused:
            nuclear.kernel_nuclear_norms(huge(count, side, side), variant)
        doubles = side * side * lanes + 2 * side * lanes + (2 * side + 3) * 32
        assert f"({doubles} doubles)" in str(refused.value)

    sent, lapack = [], nuclear.lapack_nuclear_norms
    choose(variant)
    monkeypatch.setattr(nuclear, "lapack_nuclear_norms", lambda G: sent.append(G.shape) or lapack(G))
    G = np.random.default_rng(11).standard_normal((6, 9, 7))
    monkeypatch.setattr(_lanes, "MAX_SIDE", 8)  # as if 9 rows were too many for the C code
    assert_exact(nuclear.nuclear_norms(G), G)
    monkeypatch.setattr(_lanes, "MAX_SIDE", 9)

    def no_memory(*args, **kwargs):
        raise MemoryError("no workspace")

    monkeypatch.setattr(nuclear, "kernel_nuclear_norms", no_memory)
    assert_exact(nuclear.nuclear_norms(G), G)
    assert sent == [G.shape, G.shape]


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


def test_route_choice_and_report():
    with socm_lib.config_context(svd_kernel="lapack"):
        assert nuclear.kernel() is None
        if nuclear.variants():  # forced by hand: the report says so, and which variants were passed over
            assert nuclear.kernel_report() == ("nuclear norms: LAPACK per matrix (chosen by svd_kernel='lapack'; "
                                               f"compiled lane kernel variants here: {', '.join(nuclear.variants())})")
        else:
            assert "LAPACK per matrix (compiled lane kernel not built" in nuclear.kernel_report()
    with pytest.raises(ValueError, match="svd_kernel must be one of 'auto', 'lapack', 'avx512', 'avx2', 'portable'"):
        with socm_lib.config_context(svd_kernel="sse9"):
            pass
    for name in {"avx512", "avx2", "portable"} - set(nuclear.variants()):
        with socm_lib.config_context(svd_kernel=name), pytest.raises(ValueError, match="runs only"):
            nuclear.kernel()
    assert nuclear.kernel_report() in device_report()


def test_bad_shape_is_refused():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., p, q\)"):
        nuclear.nuclear_norms(np.ones(3))


# ----------------------------------------------------------------------------- the engine with and without the kernel
def test_engine_same_numbers_with_and_without_kernel(choose, real_clouds):
    rng = np.random.default_rng(5)
    clouds = list(real_clouds) + ill_conditioned_clouds(rng, 20, 384) + repeated_token_clouds(rng, 20, 384)
    listed = socm_lib.all_pairs(len(clouds))[rng.choice(len(clouds) * (len(clouds) - 1) // 2, 300, replace=False)]
    results = {}
    for choice in ("lapack", "auto"):
        choose(choice)
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


def test_chapter_6_states_the_lane_widths_the_kernel_source_sets():
    # ch06 describes the kernel's batching; the widths it names must be the source's #defines (an examiner found
    # "four in the AVX2 version" where every version packs BW = 8)
    source = (ROOT / "socm_lib" / "_lanes.c").read_text(encoding="utf-8")
    bidiag, sweeps = (int(re.search(rf"#define {name} (\d+)", source).group(1)) for name in ("BW", "QW"))
    words = {2: "two", 4: "four", 8: "eight", 16: "sixteen"}
    chapter = " ".join((ROOT / "book" / "ch06_computing.md").read_text(encoding="utf-8").split())
    assert f"entry $(i, j)$ of {words[bidiag]} matrices at a time" in chapter
    assert f"every version packs {words[bidiag]}" in chapter
    assert f"the QR sweeps then run on {sweeps} bidiagonal matrices at a time" in chapter
