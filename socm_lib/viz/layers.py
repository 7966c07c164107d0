r"""Figures of layer profiles and of pair distributions (notebooks 5 and 6), over :mod:`socm_lib.layers` results."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..checks import as_int


def plot_layer_profile(profiles: dict):
    """Three panels (mean concentration ratio, mean average intra-text cosine, mean SOCM) against the layer.

    ``profiles`` maps an encoder name to a :func:`layer_profile` DataFrame; each encoder is one line per
    panel. Returns the matplotlib Figure.
    """
    if not profiles:
        raise ValueError("profiles is empty: pass {encoder name: layer_profile(...) DataFrame}.")
    panels = [("concentration_ratio", "mean concentration ratio $c$"),
              ("avg_cosine", "mean avg. intra-text cosine"),
              ("mean_socm", "mean SOCM over pairs")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), constrained_layout=True)
    for name, df in profiles.items():
        df = df.sort_values("layer", kind="stable")
        for ax, (col, _) in zip(axes, panels):
            ax.plot(df["layer"], df[col], marker="o", label=name)
    for ax, (_, title) in zip(axes, panels):
        ax.set_title(title)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.grid(alpha=0.3)
        layers = sorted({int(v) for df in profiles.values() for v in df["layer"]})
        ax.set_xticks(layers)
    axes[0].legend()
    return fig


def plot_pair_distributions(results: dict, bins: int = 60):
    r"""Histograms of :math:`d_\mu`, :math:`d_\Sigma` and SOCM over pairs, one colour per run.

    ``results`` maps a run name (e.g. an encoder) to a :class:`socm_lib.PairResult`. The :math:`d_\Sigma`
    and SOCM panels mark the value 1 (above it only when the concentration ratio is large, Chapter 4).
    Returns the matplotlib Figure.
    """
    if not results:
        raise ValueError("results is empty: pass {name: PairResult}.")
    bins = as_int(bins, "bins", minimum=1)
    panels = [("d_mu", r"$d_\mu$"), ("d_sigma", r"$d_\Sigma$"), ("socm", "SOCM")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), constrained_layout=True)
    for ax, (attr, title) in zip(axes, panels):
        values = [np.asarray(getattr(r, attr)) for r in results.values()]
        hi = max(float(v.max()) for v in values)
        edges = np.linspace(0.0, max(hi, 1e-12) * 1.001, bins + 1)
        for name, v in zip(results, values):
            ax.hist(v, bins=edges, alpha=0.55, label=name, density=True)
        if attr != "d_mu" and hi > 1.0:
            ax.axvline(1.0, color="k", linestyle="--", linewidth=1)
        ax.set_title(title)
        ax.set_xlabel("value")
        ax.set_ylabel("density")
    axes[0].legend()
    return fig
