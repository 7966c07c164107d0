r"""The per-pair shift of the paper's regularised route (book, chapter "The paper's own route").

For every pair the route's :math:`d_\Sigma` is low by half its excess fidelity, bounded below by
:math:`(d - r)\sqrt\varepsilon/2 + \sum_k(\sqrt{s_k^2 + \varepsilon} - s_k)/2` (Proposition ``prop-ch07-regulariser``).
The figure plots, pair by pair, the measured shift (exact minus route) against the leading term
:math:`(d - r)\sqrt\varepsilon/2`, one colour per set of clouds, with the diagonal on which the lower bound's
leading term would put them.
"""

from __future__ import annotations

import numpy as np


def plot_route_shift(sets: dict, *, title: str | None = None):
    """Scatter of the measured shift against the leading term, one series per set.

    ``sets`` maps a label to ``(leading, shift)``: two equal-length arrays, ``leading`` the per-pair
    :math:`(d - r)\\sqrt\\varepsilon/2` and ``shift`` the per-pair exact minus route :math:`d_\\Sigma` (positive when
    the route is low). Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    if not sets:
        raise ValueError("sets is empty: pass at least one label -> (leading, shift) pair of arrays.")
    fig, ax = plt.subplots(figsize=(6.4, 5.2), constrained_layout=True)
    hi = 0.0
    for label, (leading, shift) in sets.items():
        leading, shift = np.asarray(leading, float), np.asarray(shift, float)
        if leading.shape != shift.shape or leading.ndim != 1:
            raise ValueError(f"{label!r}: leading and shift must be 1-d arrays of one length, "
                             f"got shapes {leading.shape} and {shift.shape}.")
        ax.scatter(leading, shift, s=10, alpha=0.6, label=f"{label} ({len(shift)} pairs)")
        hi = max(hi, float(leading.max()), float(shift.max()))
    hi *= 1.08
    ax.plot([0, hi], [0, hi], color="0.3", lw=1, ls="--", label=r"shift $= (d - r)\sqrt{\varepsilon}/2$")
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel(r"leading term $(d - r)\sqrt{\varepsilon}/2$")
    ax.set_ylabel(r"exact $d_\Sigma$ minus the route's $d_\Sigma$")
    ax.legend(fontsize=8, loc="upper left")
    if title:
        ax.set_title(title)
    return fig
