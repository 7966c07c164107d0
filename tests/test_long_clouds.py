"""Long clouds (more tokens than dimensions) become the d rows of a QR factor: same numbers, small matrices."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import block_runner, bures, factors
from socm_lib.reference import lowrank_factor, lowrank_pair, lowrank_pairs


def long_cloud(rng, n: int, d: int, spread: float = 1.0) -> np.ndarray:
    """``n`` tokens around a shared direction, with an anisotropic spread."""
    return 2.0 + spread * rng.normal(size=(n, d)) @ np.diag(np.linspace(0.2, 1.5, d))


def test_shortened_factor_has_the_same_gram_matrix_and_d_rows():
    rng = np.random.default_rng(0)
    A = torch.from_numpy(rng.normal(size=(500, 12)))
    R = factors.shortened(A)
    assert R.shape == (12, 12)
    np.testing.assert_allclose((R.T @ R).numpy(), (A.T @ A).numpy(), rtol=1e-13, atol=1e-12)
    short = torch.from_numpy(rng.normal(size=(7, 12)))
    assert factors.shortened(short) is short  # n - 1 <= d: the Helmert rows stay as they are


def test_engine_factors_have_min_n_minus_1_d_rows():
    rng = np.random.default_rng(1)
    d = 10
    clouds = [long_cloud(rng, n, d) for n in (1, 4, 11, 12, 400)]
    prepared = block_runner.prepare_engine(clouds, normalize=True, device="cpu", dtype=torch.float64, backend="auto",
                                           bucket_tolerance=0.05)
    rows = {int(g): B.rows for B in prepared.buckets for g in B.members}
    assert [rows[k] for k in range(5)] == [1, 3, 10, 10, 10]  # one-token: one zero row; then min(n - 1, d)


@pytest.mark.parametrize("normalize", [True, False])
def test_socm_of_long_clouds_matches_both_references(normalize):
    rng = np.random.default_rng(2)
    d = 8
    X1, X2 = long_cloud(rng, 300, d), long_cloud(rng, 450, d, spread=0.7)
    got = socm_lib.socm(X1, X2, normalize=normalize)
    ref = lowrank_pair(X1, X2, normalize=normalize)  # one SVD of the 300 x 450 cross-Gram
    for key in ("d_mu", "d_sigma", "socm"):
        assert getattr(got, key) == pytest.approx(getattr(ref, key), rel=1e-12, abs=1e-15), key
    # the d x d Bures route shares nothing with either; full-rank covariances, so it is good to ~1e-10
    (A, _), (B, _) = lowrank_factor(X1, normalize), lowrank_factor(X2, normalize)
    assert got.d_sigma == pytest.approx(bures.bures_wasserstein_sq(A.T @ A, B.T @ B) / 4, rel=1e-10)


def test_socm_pairs_with_long_and_short_clouds_matches_the_reference():
    rng = np.random.default_rng(3)
    d = 12
    lengths = [1, 2, 5, 12, 13, 14, 40, 200, 350, 9, 30, 13]
    clouds = [long_cloud(rng, n, d, spread=0.5 + 0.1 * k) for k, n in enumerate(lengths)]
    ref = lowrank_pairs(clouds, socm_lib.all_pairs(len(clouds)), workers=1)
    for backend in ("numpy", "torch"):
        got = socm_lib.socm_pairs(clouds, device="cpu", backend=backend, progress=False)
        for key in ("d_mu", "d_sigma", "socm"):
            np.testing.assert_allclose(getattr(got, key), getattr(ref, key), rtol=1e-12, atol=1e-15,
                                       err_msg=f"{backend} {key}")
    cross = socm_lib.socm_cross(clouds[:4], clouds[6:9], progress=False)
    ref = lowrank_pairs(clouds[:4] + clouds[6:9], socm_lib.cross_pairs(4, 3), workers=1)
    np.testing.assert_allclose(cross.d_sigma, ref.d_sigma, rtol=1e-12, atol=1e-15)


def test_long_clouds_take_a_d_x_d_cross_gram(monkeypatch):
    """The SVD of two 2,000-token clouds at d = 6 sees a 6 x 6 matrix, not 1,999 x 1,999."""
    shapes = []
    real_svd = np.linalg.svd

    def spy(a, *args, **kw):
        shapes.append(np.shape(a)[-2:])
        return real_svd(a, *args, **kw)

    monkeypatch.setattr(np.linalg, "svd", spy)
    rng = np.random.default_rng(4)
    X1, X2 = long_cloud(rng, 2000, 6), long_cloud(rng, 2000, 6)
    socm_lib.socm(X1, X2)
    with socm_lib.config_context(svd_kernel="lapack"):  # the engine's matrices go to LAPACK, where the spy sees them
        socm_lib.socm_pairs([X1, X2], device="cpu", progress=False)
    assert shapes == [(6, 6), (6, 6)]
