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


def mean_norm(X: torch.Tensor, name: str) -> torch.Tensor:
    r""":math:`\lVert\mu(X)\rVert`, refusing a zero or non-finite mean (normalisation would divide by it).

    Computed as :math:`s\,\lVert\mu(X/s)\rVert` with :math:`s = \max_{j,k}|x_{jk}|`, so that clouds
    scaled by 1e200 or 1e-200 neither overflow nor underflow in the squares of the norm.
    """
    s = X.abs().max()
    norm = torch.linalg.vector_norm((X / s).mean(dim=0)) * s if bool(s > 0) else s
    if not bool(torch.isfinite(norm)):
        raise ValueError(
            f"{name} has a mean whose norm ({float(norm)}) is not a finite float64; rescale the cloud first."
        )
    if not bool(norm > 0):
        raise ValueError(
            f"{name} has a zero mean vector, so it cannot be normalised by its mean's norm; "
            "pass normalize=False or check that the tokens are not all zero / exactly cancelling."
        )
    return norm


def normalize_cloud(X) -> torch.Tensor:
    r"""Divide every token by :math:`\lVert\mu(X)\rVert`, so that the mean has unit norm (the paper's convention)."""
    X = as_cloud(X, "X")
    return X / mean_norm(X, "X")


def spread(X) -> float:
    r""":math:`S(X) = \frac1n\sum_j \lVert x_j-\mu\rVert^2 = \operatorname{tr}\Sigma(X)`."""
    X = as_cloud(X, "X")
    return float(((X - X.mean(dim=0)) ** 2).sum(dim=1).mean())


def concentration_ratio(X) -> float:
    r"""Concentration ratio :math:`c(X) = S(X)/\lVert\mu(X)\rVert^2`.

    Scale-free; after normalisation it equals :math:`\operatorname{tr}\Sigma`. Small values mean the
    tokens huddle around their mean (Chapter 8).
    """
    X = as_cloud(X, "X")
    return spread(X) / float(mean_norm(X, "X")) ** 2


def avg_intra_cosine(X) -> float:
    r"""Average of the ``n x n`` matrix of token cosines, self-pairs included.

    Computed without forming the matrix: with unit tokens :math:`\hat x_j`,
    :math:`\frac{1}{n^2}\sum_{j,k}\hat x_j^\top \hat x_k = \lVert \frac1n\sum_j \hat x_j\rVert^2`.
    If all tokens have equal norm, :math:`c = 1/\text{avgcos} - 1` (Chapter 8).
    """
    X = as_cloud(X, "X")
    norms = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    if not bool((norms > 0).all()):
        raise ValueError("X has a zero-norm token, whose cosine is undefined; drop that token first.")
    return float(torch.linalg.vector_norm((X / norms).mean(dim=0)) ** 2)
