r"""The untrained control measured against what its initialisation scheme predicts (notebook 5).

Draws the output of :mod:`socm_lib.control`: the concentration ratio :math:`c` and the cosine of two texts'
mean-pooled vectors :math:`\cos(\mu_1, \mu_2)` against the text length :math:`n`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..control import predicted_concentration, predicted_mean_cosine


def by_length(n, values, *, min_count: int = 3):
    """Lengths that occur at least ``min_count`` times and the mean of ``values`` at each of them."""
    n, values = np.asarray(n), np.asarray(values, dtype=np.float64)
    lengths, counts = np.unique(n, return_counts=True)
    keep = lengths[counts >= min_count]
    return keep, np.array([values[n == v].mean() for v in keep])


def equal_length_pairs(n, matrix):
    """For the pairs ``a < b`` of texts with the same length: that length and ``matrix[a, b]``."""
    n = np.asarray(n)
    a, b = np.triu_indices(len(n), k=1)
    same = n[a] == n[b]
    return n[a][same], np.asarray(matrix)[a[same], b[same]]


def plot_control_prediction(n, measured: dict, predicted: dict, *, min_count: int = 3, figsize=(12, 4.2)):
    r"""Measured against predicted :math:`c` (left) and :math:`\cos(\mu_1, \mu_2)` (right), against length :math:`n`.

    ``n``: tokens per text; ``measured``: ``{label: {"concentration": (T,), "cosine": (T, T)}}`` (e.g. one
    entry per layer, from :func:`socm_lib.control.measured_statistics`); ``predicted``: the same keys from
    :func:`socm_lib.control.predict_for_texts`. Points are means over the texts (left) or over the pairs of
    two texts of equal length (right) at each length seen at least ``min_count`` times. The solid black
    curves are the closed forms for distinct token ids (:math:`c = 2(n-1)/(n+2)`; :math:`k = 2` shared
    occurrences, [CLS] and [SEP]); the crosses use each text's actual token ids. Returns the Figure.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, constrained_layout=True)
    n = np.asarray(n)
    grid = np.arange(max(2, int(n.min())), int(n.max()) + 1)
    for k, (label, m) in enumerate(measured.items()):
        x, y = by_length(n, m["concentration"], min_count=min_count)
        left.plot(x, y, "o", markersize=4, color=f"C{k}", label=f"measured, {label}")
        x, y = by_length(*equal_length_pairs(n, m["cosine"]), min_count=min_count)
        right.plot(x, y, "o", markersize=4, color=f"C{k}", label=f"measured, {label}")
    x, y = by_length(n, predicted["concentration"], min_count=min_count)
    left.plot(x, y, "x", color="black", label="predicted from token ids")
    left.plot(grid, predicted_concentration(grid), "-", color="black", linewidth=1, label=r"$2(n-1)/(n+2)$")
    x, y = by_length(*equal_length_pairs(n, predicted["cosine"]), min_count=min_count)
    right.plot(x, y, "x", color="black", label="predicted from token ids")
    right.plot(grid, predicted_mean_cosine(grid, grid, 2), "-", color="black", linewidth=1,
               label=r"$(n^2+n+2)/(n^2+2n)$")
    left.set_ylabel(r"mean concentration ratio $c$")
    left.set_title("concentration ratio of a text")
    right.set_ylabel(r"mean $\cos(\mu_1, \mu_2)$")
    right.set_title("means of two texts of equal length")
    for ax in (left, right):
        ax.set_xlabel("tokens per text $n$ (special tokens included)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig
