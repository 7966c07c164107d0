r"""Figures and tables for the book's notebooks (matplotlib; every plotting function returns its Figure).

All functions are deterministic: no random choice is made except the subsample of
:func:`scatter_dmu_dsigma` and :func:`dsigma_bound`, which use a fixed seed. They accept an existing ``ax`` where that
makes sense, so several plots can share one figure; the Figure returned is then ``ax.figure``.

* :func:`socm_surface` -- the function :math:`\mathrm{SOCM} = (1-d_\mu)\,d_\Sigma` over the
  :math:`(d_\mu, d_\Sigma)` plane (Chapters 3 and 4), with measured points on top;
* :func:`clouds_2d` -- two token clouds in :math:`\mathbb R^2` with their means and 75% covariance ellipses;
* :func:`pair_projection` -- the construction of Figure 1 of Hara et al. (2026) for two real d-dimensional clouds;
* :func:`scatter_dmu_dsigma` -- :math:`d_\mu` against :math:`d_\Sigma` for many pairs, coloured by SOCM or by
  the density of points; :func:`scatter_dmu_dsigma_grid` puts one such panel per encoder side by side;
* :func:`extreme_pairs_table` -- the most and least collapsed pairs as a table;
* :func:`dsigma_bound` -- :math:`d_\Sigma` against its upper bound :math:`(c_1 + c_2)/4` for many pairs.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Ellipse
from scipy.stats import chi2

from ..checks import as_int
from ..pairs import socm
from ..results import PairResult
from ..stats import cloud_covariance
from .display import fixed

#: Probability mass of the drawn region of a 2-D Gaussian (its Mahalanobis radius is the square root of the
#: chi-square(2) quantile at this level: :func:`covariance_ellipse`).
ELLIPSE_LEVEL = 0.75

_COLORS = ("tab:blue", "tab:orange")


def _as_array(X, name: str) -> np.ndarray:
    """A float64 numpy ``(n, d)`` array from a numpy array or torch tensor."""
    if hasattr(X, "detach"):
        X = X.detach().cpu().numpy()
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] == 0:
        raise ValueError(f"{name} has shape {A.shape}; a token cloud must be a non-empty (n_tokens, d) array.")
    if not np.isfinite(A).all():
        raise ValueError(f"{name} contains NaN or inf.")
    return A


def _new_axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax


def covariance_ellipse(mean, cov, *, level: float = ELLIPSE_LEVEL, **kwargs) -> Ellipse:
    r"""The ellipse :math:`(x-m)^\top\Sigma^{-1}(x-m) \le r^2`, with :math:`r^2` the chi-square(2) ``level`` quantile.

    For a Gaussian :math:`\mathcal N(m, \Sigma)` in the plane it holds probability ``level``. A singular
    ``cov`` gives a flat ellipse (a segment). ``kwargs`` go to :class:`matplotlib.patches.Ellipse`.
    """
    cov = np.asarray(cov, dtype=np.float64)
    if cov.shape != (2, 2):
        raise ValueError(f"cov has shape {cov.shape}; an ellipse needs a (2, 2) covariance.")
    lam, V = np.linalg.eigh((cov + cov.T) / 2)
    lam = np.clip(lam, 0.0, None)
    r = float(np.sqrt(chi2.ppf(level, 2)))
    angle = float(np.degrees(np.arctan2(V[1, 1], V[0, 1])))  # direction of the larger axis
    return Ellipse(
        xy=tuple(np.asarray(mean, dtype=np.float64)),
        width=2 * r * np.sqrt(lam[1]),
        height=2 * r * np.sqrt(lam[0]),
        angle=angle,
        **kwargs,
    )


def _draw_cloud(ax, P, mean, color, label, marker="o"):
    """Tokens, their mean (a large X) and the 75% ellipse of their covariance, in one colour."""
    ax.scatter(P[:, 0], P[:, 1], s=22, color=color, alpha=0.75, marker=marker, label=f"{label}: tokens")
    ax.add_patch(covariance_ellipse(mean, cloud_covariance(P).numpy(), facecolor=color, alpha=0.15, edgecolor=color, lw=1.5))
    ax.plot([mean[0]], [mean[1]], marker="X", markersize=12, color=color, markeredgecolor="black",
            linestyle="none", label=f"{label}: mean")


# ---------------------------------------------------------------------------------------------------------------
# The SOCM surface
# ---------------------------------------------------------------------------------------------------------------


def socm_surface(ax=None, points=None, *, d_sigma_max: float | None = None, levels: int = 11,
                 figsize=(5.6, 4.4)):
    r"""Contours of :math:`\mathrm{SOCM}=(1-d_\mu)d_\Sigma` for :math:`d_\mu \in [0,1]`, :math:`d_\Sigma \in [0, b]`.

    ``points`` overlays measured pairs: a :class:`~socm_lib.results.PairResult`, or a mapping
    ``{label: (d_mu, d_sigma)}`` whose values are numbers or arrays. ``d_sigma_max`` (``b``) defaults to
    1, or to the largest :math:`d_\Sigma` among the points (times 1.05) when that is larger.
    Returns the Figure (main axes plus a colour bar labelled "SOCM").
    """
    fig, ax = _new_axes(ax, figsize)
    series = []
    if isinstance(points, PairResult):
        series = [("pairs", np.asarray(points.d_mu), np.asarray(points.d_sigma))]
    elif isinstance(points, Mapping):
        series = [(str(k), np.atleast_1d(np.asarray(v[0], float)), np.atleast_1d(np.asarray(v[1], float)))
                  for k, v in points.items()]
    elif points is not None:
        raise TypeError("points must be a PairResult or a mapping {label: (d_mu, d_sigma)}.")
    top = 1.0
    if d_sigma_max is not None:
        top = float(d_sigma_max)
    elif series:
        top = max(1.0, 1.05 * max(float(np.max(s[2])) for s in series))
    a, b = np.meshgrid(np.linspace(0, 1, 201), np.linspace(0, top, 201))
    z = (1 - a) * b
    filled = ax.contourf(a, b, z, levels=levels, cmap="viridis")
    lines = ax.contour(a, b, z, levels=filled.levels, colors="white", linewidths=0.6)
    ax.clabel(lines, lines.levels[1::2], fmt="%.2f", fontsize=7)
    fig.colorbar(filled, ax=ax, label="SOCM")
    markers = "os^Dvp*h"
    for k, (label, dm, ds) in enumerate(series):
        ax.scatter(dm, ds, s=40 if len(dm) < 50 else 6, marker=markers[k % len(markers)], color="white",
                   edgecolor="black", linewidths=0.8, label=label, zorder=3, clip_on=False)
    if series:
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    ax.set_xlabel(r"$d_\mu$ (mean distance)")
    ax.set_ylabel(r"$d_\Sigma$ (covariance distance)")
    ax.set_title(r"SOCM $= (1 - d_\mu)\, d_\Sigma$")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, top)
    return fig


# ---------------------------------------------------------------------------------------------------------------
# Clouds in the plane
# ---------------------------------------------------------------------------------------------------------------


def clouds_2d(X1, X2, ax=None, *, labels=("text 1", "text 2"), normalize: bool = False, title: str | None = None,
              legend: bool = True, figsize=(4.8, 4.4)):
    r"""Two token clouds in :math:`\mathbb R^2`: tokens, means (large X) and 75% covariance ellipses.

    With ``normalize=True`` each cloud is first divided by the norm of its mean, as SOCM sees it. The
    origin is marked with a small cross. Returns the Figure (``ax.figure`` when ``ax`` is given).
    """
    P1, P2 = _as_array(X1, "X1"), _as_array(X2, "X2")
    if P1.shape[1] != 2 or P2.shape[1] != 2:
        raise ValueError(f"clouds_2d draws clouds in R^2; got d = {P1.shape[1]} and {P2.shape[1]} "
                         "(use pair_projection for d > 2).")
    if normalize:
        P1 = P1 / np.linalg.norm(P1.mean(axis=0))
        P2 = P2 / np.linalg.norm(P2.mean(axis=0))
    fig, ax = _new_axes(ax, figsize)
    for P, color, label in zip((P1, P2), _COLORS, labels):
        _draw_cloud(ax, P, P.mean(axis=0), color, label)
    ax.plot([0], [0], marker="+", color="gray", markersize=10, linestyle="none")
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize=7, loc="best")
    return fig


# ---------------------------------------------------------------------------------------------------------------
# Figure 1 of the paper: a pair of real clouds, projected on a joint 2-D basis
# ---------------------------------------------------------------------------------------------------------------


def _fix_signs(V: np.ndarray) -> np.ndarray:
    """Flip each row so that its entry of largest absolute value is positive (SVD signs are arbitrary)."""
    idx = np.argmax(np.abs(V), axis=1)
    s = np.sign(V[np.arange(V.shape[0]), idx])
    s[s == 0] = 1.0
    return V * s[:, None]


def project_pair(X1, X2) -> dict[str, np.ndarray]:
    r"""The 2-D coordinates used by :func:`pair_projection`.

    Both clouds are divided by the norms of their means; the rows of both normalised clouds and their two
    means are stacked into one matrix :math:`M`, and the top two right singular vectors of :math:`M`
    (uncentred SVD, signs fixed by :func:`_fix_signs`) form the basis ``V`` (shape ``(2, d)``). Returns
    ``basis``, ``tokens1``, ``tokens2`` (projected tokens), ``mean1``, ``mean2`` (projected means).
    """
    A1, A2 = _as_array(X1, "X1"), _as_array(X2, "X2")
    if A1.shape[1] != A2.shape[1]:
        raise ValueError(f"X1 has d = {A1.shape[1]} but X2 has d = {A2.shape[1]}; use the same encoder and layer.")
    Y1 = A1 / np.linalg.norm(A1.mean(axis=0))
    Y2 = A2 / np.linalg.norm(A2.mean(axis=0))
    m1, m2 = Y1.mean(axis=0), Y2.mean(axis=0)
    M = np.vstack([Y1, Y2, m1[None, :], m2[None, :]])
    _, _, Vt = np.linalg.svd(M, full_matrices=False)
    V = _fix_signs(Vt[:2])
    return {"basis": V, "tokens1": Y1 @ V.T, "tokens2": Y2 @ V.T, "mean1": m1 @ V.T, "mean2": m2 @ V.T}


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def pair_projection(X1, X2, ax=None, *, labels=("text 1", "text 2"), max_label_chars: int = 48,
                    title: str | None = None, figsize=(5.6, 5.0)):
    r"""Figure 1 of Hara et al. (2026) for two token clouds of any dimension ``d``.

    Tokens and means are drawn in the joint basis of :func:`project_pair`, each text with its mean (a
    large X) and the 75% ellipse of its projected covariance (:func:`covariance_ellipse`). The title gives SOCM,
    :math:`d_\mu` and :math:`d_\Sigma` of the full d-dimensional clouds (from :func:`socm_lib.socm`) at 3 decimals,
    preceded by ``title`` if given. Returns the Figure.
    """
    proj = project_pair(X1, X2)
    r = socm(_as_array(X1, "X1"), _as_array(X2, "X2"))
    fig, ax = _new_axes(ax, figsize)
    for P, m, color, label, marker in zip(
        (proj["tokens1"], proj["tokens2"]), (proj["mean1"], proj["mean2"]), _COLORS, labels, ("o", "s")
    ):
        _draw_cloud(ax, P, m, color, _short(str(label), max_label_chars), marker=marker)
    ax.set_aspect("equal", adjustable="datalim")  # both directions on one scale, so shapes are not distorted
    ax.set_xlabel("singular direction 1")
    ax.set_ylabel("singular direction 2")
    head = f"{title}\n" if title else ""
    ax.set_title(f"{head}SOCM = {r.socm:.3f}  ($d_\\mu$ = {r.d_mu:.3f}, $d_\\Sigma$ = {r.d_sigma:.3f})", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    return fig


# ---------------------------------------------------------------------------------------------------------------
# Many pairs
# ---------------------------------------------------------------------------------------------------------------


def subsample_index(n: int, max_points: int, seed: int = 0) -> np.ndarray:
    """Indices of at most ``max_points`` of ``n`` items, drawn without replacement with ``seed``, sorted."""
    max_points = as_int(max_points, "max_points", minimum=1)
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


def point_density(x, y, bins: int = 60) -> np.ndarray:
    """For each point, the number of points in its cell of a ``bins`` x ``bins`` 2-D histogram over their range."""
    bins = as_int(bins, "bins", minimum=1)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    counts, xe, ye = np.histogram2d(x, y, bins=bins)
    ix = np.clip(np.searchsorted(xe, x, side="right") - 1, 0, bins - 1)
    iy = np.clip(np.searchsorted(ye, y, side="right") - 1, 0, bins - 1)
    return counts[ix, iy]


def _scatter_panel(fig, cell, result: PairResult, *, title, max_points, seed, bins, density):
    """One scatter with its two marginal histograms and colour bar, drawn in the subplot spec ``cell``."""
    from matplotlib.colors import LogNorm

    if not isinstance(result, PairResult):
        raise TypeError(f"result must be a PairResult (from socm_pairs), got {type(result).__name__}.")
    if len(result) == 0:
        raise ValueError("result holds no pairs.")
    bins = as_int(bins, "bins", minimum=1)
    idx = subsample_index(len(result), max_points, seed)
    dm, ds, s = (np.asarray(v)[idx] for v in (result.d_mu, result.d_sigma, result.socm))
    grid = cell.subgridspec(2, 3, width_ratios=(4, 1, 0.25), height_ratios=(1, 4), wspace=0.08, hspace=0.08)
    ax = fig.add_subplot(grid[1, 0])
    top = fig.add_subplot(grid[0, 0], sharex=ax)
    right = fig.add_subplot(grid[1, 1], sharey=ax)
    cax = fig.add_subplot(grid[1, 2])
    size = 4 if len(idx) > 2000 else 12
    if density:
        dens = point_density(dm, ds, bins)
        order = np.argsort(dens, kind="stable")  # densest points drawn last, on top
        pts = ax.scatter(dm[order], ds[order], c=dens[order], s=size, cmap="magma", norm=LogNorm(vmin=1),
                         linewidths=0, rasterized=True)
        label = f"pairs per cell ({bins}x{bins} grid)"
    else:
        pts = ax.scatter(dm, ds, c=s, s=size, cmap="viridis", alpha=0.8, linewidths=0, rasterized=True)
        label = "SOCM"
    if ds.max() > 1:
        ax.axhline(1.0, color="gray", linestyle="--", linewidth=0.8)
    top.hist(dm, bins=bins, color="tab:blue", alpha=0.8)
    right.hist(ds, bins=bins, orientation="horizontal", color="tab:orange", alpha=0.8)
    top.tick_params(labelbottom=False)
    right.tick_params(labelleft=False)
    top.set_ylabel("pairs")
    right.set_xlabel("pairs")
    fig.colorbar(pts, cax=cax, label=label)
    ax.set_xlabel(r"$d_\mu$")
    ax.set_ylabel(r"$d_\Sigma$")
    shown = f"{len(idx):,} pairs" if len(idx) == len(result) else (
        f"random subsample of {len(idx):,} of {len(result):,} pairs (seed {seed})")
    return f"{title}\n{shown}" if title else shown, top


def scatter_dmu_dsigma(result: PairResult, *, title: str | None = None, max_points: int = 20_000, seed: int = 0,
                       bins: int = 40, density: bool = False, figsize=(6.2, 5.6)):
    r""":math:`d_\mu` against :math:`d_\Sigma` for each pair, with both marginal histograms.

    Points are coloured by SOCM, or with ``density=True`` by how many pairs fall in the same cell of a
    ``bins`` x ``bins`` grid (log colour scale, densest points on top), which shows where points overlap.
    With more than ``max_points`` pairs a random subsample of ``max_points`` (``seed``) is drawn and the
    figure says so; histograms and densities use the same points. The dashed line marks :math:`d_\Sigma = 1`.
    Returns the Figure (scatter, two histograms and a colour bar).
    """
    fig = plt.figure(figsize=figsize)
    text, _ = _scatter_panel(fig, fig.add_gridspec(1, 1)[0], result, title=title, max_points=max_points,
                             seed=seed, bins=bins, density=density)
    fig.suptitle(text, fontsize=10)
    return fig


def scatter_dmu_dsigma_grid(results: Mapping, *, max_points: int = 20_000, seed: int = 0, bins: int = 40,
                            density: bool = True, panel_size=(6.2, 5.6)):
    r"""One :func:`scatter_dmu_dsigma` panel per run, side by side (e.g. one per encoder, for a chapter figure).

    ``results`` maps a label (encoder name) to a :class:`~socm_lib.results.PairResult`; each panel is titled
    by its label and the number of pairs drawn. ``density`` defaults to ``True`` here.
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping {label: PairResult}.")
    fig = plt.figure(figsize=(panel_size[0] * len(results), panel_size[1]))
    cells = fig.add_gridspec(1, len(results), wspace=0.3)
    for k, (label, result) in enumerate(results.items()):
        text, top = _scatter_panel(fig, cells[k], result, title=str(label), max_points=max_points, seed=seed,
                                   bins=bins, density=density)
        top.set_title(text, fontsize=10)
    return fig


def extreme_pairs_table(result: PairResult, texts, k: int = 5, *, max_chars: int = 80, digits: int = 4):
    """The ``k`` pairs with the highest SOCM and the ``k`` with the lowest, as a DataFrame for display.

    Columns: ``collapse`` ("most" / "least"), ``i``, ``j``, ``text i``, ``text j`` (cut to ``max_chars``
    characters), ``d_mu``, ``d_sigma``, ``SOCM`` (strings at ``digits`` decimals, via :func:`socm_lib.fixed`).
    Ties keep the pairs' order in ``result`` (stable sort).
    """
    import pandas as pd

    if not isinstance(result, PairResult):
        raise TypeError(f"result must be a PairResult (from socm_pairs), got {type(result).__name__}.")
    texts = list(texts)
    if len(result) and max(int(np.max(result.i)), int(np.max(result.j))) >= len(texts):
        raise ValueError(f"result refers to text indices beyond the {len(texts)} texts given.")
    k = max(1, min(int(k), len(result)))
    order = np.argsort(-np.asarray(result.socm), kind="stable")
    low = np.argsort(np.asarray(result.socm), kind="stable")[:k]
    rows = [("most", p) for p in order[:k]] + [("least", p) for p in low]
    df = pd.DataFrame(
        {
            # text columns as object dtype: socm_lib.fixed checks dtypes with numpy, which rejects pandas' str dtype
            "collapse": pd.Series([w for w, _ in rows], dtype=object),
            "i": [int(result.i[p]) for _, p in rows],
            "j": [int(result.j[p]) for _, p in rows],
            "text i": pd.Series([_short(texts[result.i[p]], max_chars) for _, p in rows], dtype=object),
            "text j": pd.Series([_short(texts[result.j[p]], max_chars) for _, p in rows], dtype=object),
            "d_mu": [float(result.d_mu[p]) for _, p in rows],
            "d_sigma": [float(result.d_sigma[p]) for _, p in rows],
            "SOCM": [float(result.socm[p]) for _, p in rows],
        }
    )
    return fixed(df, digits)


def dsigma_bound(result: PairResult, concentration, *, title: str | None = None, max_points: int = 20_000,
                 seed: int = 0, figsize=(5.6, 5.0)):
    r""":math:`d_\Sigma` of each pair against its upper bound :math:`(c_i + c_j)/4` (Chapter 4, range theorem).

    ``concentration`` holds each text's concentration ratio :math:`c` (indexed like the clouds of
    ``result``). Points lie on or below the diagonal; the dashed lines mark :math:`d_\Sigma = 1` and
    :math:`(c_i + c_j)/4 = 1`, so pairs to the right of the vertical line are not covered by the guarantee
    :math:`d_\Sigma \le 1`. Points are coloured by SOCM; a subsample is drawn as in :func:`scatter_dmu_dsigma`.
    """
    if not isinstance(result, PairResult):
        raise TypeError(f"result must be a PairResult (from socm_pairs), got {type(result).__name__}.")
    c = np.asarray(concentration, dtype=np.float64)
    if c.ndim != 1 or len(c) <= max(int(np.max(result.i)), int(np.max(result.j))):
        raise ValueError("concentration must hold one ratio per text of result (a 1-D array indexed like the clouds).")
    idx = subsample_index(len(result), max_points, seed)
    bound = (c[result.i[idx]] + c[result.j[idx]]) / 4
    ds, s = np.asarray(result.d_sigma)[idx], np.asarray(result.socm)[idx]
    fig, ax = plt.subplots(figsize=figsize)
    pts = ax.scatter(bound, ds, c=s, s=4 if len(idx) > 2000 else 12, cmap="viridis", alpha=0.8, linewidths=0,
                     rasterized=True)
    top = float(max(bound.max(), ds.max(), 1.0)) * 1.05
    ax.plot([0, top], [0, top], color="black", linewidth=1, label=r"$d_\Sigma = (c_i + c_j)/4$")
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=0.8)
    ax.axvline(1.0, color="gray", linestyle=":", linewidth=0.8)
    fig.colorbar(pts, ax=ax, label="SOCM")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(r"upper bound $(c_i + c_j)/4$")
    ax.set_ylabel(r"$d_\Sigma$")
    ax.legend(loc="upper left", fontsize=8)
    shown = f"{len(idx):,} pairs" if len(idx) == len(result) else (
        f"random subsample of {len(idx):,} of {len(result):,} pairs (seed {seed})")
    ax.set_title(f"{title}\n{shown}" if title else shown, fontsize=10)
    return fig
