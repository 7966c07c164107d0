r"""The d x d (teaching) route to the Bures--Wasserstein distance (book, Chapters 5 and 6).

.. math::

    \operatorname{BW}^2(\Sigma_1, \Sigma_2) = \operatorname{tr}\Sigma_1 + \operatorname{tr}\Sigma_2
        - 2 \operatorname{tr}\big(\Sigma_1^{1/2}\Sigma_2\Sigma_1^{1/2}\big)^{1/2}

computed with two symmetric eigendecompositions. It costs :math:`O(d^3)` and, on
the rank-deficient covariances of short texts, carries errors near
:math:`\sqrt{\varepsilon}` from square roots of eigenvalues that should be zero.
The library's engine (:mod:`socm_lib.pairs`) uses the exact low-rank form instead;
this module is the obviously-correct reference it is tested against.
"""

from __future__ import annotations

import numpy as np
import torch


def _as_covariance(S, name: str) -> torch.Tensor:
    if not isinstance(S, (np.ndarray, torch.Tensor)):
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(S).__name__}.")
    t = torch.as_tensor(S).detach().to(device="cpu", dtype=torch.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"{name} has shape {tuple(t.shape)}; a covariance matrix must be square (d, d).")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf.")
    return (t + t.T) / 2  # symmetrise: round-off can make a covariance slightly asymmetric


def psd_sqrt(S) -> torch.Tensor:
    r"""Principal square root of a symmetric PSD matrix via :math:`S = V\Lambda V^\top`, eigenvalues clamped at 0."""
    S = _as_covariance(S, "S")
    lam, V = torch.linalg.eigh(S)
    return (V * lam.clamp(min=0).sqrt()) @ V.T


def fidelity(S1, S2) -> float:
    r""":math:`\operatorname{tr}(\Sigma_1^{1/2}\Sigma_2\Sigma_1^{1/2})^{1/2}` by the d x d route."""
    S1, S2 = _as_covariance(S1, "S1"), _as_covariance(S2, "S2")
    if S1.shape != S2.shape:
        raise ValueError(f"S1 is {tuple(S1.shape)} but S2 is {tuple(S2.shape)}; both must be (d, d).")
    R = psd_sqrt(S1)
    M = R @ S2 @ R
    return float(torch.linalg.eigvalsh((M + M.T) / 2).clamp(min=0).sqrt().sum())


def bures_wasserstein_sq(S1, S2) -> float:
    r"""Squared Bures--Wasserstein distance :math:`\operatorname{BW}^2(\Sigma_1,\Sigma_2)` (d x d route, PSD-safe).

    Symmetrises both inputs, clamps negative round-off eigenvalues to zero and the result at zero.
    """
    S1, S2 = _as_covariance(S1, "S1"), _as_covariance(S2, "S2")
    return max(float(torch.trace(S1) + torch.trace(S2)) - 2.0 * fidelity(S1, S2), 0.0)


def gaussian_w2_sq(mu1, S1, mu2, S2) -> float:
    r"""2-Wasserstein distance squared between :math:`\mathcal N(\mu_1,\Sigma_1)` and :math:`\mathcal N(\mu_2,\Sigma_2)`.

    .. math:: W_2^2 = \lVert\mu_1-\mu_2\rVert^2 + \operatorname{BW}^2(\Sigma_1,\Sigma_2)
    """
    m1 = torch.as_tensor(mu1, dtype=torch.float64).reshape(-1)
    m2 = torch.as_tensor(mu2, dtype=torch.float64).reshape(-1)
    if m1.shape != m2.shape:
        raise ValueError(f"mu1 has {m1.numel()} entries but mu2 has {m2.numel()}.")
    return float(((m1 - m2) ** 2).sum()) + bures_wasserstein_sq(S1, S2)
