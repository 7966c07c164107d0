r"""Figures for the theory chapters (Chapters 1 to 5), drawn by the notebooks nb01--nb03 and glued into the book.

Each function returns its Figure and draws only what it computes through :mod:`socm_lib`, so the picture and
the numbers printed beside it come from the same code:

* :func:`token_cloud` -- one text's token cloud in the plane spanned by its mean and its main direction of
  spread, with the mean-pooled point marked (Chapter 1: what mean pooling keeps and what it forgets);
* :func:`pair_on_surface` -- two clouds in :math:`\mathbb R^2` after normalisation, beside the SOCM surface
  :math:`(1-d_\mu)\,d_\Sigma` with the pair's point (Chapters 3 and 4);
* :func:`w2_decomposition` -- the Gaussian fits of two normalised clouds in :math:`\mathbb R^2` and the split
  :math:`W_2^2 = \lVert\mu_1-\mu_2\rVert^2 + \mathrm{BW}^2(\Sigma_1,\Sigma_2)` as a stacked bar, beside the
  cost of the explicit coupling :math:`Y = \mu_2 + T(X - \mu_1)` (Chapter 5);
* :func:`coupling_and_procrustes` -- two small centred clouds joined by their optimal coupling and by their
  Procrustes matching, whose costs are :math:`W_2^2` of the clouds and :math:`\mathrm{BW}^2` (Chapters 5 and 6).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..bures import bures_wasserstein_sq
from ..pairs import socm
from ..stats import cloud_covariance, cloud_mean, concentration_ratio, normalize_cloud
from .plots import _COLORS, _as_array, _draw_cloud, _new_axes, clouds_2d, covariance_ellipse, socm_surface


def _planar(X, name: str) -> np.ndarray:
    """A float64 ``(n, 2)`` array, or ValueError saying that the figure is drawn in the plane."""
    A = _as_array(X, name)
    if A.shape[1] != 2:
        raise ValueError(f"{name} has d = {A.shape[1]}; this figure draws clouds in R^2 (d = 2).")
    return A


def mean_spread_basis(X) -> np.ndarray:
    r"""An orthonormal basis ``(2, d)`` of the plane spanned by the mean and the main direction of spread.

    Row 1 is :math:`m/\lVert m\rVert`; row 2 is the top right singular vector of the deviations
    :math:`x_j - m` after removing their component along :math:`m` (sign fixed so that its entry of
    largest absolute value is positive). ``X`` needs a nonzero mean and at least one deviation that is not
    parallel to the mean.
    """
    A = _as_array(X, "X")
    m = A.mean(axis=0)
    norm = np.linalg.norm(m)
    if norm == 0:
        raise ValueError("X has mean 0; the mean direction is undefined.")
    u = m / norm
    D = A - m
    D = D - np.outer(D @ u, u)
    _, s, Vt = np.linalg.svd(D, full_matrices=False)
    if s[0] <= 1e-12 * max(1.0, float(np.abs(A).max())):
        raise ValueError("X has no spread outside the direction of its mean; a second direction is undefined.")
    v = Vt[0] * np.sign(Vt[0][np.argmax(np.abs(Vt[0]))])
    return np.vstack([u, v])


def token_cloud(X, tokens=None, ax=None, *, normalize: bool = True, title: str | None = None,
                figsize=(6.4, 4.8)):
    r"""One text's tokens and its mean-pooled point in the plane of :func:`mean_spread_basis`.

    With ``normalize=True`` the cloud is divided by the norm of its mean first, as SOCM sees it, so the mean
    lies at :math:`(1, 0)`. Each token is labelled with its string from ``tokens`` (same length as ``X``), the
    75% ellipse of the projected covariance is drawn, and the title reports :math:`n`, :math:`d` and the
    concentration ratio :math:`c = S/\lVert m\rVert^2` of the full cloud. The mean is the one point that mean
    pooling keeps; the tokens around it are what it forgets.
    """
    A = _as_array(X, "X")
    if tokens is not None and len(tokens) != len(A):
        raise ValueError(f"tokens has {len(tokens)} entries but X has {len(A)} rows; give one string per token.")
    Y = A / np.linalg.norm(A.mean(axis=0)) if normalize else A
    V = mean_spread_basis(Y)
    P, m = Y @ V.T, Y.mean(axis=0) @ V.T
    fig, ax = _new_axes(ax, figsize)
    _draw_cloud(ax, P, m, _COLORS[0], "text")
    if tokens is not None:
        for (x, y), t in zip(P, tokens):
            ax.annotate(str(t), (x, y), xytext=(3, 3), textcoords="offset points", fontsize=7, color="dimgray")
    ax.plot([0], [0], marker="+", color="gray", markersize=10, linestyle="none", label="origin")
    ax.annotate("", xy=tuple(m), xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": "black", "lw": 1})
    c = concentration_ratio(A)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("direction of the mean" + (" (normalised: mean at 1)" if normalize else ""))
    ax.set_ylabel("main direction of spread")
    head = f"{title}\n" if title else ""
    ax.set_title(f"{head}n = {len(A)} tokens, d = {A.shape[1]}, concentration ratio c = {c:.3f}", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    return fig


def pair_on_surface(X1, X2, *, labels=("text 1", "text 2"), point_label: str = "this pair",
                    title: str | None = None, figsize=(11.0, 4.6)):
    r"""Two planar clouds after normalisation (left) and their :math:`(d_\mu, d_\Sigma)` on the SOCM surface (right).

    The right panel is :func:`~socm_lib.viz.plots.socm_surface`; when :math:`d_\Sigma` exceeds 1 the surface
    extends beyond the unit square and the contour :math:`\mathrm{SOCM} = 1` is drawn in red, so a point
    beyond it is visibly above 1. The figure title gives the pair's values from :func:`socm_lib.socm`.
    """
    A1, A2 = _planar(X1, "X1"), _planar(X2, "X2")
    r = socm(A1, A2)
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, gridspec_kw={"width_ratios": (1, 1.25)})
    clouds_2d(A1, A2, ax=left, labels=labels, normalize=True, title="after normalisation")
    socm_surface(ax=right, points={point_label: (r.d_mu, r.d_sigma)})
    if r.d_sigma > 1:
        a, b = np.meshgrid(np.linspace(0, 1, 201), np.linspace(0, right.get_ylim()[1], 201))
        right.contour(a, b, (1 - a) * b, levels=[1.0], colors="red", linewidths=1.5)
        right.plot([], [], color="red", label="SOCM = 1")
        right.legend(loc="upper right", fontsize=8, framealpha=0.9)
    head = f"{title}: " if title else ""
    fig.suptitle(f"{head}$d_\\mu$ = {r.d_mu:.4f}, $d_\\Sigma$ = {r.d_sigma:.4f}, SOCM = {r.socm:.4f}", fontsize=11)
    fig.tight_layout()
    return fig


def w2_decomposition(X1, X2, *, labels=("text 1", "text 2"), title: str | None = None, figsize=(11.0, 4.6)):
    r"""The 2-Wasserstein distance of the Gaussian fits of two normalised planar clouds, split in two parts.

    Left: the fits :math:`\mathcal N(\mu_i, \Sigma_i)` as 75% ellipses, the mean shift :math:`\mu_1 \to \mu_2` as
    an arrow, and fit 1 translated to :math:`\mu_2` (dashed): the transport first moves the mean, then reshapes
    the dashed ellipse into the second one. Right: a stacked bar of :math:`\lVert\mu_1-\mu_2\rVert^2` (mean part)
    and :math:`\mathrm{BW}^2(\Sigma_1, \Sigma_2)` (covariance part) beside a bar of the cost of one explicit coupling,
    :math:`X \sim \mathcal N(\mu_1, \Sigma_1)` and :math:`Y = \mu_2 + T(X - \mu_1)` with the linear map
    :math:`T` of the book's ``eq-ch05-map`` (:func:`linear_map_coupling`), with their values. The two bars are
    computed independently: they agree because that coupling is optimal. Needs an invertible :math:`\Sigma_1`.
    """
    N1, N2 = normalize_cloud(_planar(X1, "X1")), normalize_cloud(_planar(X2, "X2"))
    mu1, mu2 = cloud_mean(N1), cloud_mean(N2)
    S1, S2 = cloud_covariance(N1), cloud_covariance(N2)
    mean_part = float(((mu1 - mu2) ** 2).sum())
    covariance_part = float(bures_wasserstein_sq(S1, S2))
    w2, _ = linear_map_coupling(mu1.numpy(), S1.numpy(), mu2.numpy(), S2.numpy())
    m1, m2, C1, C2 = (t.numpy() for t in (mu1, mu2, S1, S2))
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, gridspec_kw={"width_ratios": (1.2, 1)})
    for m, C, color, label in ((m1, C1, _COLORS[0], labels[0]), (m2, C2, _COLORS[1], labels[1])):
        left.add_patch(covariance_ellipse(m, C, facecolor=color, alpha=0.2, edgecolor=color, lw=1.5,
                                          label=f"{label}: Gaussian fit"))
        left.plot([m[0]], [m[1]], marker="X", markersize=11, color=color, markeredgecolor="black", linestyle="none")
    left.add_patch(covariance_ellipse(m2, C1, facecolor="none", edgecolor=_COLORS[0], lw=1.2, linestyle="--",
                                      label=f"{labels[0]}'s fit moved to the other mean"))
    left.annotate("", xy=tuple(m2), xytext=tuple(m1),
                  arrowprops={"arrowstyle": "->", "color": "black", "lw": 1.5})
    left.plot([0], [0], marker="+", color="gray", markersize=10, linestyle="none")
    left.set_aspect("equal", adjustable="datalim")
    left.autoscale_view()
    left.set_xlabel("coordinate 1")
    left.set_ylabel("coordinate 2")
    left.set_title("Gaussian fits of the normalised clouds;\narrow: the mean shift", fontsize=10)
    left.legend(fontsize=7, loc="best")
    right.bar([0], [mean_part], color="tab:gray", label=r"mean part $\|\mu_1-\mu_2\|^2$")
    right.bar([0], [covariance_part], bottom=[mean_part], color="tab:purple", label=r"covariance part $\mathrm{BW}^2$")
    right.bar([1], [w2], color="tab:green", label=r"cost of the coupling $Y = \mu_2 + T(X - \mu_1)$")
    for y, text in ((mean_part / 2, f"{mean_part:.4f}"), (mean_part + covariance_part / 2, f"{covariance_part:.4f}")):
        right.text(0, y, text, ha="center", va="center", color="white", fontsize=9)
    right.text(1, w2 / 2, f"{w2:.4f}", ha="center", va="center", color="white", fontsize=9)
    right.set_xticks([0, 1], [r"$\|\mu_1-\mu_2\|^2 + \mathrm{BW}^2$", r"$\mathbb{E}\,\|X - Y\|^2$"])
    right.set_ylim(0, 1.3 * max(w2, mean_part + covariance_part))
    right.legend(fontsize=8, loc="upper center", ncol=1)
    right.set_title(f"{mean_part:.4f} + {covariance_part:.4f} = {mean_part + covariance_part:.4f};  coupling cost {w2:.4f}",
                    fontsize=10)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def linear_map_coupling(mu1, S1, mu2, S2) -> tuple[float, np.ndarray]:
    r"""Cost of the coupling :math:`Y = \mu_2 + T(X - \mu_1)`, :math:`X \sim \mathcal N(\mu_1, \Sigma_1)`, and its map :math:`T`.

    :math:`T = \Sigma_1^{-1/2} (\Sigma_1^{1/2} \Sigma_2 \Sigma_1^{1/2})^{1/2} \Sigma_1^{-1/2}` (the book's
    ``eq-ch05-map``) satisfies :math:`T \Sigma_1 T = \Sigma_2`, so :math:`Y \sim \mathcal N(\mu_2, \Sigma_2)`, and the
    coupling's cost is, exactly,

    .. math:: \mathbb E \lVert X - Y \rVert^2 = \lVert \mu_1 - \mu_2 \rVert^2
              + \operatorname{tr}\big((I - T)\,\Sigma_1 (I - T)^\top\big),

    computed in float64 from :math:`T`, without the Bures formula. Returns ``(cost, T)``. Raises ValueError when
    :math:`\Sigma_1` is singular (the map needs :math:`\Sigma_1^{-1/2}`; the book's attainment proof covers that case
    with another coupling).
    """
    m1, m2 = np.asarray(mu1, dtype=float), np.asarray(mu2, dtype=float)
    S1, S2 = np.asarray(S1, dtype=float), np.asarray(S2, dtype=float)
    lam, V = np.linalg.eigh((S1 + S1.T) / 2)
    if lam[0] <= 1e-12 * max(lam[-1], 1e-300):
        raise ValueError(f"Sigma_1 is singular (smallest eigenvalue {lam[0]:.3g}): the linear map T needs an "
                         "invertible Sigma_1; use clouds with at least d + 1 tokens in general position.")
    root = (V * np.sqrt(lam)) @ V.T
    inv_root = (V / np.sqrt(lam)) @ V.T
    mu, W = np.linalg.eigh(root @ S2 @ root)
    middle = (W * np.sqrt(mu.clip(min=0))) @ W.T
    T = inv_root @ middle @ inv_root
    D = np.eye(len(m1)) - T
    return float(((m1 - m2) ** 2).sum() + np.trace(D @ S1 @ D.T)), T


def _matching_panel(ax, P, Q, title: str, labels):
    """Points ``P`` and ``Q`` (rows) with a line from ``P[j]`` to ``Q[j]``; returns the mean squared length."""
    for p, q in zip(P, Q):
        ax.plot([p[0], q[0]], [p[1], q[1]], color="0.45", lw=1.2, zorder=1)
    ax.scatter(P[:, 0], P[:, 1], s=45, color=_COLORS[0], edgecolor="black", zorder=2, label=labels[0])
    ax.scatter(Q[:, 0], Q[:, 1], s=45, color=_COLORS[1], edgecolor="black", zorder=2, label=labels[1])
    cost = float(((P - Q) ** 2).sum(axis=1).mean())
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(f"{title}\nmean squared length {cost:.4f}", fontsize=10)
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    ax.legend(fontsize=7, loc="best")
    return cost


def coupling_and_procrustes(X1, X2, *, labels=("text 1", "text 2"), title: str | None = None,
                            figsize=(11.0, 4.8)):
    r"""Two equal-size planar clouds, centred: their optimal matching and their Procrustes matching (Chapters 5, 6).

    Left: the centred tokens :math:`x_j - m_1` and :math:`y_{\sigma(j)} - m_2` (raw means :math:`m_1, m_2`) joined by
    transport lines, for the permutation :math:`\sigma` of least cost (:func:`scipy.optimize.linear_sum_assignment`);
    by Birkhoff's theorem the mean squared length is :math:`W_2^2` of the two centred empirical clouds. Right: the
    centred tokens of text 1 against the rows of :math:`\Omega(X_2 - \mathbf 1 m_2^\top)` (text 2 centred, mixed by
    :math:`\Omega`), with :math:`\Omega \in O(n)` the Procrustes solution on token positions (Corollary
    ``cor-ch06-procrustes``); the mean squared length is :math:`\mathrm{BW}^2(\Sigma_1, \Sigma_2)`, at most the left
    panel's. No normalisation. Returns the Figure and
    the two costs ``(w2_sq, bw_sq)``.
    """
    from scipy.optimize import linear_sum_assignment

    X, Y = _planar(X1, "X1").astype(float), _planar(X2, "X2").astype(float)
    if len(X) != len(Y):
        raise ValueError(f"The two clouds need the same number of tokens, got {len(X)} and {len(Y)}.")
    Cx, Cy = X - X.mean(axis=0), Y - Y.mean(axis=0)
    rows, cols = linear_sum_assignment(((Cx[:, None, :] - Cy[None, :, :]) ** 2).sum(axis=-1))
    U, _, Vt = np.linalg.svd(Cy @ Cx.T)  # Omega maximising tr(Omega Cy Cx^T) is V U^T
    Omega = Vt.T @ U.T
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize)
    w2_sq = _matching_panel(left, Cx[rows], Cy[cols], "optimal coupling of the centred clouds (a permutation)",
                            labels)
    bw_sq = _matching_panel(right, Cx, Omega @ Cy,
                            f"Procrustes matching: {labels[1]} centred, mixed by $\\Omega$",
                            (labels[0], f"{labels[1]}, mixed by $\\Omega$"))
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig, (w2_sq, bw_sq)
