r"""First- and second-order statistics of one token cloud (book, Chapters 2 and 7).

A text with token embeddings :math:`x_1, \dots, x_n \in \mathbb{R}^d` (rows of
``X``) has

* mean :math:`\mu(X) = \frac1n \sum_j x_j` (the mean-pooled embedding),
* covariance :math:`\Sigma(X) = \frac1n \sum_j (x_j-\mu)(x_j-\mu)^\top` (population, ``1/n``),
* spread :math:`S(X) = \frac1n \sum_j \lVert x_j-\mu \rVert^2 = \operatorname{tr}\Sigma(X)`,
* concentration ratio :math:`c(X) = S(X) / \lVert\mu(X)\rVert^2`.

Every function takes a numpy array or torch tensor of shape ``(n, d)`` and
computes in float64.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .checks import as_cloud


def cloud_mean(X) -> torch.Tensor:
    r""":math:`\mu(X) = \frac1n \sum_j x_j`, shape ``(d,)``."""
    return as_cloud(X, "X").mean(dim=0)


def cloud_covariance(X) -> torch.Tensor:
    r""":math:`\Sigma(X) = \frac1n \sum_j (x_j-\mu)(x_j-\mu)^\top`, shape ``(d, d)`` (population covariance)."""
    X = as_cloud(X, "X")
    C = X - X.mean(dim=0)
    return C.T @ C / X.shape[0]


#: A mean whose norm is at most this fraction of the tokens' RMS norm is refused by :func:`mean_norm`.
MEAN_TOLERANCE = 1e-6


def unit_powers(top) -> np.ndarray:
    r"""For each largest magnitude ``top`` (float64), the power of two :math:`s = 2^k` with ``top / s`` in
    :math:`[1, 2)`, or 1 where ``top`` is 0; read exactly from the exponent (``frexp``)."""
    top = np.asarray(top, dtype=np.float64)
    return np.where(top > 0, np.ldexp(1.0, np.frexp(top)[1] - 1), 1.0)


def unit_scale(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(X / s, s)`` with :math:`s = 2^k` the power of two that brings the largest entry into :math:`[1, 2)`
    (:func:`unit_powers`).

    Dividing by a power of two is exact, so the scaled cloud carries the same digits; its sums of squares
    can neither overflow (entries of 1e307) nor underflow (subnormal entries of 1e-310). Every statistic that
    is scale-free (the normalised mean and factors, the concentration ratio) is formed from ``X / s``.
    """
    top = float(X.abs().max())
    s = torch.tensor(float(unit_powers(top)), dtype=X.dtype)
    return (X / s, s) if top > 0 else (X, s)


def scaled_mean(Y: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(mu, ||mu||)``: :math:`\mu(Y)` of a cloud already brought to unit scale by :func:`unit_scale` and its norm,
    refused when the norm vanishes relative to the tokens' RMS norm :math:`(\frac1n\sum_j\lVert y_j\rVert^2)^{1/2}`.

    Every entry of ``Y`` is below 2 in magnitude, so the RMS norm is at most :math:`2\sqrt d` (its round-off, under
    :math:`(n + d)\,\varepsilon` relative, well inside the margin of :math:`10^{-6}` used here): a norm above
    :data:`MEAN_TOLERANCE` times that passes the test without computing the RMS norm, with the same verdict.
    """
    mu = Y.mean(dim=0)
    norm = torch.linalg.vector_norm(mu)
    value = float(norm)
    if not value > 0:
        raise ValueError(
            f"{name} has a zero mean vector, so it cannot be normalised by its mean's norm; "
            "pass normalize=False or check that the tokens are not all zero / exactly cancelling."
        )
    if not value > MEAN_TOLERANCE * 2.0 * (1.0 + 1e-6) * math.sqrt(Y.shape[1]):
        rms = float(torch.sqrt((Y * Y).sum(dim=1).mean()))
        if not value > MEAN_TOLERANCE * rms:
            raise ValueError(
                f"{name} has a mean whose norm is {value / rms:.1e} of its tokens' RMS norm (at most "
                f"{MEAN_TOLERANCE:g} is refused): the tokens cancel out (were they centred beforehand?), so the mean "
                "is round-off and dividing by its norm would blow the cloud up by an arbitrary factor. Pass the "
                "clouds as the encoder gives them, or normalize=False."
            )
    return mu, norm


def mean_norm(X: torch.Tensor, name: str) -> torch.Tensor:
    r""":math:`\lVert\mu(X)\rVert`, refusing a mean that vanishes (normalisation would divide by it) or overflows.

    Computed as :math:`s\,\lVert\mu(X/s)\rVert` with :func:`unit_scale`, so that clouds scaled by 1e200 or 1e-300
    neither overflow nor underflow in the squares of the norm. A mean whose norm is at most :data:`MEAN_TOLERANCE`
    times the tokens' RMS norm is refused with the reason (it is round-off, not a direction).
    """
    Y, s = unit_scale(X)
    norm = scaled_mean(Y, name)[1] * s
    if not bool(torch.isfinite(norm)):
        raise ValueError(
            f"{name} has a mean whose norm ({float(norm)}) is not a finite float64; rescale the cloud first."
        )
    return norm


def normalized_mean_and_scale(X: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(Y, 1 / ||mu(Y)||)`` with ``Y = X / s`` (:func:`unit_scale`): :math:`X/\lVert\mu(X)\rVert = Y/\lVert\mu(Y)\rVert`
    formed without ever squaring the entries of ``X`` itself."""
    Y, _ = unit_scale(X)
    return Y, 1.0 / scaled_mean(Y, name)[1]


def normalize_cloud(X) -> torch.Tensor:
    r"""Divide every token by :math:`\lVert\mu(X)\rVert`, so that the mean has unit norm (the paper's convention)."""
    Y, scale = normalized_mean_and_scale(as_cloud(X, "X"), "X")
    return Y * scale


def _unit_spread(Y: torch.Tensor) -> torch.Tensor:
    r""":math:`S(Y)` of a cloud already at unit scale (:func:`unit_scale`): its squares cannot overflow."""
    return ((Y - Y.mean(dim=0)) ** 2).sum(dim=1).mean()


def spread(X) -> float:
    r""":math:`S(X) = \frac1n\sum_j \lVert x_j-\mu\rVert^2 = \operatorname{tr}\Sigma(X)`."""
    Y, s = unit_scale(as_cloud(X, "X"))
    out = float(_unit_spread(Y)) * float(s) * float(s)  # a product: float ** 2 would raise OverflowError
    if out == float("inf"):
        raise ValueError("X has a spread larger than the largest float64; rescale the cloud (or use "
                         "concentration_ratio, which is scale-free).")
    return out


def concentration_ratio(X) -> float:
    r"""Concentration ratio :math:`c(X) = S(X)/\lVert\mu(X)\rVert^2`.

    Scale-free; after normalisation it equals :math:`\operatorname{tr}\Sigma`. Small values mean the
    tokens huddle around their mean (Chapter 8).
    """
    Y, scale = normalized_mean_and_scale(as_cloud(X, "X"), "X")
    return float(_unit_spread(Y) * scale**2)


def avg_intra_cosine(X) -> float:
    r"""Average of the ``n x n`` matrix of token cosines, self-pairs included.

    Computed without forming the matrix: with unit tokens :math:`\hat x_j`,
    :math:`\frac{1}{n^2}\sum_{j,k}\hat x_j^\top \hat x_k = \lVert \frac1n\sum_j \hat x_j\rVert^2`.
    If all tokens have equal norm, :math:`c = 1/\text{avgcos} - 1` (Chapter 8).
    """
    X = unit_scale(as_cloud(X, "X"))[0]  # cosines are scale-free
    norms = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    if not bool((norms > 0).all()):
        raise ValueError("X has a zero-norm token, whose cosine is undefined; drop that token first.")
    return float(torch.linalg.vector_norm((X / norms).mean(dim=0)) ** 2)
