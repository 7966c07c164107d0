r"""The cross-Gram matrix of a pair of texts and its singular values (book, Chapter 6, Theorem ``thm-ch06-nuclear``).

For two normalised token clouds with factors :math:`A = (X_1 - \mathbf 1\mu_1^\top)/\sqrt{n_1}` and
:math:`B = (X_2 - \mathbf 1\mu_2^\top)/\sqrt{n_2}`, the fidelity term of the Bures distance is the nuclear norm
:math:`\lVert AB^\top\rVert_* = \sum_k s_k` of the small :math:`n_1 \times n_2` cross-Gram matrix. The figure shows
that matrix as a heatmap and its singular values as bars, with their sum.
"""

from __future__ import annotations

import numpy as np

from ..reference import lowrank_factor


def cross_gram(X1, X2, normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The cross-Gram :math:`AB^\\top` (float64, ``(n1, n2)``) of two clouds and its singular values, largest first."""
    A, B = lowrank_factor(X1, normalize)[0], lowrank_factor(X2, normalize)[0]
    K = A @ B.T
    return K, np.linalg.svd(K, compute_uv=False)


def plot_cross_gram(X1, X2, tokens1=None, tokens2=None, *, normalize: bool = True, title: str | None = None):
    """Heatmap of :math:`AB^\\top` (left) and bar chart of its singular values with the nuclear norm (right).

    ``tokens1``/``tokens2`` (optional lists of strings, one per token) label the rows and columns.
    Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    K, s = cross_gram(X1, X2, normalize)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.6), constrained_layout=True,
                                 gridspec_kw={"width_ratios": [1.15, 1]})
    lim = float(np.abs(K).max()) or 1.0
    im = ax.imshow(K, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    fig.colorbar(im, ax=ax, shrink=0.85, label=r"entry of $AB^\top$")
    ax.set_xlabel(f"token of text 2 ($n_2 = {K.shape[1]}$)")
    ax.set_ylabel(f"token of text 1 ($n_1 = {K.shape[0]}$)")
    for labels, setter, n in ((tokens1, ax.set_yticks, K.shape[0]), (tokens2, ax.set_xticks, K.shape[1])):
        if labels is not None:
            if len(labels) != n:
                raise ValueError(f"{len(labels)} token labels for {n} tokens; pass one label per token.")
            setter(range(n), labels, fontsize=7, **({"rotation": 90} if setter == ax.set_xticks else {}))
    ax.set_title(r"cross-Gram matrix $AB^\top$")
    bx.bar(np.arange(1, len(s) + 1), s, color="C0")
    bx.set_yscale("log")
    bx.set_xlabel("k")
    bx.set_ylabel("singular value $s_k$")
    bx.set_title(rf"singular values: $\|AB^\top\|_* = \sum_k s_k = {s.sum():.4f}$")
    if title:
        fig.suptitle(title)
    return fig
