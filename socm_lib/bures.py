r"""The d x d (teaching) route to the Bures--Wasserstein distance (book, Chapters 5 and 6).

.. math::

    \operatorname{BW}^2(\Sigma_1, \Sigma_2) = \operatorname{tr}\Sigma_1 + \operatorname{tr}\Sigma_2
        - 2 \operatorname{tr}\big(\Sigma_1^{1/2}\Sigma_2\Sigma_1^{1/2}\big)^{1/2}

computed with two symmetric eigendecompositions. It costs :math:`O(d^3)` and, on
the rank-deficient covariances of short texts, carries errors near
:math:`\sqrt{\varepsilon}` from square roots of eigenvalues that should be zero.
The library's engine (:mod:`socm_lib.pairs`) uses the exact low-rank form instead;
this module is the obviously-correct reference it is tested against.

Inputs must be covariance matrices up to round-off: a matrix whose asymmetry
:math:`\max|S - S^\top|` exceeds :data:`SYMMETRY_TOL` times :math:`\max|S|`, or whose smallest
eigenvalue is below :math:`-`:data:`PSD_TOL` times its largest absolute eigenvalue, is refused
with a ``ValueError``. Smaller defects are round-off: the matrix is symmetrised and negative
eigenvalues are clamped at 0 (a rank-deficient covariance built in float64 has eigenvalues near
:math:`\pm 10^{-16}` of its largest).
"""

from __future__ import annotations

import numpy as np
import torch

from .checks import as_real_tensor
from .stats import unit_scale

#: Largest relative asymmetry max|S - S^T| / max|S| accepted as round-off.
SYMMETRY_TOL = 1e-8
#: Largest relative negative eigenvalue -lambda_min / max|lambda| accepted as round-off (then clamped at 0).
PSD_TOL = 1e-8


def _as_covariance(S, name: str) -> torch.Tensor:
    """``S`` as a float64 CPU tensor: a real, finite, non-empty, square, symmetric PSD matrix (module docstring)."""
    t = as_real_tensor(S, name, "a real (d, d) covariance matrix as a numpy array or torch tensor")
    t = t.to(device="cpu", dtype=torch.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"{name} has shape {tuple(t.shape)}; a covariance matrix must be square (d, d).")
    if t.shape[0] == 0:
        raise ValueError(f"{name} is an empty (0, 0) matrix; a covariance matrix has at least one dimension.")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf.")
    scale = float(t.abs().max())
    asymmetry = float((t - t.T).abs().max())
    if asymmetry > SYMMETRY_TOL * scale:
        raise ValueError(f"{name} is not symmetric (max |S - S^T| = {asymmetry:.3g}, {asymmetry / scale:.3g} of "
                         f"max |S|, tolerance {SYMMETRY_TOL:g}); a covariance matrix is symmetric. Pass the "
                         "covariance itself, e.g. socm_lib.cloud_covariance(X).")
    t = (t + t.T) / 2  # symmetrise: round-off can make a covariance slightly asymmetric
    lam = torch.linalg.eigvalsh(t)
    if scale > 0 and float(lam[0]) < -PSD_TOL * float(lam.abs().max()):
        raise ValueError(f"{name} is not positive semi-definite: its smallest eigenvalue is {float(lam[0]):.3g}, "
                         f"below -{PSD_TOL:g} x its largest |eigenvalue| {float(lam.abs().max()):.3g}; a covariance "
                         "matrix has no negative eigenvalues beyond round-off.")
    return t


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
    # the fidelity is homogeneous of degree 1: computed on both matrices divided by one power of two (exact), so
    # that R S2 R neither overflows (entries of 1e200) nor underflows, then scaled back
    _, scale = unit_scale(torch.stack([S1, S2]))
    R = psd_sqrt(S1 / scale)
    M = R @ (S2 / scale) @ R
    return _finite(float(torch.linalg.eigvalsh((M + M.T) / 2).clamp(min=0).sqrt().sum() * scale), "the fidelity")


def _finite(value: float, what: str) -> float:
    """``value``, refused when it overflows float64."""
    if value == float("inf"):
        raise ValueError(f"{what} of these matrices exceeds the largest float64; rescale them first.")
    return value


def bures_wasserstein_sq(S1, S2) -> float:
    r"""Squared Bures--Wasserstein distance :math:`\operatorname{BW}^2(\Sigma_1,\Sigma_2)` (d x d route, PSD-safe).

    Symmetrises both inputs, clamps negative round-off eigenvalues to zero and the result at zero.
    """
    S1, S2 = _as_covariance(S1, "S1"), _as_covariance(S2, "S2")
    traces = _finite(float(torch.trace(S1) + torch.trace(S2)), "the sum of the traces")
    return max(traces - 2.0 * fidelity(S1, S2), 0.0)


def gaussian_w2_sq(mu1, S1, mu2, S2) -> float:
    r"""2-Wasserstein distance squared between :math:`\mathcal N(\mu_1,\Sigma_1)` and :math:`\mathcal N(\mu_2,\Sigma_2)`.

    .. math:: W_2^2 = \lVert\mu_1-\mu_2\rVert^2 + \operatorname{BW}^2(\Sigma_1,\Sigma_2)
    """
    S1, S2 = _as_covariance(S1, "S1"), _as_covariance(S2, "S2")
    m1, m2 = _as_mean(mu1, "mu1"), _as_mean(mu2, "mu2")
    if m1.shape != m2.shape:
        raise ValueError(f"mu1 has {m1.numel()} entries but mu2 has {m2.numel()}; both means must be (d,) vectors.")
    if S1.shape != S2.shape or m1.shape[0] != S1.shape[0]:
        raise ValueError(f"the means have {m1.numel()} entries but S1 is {tuple(S1.shape)} and S2 is "
                         f"{tuple(S2.shape)}; pass (d,) means with (d, d) covariances of the same d.")
    diff = m1 - m2
    _, scale = unit_scale(diff[None])
    return _finite(float(((diff / scale) ** 2).sum()) * float(scale) * float(scale) + bures_wasserstein_sq(S1, S2),
                   "W_2^2")


def _as_mean(mu, name: str) -> torch.Tensor:
    """A mean vector as float64: real, finite and one-dimensional."""
    if isinstance(mu, torch.Tensor):
        mu = mu.detach().cpu().numpy()
    try:
        arr = np.asarray(mu)
    except Exception as exc:  # ragged input
        raise TypeError(f"{name} must be a (d,) vector of real numbers: {exc}") from None
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} is complex; a mean vector must be real-valued.")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} has dtype {arr.dtype}; pass a (d,) vector of real numbers.")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} has shape {arr.shape}; a mean must be a non-empty 1-D vector (d,).")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf.")
    return torch.from_numpy(arr.astype(np.float64))
