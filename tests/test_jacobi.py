"""The torch path's batched one-sided Jacobi (socm_lib.jacobi) against float64 LAPACK, matrix by matrix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import jacobi
from socm_lib import block_math
from socm_lib.factors import factor

RTOL = 1e-12  # the engine's promise, on each matrix's nuclear norm


@pytest.fixture(autouse=True)
def one_thread():
    """The solver's many small tensor operations run best on one CPU thread (threads of a shared CPU spin-wait)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def worst_error(G: np.ndarray, **kw) -> float:
    """Largest relative error of the nuclear norm of each matrix of ``G`` (b, p, q) against ``np.linalg.svd``."""
    ref = np.linalg.svd(G, compute_uv=False).sum(axis=-1)
    got = jacobi.batched_svdvals(torch.from_numpy(G), **kw).sum(dim=-1).numpy()
    scale = np.where(ref > 0, ref, 1.0)
    return float(np.max(np.abs(got - ref) / scale))


def orthonormal(rng, b: int, n: int) -> np.ndarray:
    return np.linalg.qr(rng.normal(size=(b, n, n)))[0]


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (2, 2), (5, 9), (9, 5), (17, 17), (33, 40), (59, 59),
                                   (59, 4)])
def test_random_matrices(shape):
    rng = np.random.default_rng(sum(shape))
    assert worst_error(rng.normal(size=(16, *shape))) <= RTOL


def test_singular_values_themselves_match():
    rng = np.random.default_rng(0)
    G = rng.normal(size=(30, 12, 20))
    got = np.sort(jacobi.batched_svdvals(torch.from_numpy(G)).numpy(), axis=-1)[:, ::-1]
    np.testing.assert_allclose(got, np.linalg.svd(G, compute_uv=False), rtol=1e-12, atol=1e-14)


def test_ill_conditioned_graded_and_clustered_spectra():
    rng = np.random.default_rng(1)
    n = 30
    spectra = [np.logspace(0, -15, n), np.logspace(0, -300, n),  # graded: condition 1e15, then 1e300
               1.0 + 1e-13 * np.arange(n), np.r_[np.full(n // 2, 2.0), np.full(n - n // 2, 2.0 - 1e-12)]]
    for s in spectra:
        G = orthonormal(rng, 20, n) * s @ orthonormal(rng, 20, n)
        assert worst_error(G) <= RTOL


def test_rank_deficient_and_rank_one():
    rng = np.random.default_rng(2)
    for r in (1, 3, 10):
        G = rng.normal(size=(25, 40, r)) @ rng.normal(size=(25, r, 31))
        assert worst_error(G) <= RTOL
    x, y = rng.normal(size=(10, 8, 1)), rng.normal(size=(10, 1, 13))  # rank 1: the nuclear norm is |x| |y|
    got = jacobi.batched_svdvals(torch.from_numpy(x @ y)).sum(-1).numpy()
    np.testing.assert_allclose(got, np.linalg.norm(x, axis=(1, 2)) * np.linalg.norm(y, axis=(1, 2)), rtol=RTOL)


def test_zero_matrices_and_empty_batches():
    G = torch.zeros(3, 5, 6, dtype=torch.float64)
    G[1, 2, 3] = -2.5  # one entry
    np.testing.assert_array_equal(jacobi.batched_svdvals(G).sum(-1).numpy(), [0.0, 2.5, 0.0])
    assert jacobi.batched_svdvals(torch.zeros(0, 4, 4, dtype=torch.float64)).shape == (0, 4)


def test_entries_near_the_ends_of_float64_are_rescaled():
    rng = np.random.default_rng(3)
    for scale in (1e-160, 1e160, 1e-300, 1e300):
        G = rng.normal(size=(10, 20, 14)) * scale
        assert worst_error(G) <= RTOL, scale


def test_largest_padded_sizes():
    """59 x 59 (the benchmark's longest texts, 60 tokens) and d x d at d = 384 (every long cloud there)."""
    rng = np.random.default_rng(4)
    assert worst_error(rng.normal(size=(8, 59, 59))) <= RTOL
    G = rng.normal(size=(1, 384, 384)) * np.logspace(0, -8, 384)
    assert worst_error(G) <= RTOL


def test_real_cross_grams_of_all_minilm_l6():
    """Every pair of 14 corpus texts, each cross-Gram zero-padded to the longest (padding adds zero singular values)."""
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 14, seed=7)
    factors = [factor(torch.from_numpy(c).double(), True, "c")[1].numpy()
               for c in socm_lib.token_embeddings(enc, texts, progress=False)]
    L = max(len(A) for A in factors)
    padded = np.stack([np.pad(A, ((0, L - len(A)), (0, 0))) for A in factors])
    i, j = np.triu_indices(len(factors), k=1)
    G = padded[i] @ np.swapaxes(padded[j], 1, 2)
    assert G.shape == (91, L, L) and L > 32
    assert worst_error(G) <= RTOL


def test_non_converged_matrices_alone_go_to_svdvals(monkeypatch):
    rng = np.random.default_rng(5)
    G = rng.normal(size=(12, 10, 10))
    G[:4] = 0.0  # converged at once: nothing to rotate
    G[4:6, 1:] = 0.0  # one non-zero row: converged at once
    seen = []
    real = torch.linalg.svdvals

    def spy(x):
        seen.append(x.shape[0])
        return real(x)

    monkeypatch.setattr(jacobi.torch.linalg, "svdvals", spy)
    assert worst_error(G, max_sweeps=1) <= RTOL
    assert seen == [6]  # the six matrices one sweep could not orthogonalise, together, once
    seen.clear()
    assert worst_error(G) <= RTOL and seen == []  # with the default cap every matrix converges


def test_float32_batches_stay_float32():
    rng = np.random.default_rng(6)
    G = torch.from_numpy(rng.normal(size=(10, 9, 11)).astype(np.float32))
    s = jacobi.batched_svdvals(G)
    assert s.dtype == torch.float32
    np.testing.assert_allclose(s.sum(-1).numpy(), np.linalg.svd(G.double().numpy(), compute_uv=False).sum(-1),
                               rtol=1e-5)


@pytest.mark.parametrize("listed", [False, True])
def test_engine_with_the_jacobi_solver_matches_lapack(listed):
    rng = np.random.default_rng(7)
    d = 48
    clouds = [1.0 + 0.6 * rng.normal(size=(n, d)) for n in rng.integers(1, 70, 30)]
    pairs = rng.integers(0, len(clouds), size=(300, 2)) if listed else None
    ref = socm_lib.socm_pairs(clouds, pairs, device="cpu", backend="numpy", progress=False)
    with socm_lib.config_context(torch_svd="jacobi"):
        got = socm_lib.socm_pairs(clouds, pairs, device="cpu", backend="torch", progress=False)
    assert socm_lib.get_config()["torch_svd"] == "auto"
    for key in ("d_mu", "d_sigma", "socm"):
        np.testing.assert_allclose(getattr(got, key), getattr(ref, key), rtol=1e-12, atol=1e-15, err_msg=key)


def test_solver_choice(monkeypatch):
    small, big = torch.zeros(2, 32, 32), torch.zeros(2, 33, 8)
    assert block_math._torch_solver(small) == block_math._torch_solver(big) == "svdvals"  # auto, on the CPU
    with socm_lib.config_context(torch_svd="jacobi"):
        assert block_math._torch_solver(small) == "jacobi"
    with pytest.raises(ValueError, match="torch_svd must be one of 'auto', 'jacobi', 'svdvals'"):
        with socm_lib.config_context(torch_svd="gesvdj"):
            pass

    class FakeCuda:  # what "auto" does on a GPU, decided from the batch's device and shape alone
        device = torch.device("cuda")

        def __init__(self, shape):
            self.shape = shape

    assert block_math._torch_solver(FakeCuda((5, 32, 32))) == "svdvals"
    assert block_math._torch_solver(FakeCuda((5, 33, 8))) == "jacobi"


def test_the_torch_path_never_loops_per_matrix_with_jacobi(monkeypatch):
    """Every block of the torch path is one call of the batched solver, whatever the matrices' size."""
    calls = []
    real = block_math.batched_svdvals

    def spy(G, *a, **kw):
        calls.append(G.shape)
        return real(G, *a, **kw)

    monkeypatch.setattr(block_math, "batched_svdvals", spy)
    monkeypatch.setattr(block_math.torch.linalg, "svdvals", lambda *a, **kw: pytest.fail("svdvals called"))
    rng = np.random.default_rng(8)
    clouds = [rng.normal(size=(n, 80)) for n in (50, 52, 51, 49, 53)]
    with socm_lib.config_context(torch_svd="jacobi"):
        socm_lib.socm_pairs(clouds, device="cpu", backend="torch", progress=False)
    # three bucket pairs ({48, 49, 50} and {51, 52} Helmert rows), so three blocks: one call each, ten pairs in all
    assert len(calls) == 3 and sum(c[0] for c in calls) == 10 and min(min(c[1:]) for c in calls) > 32
