r"""Bures--Wasserstein distances of non-commuting 2 x 2 covariances known in closed form.

For 2 x 2 PSD matrices, :math:`\operatorname{tr}\sqrt M = \sqrt{\operatorname{tr}M + 2\sqrt{\det M}}`, so with
:math:`M = A^{1/2}BA^{1/2}` (trace :math:`\operatorname{tr}AB`, determinant :math:`\det A\det B`)

.. math:: \operatorname{BW}^2(A, B) = \operatorname{tr}A + \operatorname{tr}B - 2\sqrt{\operatorname{tr}AB + 2\sqrt{\det A\det B}},

which covers rank one (:math:`uu^\top, vv^\top`: :math:`|u|^2 + |v|^2 - 2|u\cdot v|`) and :math:`A = I`. Both the
d x d route and the low-rank engine are checked against it; the engine on token clouds built to have exactly these
covariances: tokens :math:`m \pm \sqrt k\,\ell_c` for the ``k`` columns :math:`\ell_c` of a factor :math:`L L^\top = \Sigma`.
"""

from __future__ import annotations

import numpy as np
import pytest

import socm_lib


def bw2_closed(A, B):
    det = max(np.linalg.det(A) * np.linalg.det(B), 0.0)  # a rank-one determinant is 0 up to round-off
    return np.trace(A) + np.trace(B) - 2 * np.sqrt(np.trace(A @ B) + 2 * np.sqrt(det))


def cloud_with_cov(mean, L):
    """2k tokens whose mean is ``mean`` and whose population covariance is exactly ``L @ L.T``."""
    k = L.shape[1]
    cols = np.sqrt(k) * L.T
    return np.concatenate([mean + cols, mean - cols])


def unit(angle):
    return np.array([np.cos(angle), np.sin(angle)])


def rot(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


B_GENERAL = rot(0.6) @ np.diag([0.9, 0.15]) @ rot(0.6).T  # not diagonal: does not commute with diag(...)
A_GENERAL = np.diag([0.4, 0.05])
CASES = {
    # name: (A, factor of A, B, factor of B, exact BW^2)
    "rank one u u^T vs v v^T": (
        np.outer([0.6, 0.2], [0.6, 0.2]), np.array([[0.6], [0.2]]),
        np.outer([-0.1, 0.5], [-0.1, 0.5]), np.array([[-0.1], [0.5]]),
        0.6**2 + 0.2**2 + 0.1**2 + 0.5**2 - 2 * abs(0.6 * -0.1 + 0.2 * 0.5)),
    "I vs B": (np.eye(2), np.eye(2), B_GENERAL, np.linalg.cholesky(B_GENERAL), None),
    "A vs B (both full rank)": (A_GENERAL, np.linalg.cholesky(A_GENERAL), B_GENERAL, np.linalg.cholesky(B_GENERAL),
                                None),
    "rank one vs full rank": (np.outer([0.3, 0.7], [0.3, 0.7]), np.array([[0.3], [0.7]]), B_GENERAL,
                              np.linalg.cholesky(B_GENERAL), None),
}


def exact(name):
    A, _, B, _, value = CASES[name]
    return bw2_closed(A, B) if value is None else value


def test_closed_forms_agree_with_each_other():
    # I vs B: tr B + 2 - 2 tr B^{1/2}, with B^{1/2} = (B + sqrt(det B) I) / sqrt(tr B + 2 sqrt(det B))
    B = B_GENERAL
    root = (B + np.sqrt(np.linalg.det(B)) * np.eye(2)) / np.sqrt(np.trace(B) + 2 * np.sqrt(np.linalg.det(B)))
    np.testing.assert_allclose(root @ root, B, atol=1e-15)
    assert exact("I vs B") == pytest.approx(np.trace(B) + 2 - 2 * np.trace(root), rel=1e-14)
    A, _, B, _, value = CASES["rank one u u^T vs v v^T"]
    assert bw2_closed(A, B) == pytest.approx(value, rel=1e-12, abs=1e-15)
    # apart from I (which commutes with everything), the covariances really do not commute
    for name, (A, _, B, _, _) in CASES.items():
        assert name == "I vs B" or np.abs(A @ B - B @ A).max() > 1e-3, name


@pytest.mark.parametrize("name", list(CASES))
def test_dxd_route(name):
    A, _, B, _, _ = CASES[name]
    full_rank = np.linalg.matrix_rank(A) == 2 and np.linalg.matrix_rank(B) == 2
    # full-rank square roots are exact; a rank-one one has a zero eigenvalue that comes out as round-off
    tol = 1e-12 if full_rank else 1e-7
    assert socm_lib.bures_wasserstein_sq(A, B) == pytest.approx(exact(name), rel=tol, abs=tol)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_low_rank_engine(name, backend):
    A, LA, B, LB, _ = CASES[name]
    m1, m2 = unit(0.3), unit(1.1)  # unit means: normalisation changes nothing
    X1, X2 = cloud_with_cov(m1, LA), cloud_with_cov(m2, LB)
    np.testing.assert_allclose(socm_lib.cloud_covariance(X1).numpy(), A, atol=1e-15)
    np.testing.assert_allclose(socm_lib.cloud_covariance(X2).numpy(), B, atol=1e-15)
    res = socm_lib.socm_pairs([X1, X2], [(0, 1)], device="cpu", backend=backend)
    d_sigma = exact(name) / 4
    d_mu = np.sum((m1 - m2) ** 2) / 4
    assert res.d_sigma[0] == pytest.approx(d_sigma, rel=1e-12)
    assert res.d_mu[0] == pytest.approx(d_mu, rel=1e-12)
    assert res.socm[0] == pytest.approx((1 - d_mu) * d_sigma, rel=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_embedded_in_higher_dimension(name):
    """The same 2-D clouds inside R^7 (rotated): the covariances become rank-deficient, the distance stays."""
    A, LA, B, LB, _ = CASES[name]
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(7, 7)))[0][:, :2]  # orthonormal columns
    X1 = cloud_with_cov(unit(0.3), LA) @ Q.T
    X2 = cloud_with_cov(unit(1.1), LB) @ Q.T
    res = socm_lib.socm_pairs([X1, X2], [(0, 1)], device="cpu")
    assert res.d_sigma[0] == pytest.approx(exact(name) / 4, rel=1e-12)
