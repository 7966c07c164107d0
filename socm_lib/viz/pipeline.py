r"""The pipeline of Chapter 1 as one schematic figure: text → tokens → cloud → :math:`(\mu, \Sigma)` → pooled vector.

:func:`pipeline` draws five panels from one real text and its token embeddings :math:`X \in \mathbb R^{n \times d}`:

1. the text as written;
2. the tokenizer's pieces, special tokens included: one row of :math:`X` each;
3. the token cloud, divided by the norm of its mean and drawn in the plane of
   :func:`~socm_lib.viz.theory.mean_spread_basis` (the direction of the mean and the main direction of spread);
4. the two statistics in the same plane: the mean :math:`\mu` and the 75% ellipse of the covariance
   :math:`\Sigma = \frac1n \sum_j (x_j - \mu)(x_j - \mu)^\top`, whose rank is at most :math:`n - 1`;
5. the pooled vector :math:`\mu / \lVert \mu \rVert`, all :math:`d` coordinates as a strip of colours: the only thing
   mean pooling passes on.

Everything drawn is computed from ``X`` by :mod:`socm_lib.stats`, so the figure and the numbers printed beside it
come from the same code.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np

from ..stats import cloud_covariance, concentration_ratio
from .plots import _COLORS, _as_array, _draw_cloud
from .theory import mean_spread_basis

_MAX_PIECES = 16  # pieces listed in panel 2; a longer text shows its first and last pieces around "…"


def _listed_pieces(tokens) -> list[str]:
    """The pieces to list in panel 2: all of them, or the first and last few around an ellipsis."""
    tokens = [str(t) for t in tokens]
    if len(tokens) <= _MAX_PIECES:
        return tokens
    half = _MAX_PIECES // 2
    return tokens[: half - 1] + ["…"] + tokens[-half:]


def pipeline(X, tokens, text: str, *, title: str | None = None, figsize=(15.0, 3.9)):
    r"""Five panels from ``text`` to its mean-pooled vector (see the module docstring); returns the Figure.

    ``X`` is the ``(n, d)`` token cloud of ``text`` (numpy array or torch tensor), ``tokens`` its ``n`` pieces.
    """
    A = _as_array(X, "X")
    tokens = list(tokens)
    if len(tokens) != len(A):
        raise ValueError(f"tokens has {len(tokens)} entries but X has {len(A)} rows; give one piece per token.")
    if not isinstance(text, str) or not text.strip():
        raise TypeError("text must be the non-empty string whose tokens X holds.")
    n, d = A.shape
    mean = A.mean(axis=0)
    Y = A / np.linalg.norm(mean)
    V = mean_spread_basis(Y)
    P, m = Y @ V.T, Y.mean(axis=0) @ V.T
    rank = int(np.linalg.matrix_rank(cloud_covariance(Y)))

    fig, axes = plt.subplots(1, 5, figsize=figsize, gridspec_kw={"width_ratios": (1.1, 0.8, 1.2, 1.2, 1.0)})
    ax_text, ax_tok, ax_cloud, ax_stats, ax_vec = axes
    for ax in (ax_text, ax_tok):
        ax.set_axis_off()

    ax_text.set_title("1. text", fontsize=10)
    ax_text.text(0.5, 0.5, "\n".join(textwrap.wrap(text, 24)), ha="center", va="center", fontsize=9,
                 bbox={"boxstyle": "round", "facecolor": "whitesmoke", "edgecolor": "gray"}, transform=ax_text.transAxes)

    ax_tok.set_title(f"2. tokens (n = {n})", fontsize=10)
    listed = _listed_pieces(tokens)
    for i, piece in enumerate(listed):
        ax_tok.text(0.5, 1 - (i + 0.5) / len(listed), piece, ha="center", va="center", fontsize=8,
                    family="monospace", transform=ax_tok.transAxes)

    ax_cloud.set_title(f"3. token cloud X ({n} × {d})", fontsize=10)
    ax_cloud.scatter(P[:, 0], P[:, 1], s=14, color=_COLORS[0])
    ax_cloud.plot([0], [0], marker="+", color="gray", markersize=9, linestyle="none")

    ax_stats.set_title(f"4. mean μ and covariance Σ (rank {rank})", fontsize=10)
    _draw_cloud(ax_stats, P, m, _COLORS[0], "tokens")
    ax_stats.plot([0], [0], marker="+", color="gray", markersize=9, linestyle="none")
    for ax in (ax_cloud, ax_stats):
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
    ax_stats.set_xlabel(f"concentration ratio c = {concentration_ratio(A):.2f}", fontsize=9)

    unit = mean / np.linalg.norm(mean)
    cols = int(np.ceil(np.sqrt(d)))
    grid = np.full(cols * int(np.ceil(d / cols)), np.nan)
    grid[:d] = unit
    ax_vec.imshow(grid.reshape(-1, cols), cmap="coolwarm", vmin=-np.abs(unit).max(), vmax=np.abs(unit).max())
    ax_vec.set_title(f"5. pooled vector μ/‖μ‖ ({d} numbers)", fontsize=10)
    ax_vec.set_xticks([])
    ax_vec.set_yticks([])

    fig.tight_layout(rect=(0, 0, 1, 0.9) if title else None)
    for left, right in zip(axes[:-1], axes[1:]):
        a, b = left.get_position(), right.get_position()
        fig.text((a.x1 + b.x0) / 2, (a.y0 + a.y1) / 2, "→", ha="center", va="center", fontsize=18)
    if title:
        fig.suptitle(title, fontsize=11, y=0.98)
    return fig
