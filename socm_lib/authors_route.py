r"""The paper's own route to :math:`d_\mu`, :math:`d_\Sigma` and SOCM, as a named reference (book, chapter "The paper's own route").

:func:`paper_route` re-implements the :math:`d \times d` computation of the code released by
Hara et al. (2026) (github.com/tohoku-nlp/socm-text-embedding, MIT licence), step by step. It is a
faithful re-implementation written for this book, not the authors' code. Per text, in float32:

1. divide every token by :math:`\lVert\mu(X)\rVert + 10^{-12}`;
2. mean :math:`m` and population covariance :math:`\Sigma = \frac1n\sum_j (x_j - m)(x_j - m)^\top`.

Per pair, in batches of 64 pairs:

3. :math:`R = \operatorname{sqrt}(\Sigma_1)` and the fidelity :math:`F = \operatorname{tr}\operatorname{sqrt}(R\,\Sigma_2\,R)`,
   where :math:`\operatorname{sqrt}(S)` symmetrises :math:`S` to :math:`(S + S^\top)/2`, adds
   :math:`\varepsilon I` with :math:`\varepsilon = 10^{-9}`, and takes the square root by
   ``torch.linalg.eigh`` with the eigenvalues clamped at 0;
4. :math:`\operatorname{BW}^2 = \max(\operatorname{tr}\Sigma_1 + \operatorname{tr}\Sigma_2 - 2F,\ 0)`,
   :math:`d_\Sigma = \operatorname{BW}^2/4`, :math:`d_\mu = \lVert m_1 - m_2\rVert^2/4`,
   :math:`\mathrm{SOCM} = (1 - d_\mu)\,d_\Sigma`.

Known bias. Token clouds have rank :math:`r_i \le n_i - 1 \ll d`. With :math:`\varepsilon I` added,
:math:`R^2 = \Sigma_1 + \varepsilon I` exactly, so :math:`R\,\Sigma_2 R` has the nonzero eigenvalues of the
:math:`n_2 \times n_2` matrix :math:`B R^2 B^\top = (AB^\top)^\top(AB^\top) + \varepsilon BB^\top`. Since
:math:`\varepsilon BB^\top \succeq 0`, Weyl's inequality bounds the excess fidelity of the route from below by the
count of the regulariser's directions (book, Proposition ``prop-ch06-regulariser``):

.. math::

    F_{\text{route}} - \lVert AB^\top\rVert_* \;\ge\; (d - r)\sqrt\varepsilon
        + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon} - s_k\big),

with :math:`s_1, \dots, s_r` the nonzero singular values of the cross-Gram and :math:`r = \operatorname{rank}(AB^\top)`
(:math:`\min(r_1, r_2)` in general position). Where :math:`r_2 > r_1` the :math:`r_2 - r_1` extra directions return
:math:`\sqrt{\varepsilon(1 + \lambda_m(\Sigma_2))}` rather than :math:`\sqrt\varepsilon`, so the bound is not the first-order
value: it is low by up to about :math:`\sqrt\varepsilon\operatorname{tr}\Sigma_2/2`, and the excess depends on the order of
the pair. :func:`regulariser_excess` returns the exact excess and both bounds. The route's :math:`d_\Sigma` is
:math:`\max(\operatorname{BW}^2 - 2(F_{\text{route}} - F),\ 0)/4`: low by half the excess, whose leading term
:math:`(d - r)\sqrt\varepsilon/2` is about :math:`0.0057` at :math:`d = 384` and :math:`0.0118` at :math:`d = 768` for
25-token texts (:math:`r = 24`), and exactly 0 for every pair whose exact :math:`d_\Sigma` is at most its shift. In
float32 the eigenvalues that should equal :math:`\varepsilon` come back with round-off of order
:math:`10^{-7}\lVert R\Sigma_2R\rVert`, which can exceed :math:`\varepsilon`, so the float32 route adds noise on top of the
bias (the book's chapter on the paper's route and notebook 10 measure both).
``dtype=torch.float64`` runs every step in float64, which isolates the regulariser's bias.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np
import torch
from tqdm import tqdm

from .checks import as_clouds, as_device, as_dtype, as_int, as_number, as_pair_set, as_progress, show_progress
from .pairs import PairResult, condensed_pairs, require_memory
from .reference import lowrank_factor
from .stats import mean_norm

#: The regulariser the released code adds to every matrix before its square root.
REGULARISER = 1e-9
#: Pairs per batch in the released code.
BATCH = 64
#: Above this many pairs, ``progress=None`` shows a progress bar (the route is O(d^3) a pair, slower than the engine).
ROUTE_PROGRESS_PAIRS = 2_000


def _statistics(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalised mean and population covariance of one cloud, in ``dtype`` (steps 1 and 2)."""
    x = x.to(dtype)
    x = x / (torch.linalg.vector_norm(x.mean(dim=0)) + 1e-12)
    m = x.mean(dim=0)
    c = x - m
    return m, c.T @ c / x.shape[0]


def _regularised_eigenvalues(S: torch.Tensor, eps: float, vectors: bool):
    """Eigenvalues (clamped at 0) of ``(S + S^T)/2 + eps I`` for a batch ``S`` ``(..., d, d)``, and the eigenvectors."""
    S = (S + S.mT) / 2 + eps * torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
    if vectors:
        lam, V = torch.linalg.eigh(S)
        return lam.clamp(min=0), V
    return torch.linalg.eigvalsh(S).clamp(min=0), None


def paper_route(
    clouds,
    pairs=None,
    *,
    dtype: torch.dtype = torch.float32,
    eps: float = REGULARISER,
    batch_size: int = BATCH,
    device=None,
    progress: bool | None = None,
) -> PairResult:
    r""":math:`d_\mu`, :math:`d_\Sigma` and SOCM by the paper's :math:`d \times d` route (released code, float32, :math:`10^{-9} I`).

    Parameters
    ----------
    clouds
        List of ``(n_i, d)`` numpy arrays or torch tensors, one per text.
    pairs
        ``None`` for every pair ``i < j`` (lexicographic order, ``scipy.spatial.distance.pdist``'s condensed order, as
        :func:`socm_lib.socm_pairs`), or ``(P, 2)`` indices.
    dtype
        ``torch.float32`` (the released code) or ``torch.float64`` (to study the regulariser's bias alone);
        ``numpy.float32`` or ``"float32"`` are the same (:func:`socm_lib.checks.as_dtype`).
    eps
        The regulariser added before each square root (:math:`10^{-9}` in the released code).
    batch_size
        Pairs per batched eigendecomposition (64 in the released code; the results do not depend on it).
    device
        ``"cpu"``, ``"cuda"`` or ``None`` for the GPU when one is present.
    progress
        Show a progress bar on stderr; ``None`` shows one for more than 2,000 pairs.

    Within a batch, :math:`\Sigma_i^{1/2}` is computed once for each distinct first text ``i`` (the same
    arithmetic as once per pair). Returns a :class:`~socm_lib.PairResult` in float64 numpy. The route is
    :math:`O(d^3)` per pair and biased low on rank-deficient clouds (module docstring); use it to measure
    what the paper's numbers carry, and :func:`socm_lib.socm_pairs` for the exact values.
    """
    dtype, device = as_dtype(dtype), as_device(device)
    batch_size, eps = as_int(batch_size, "batch_size", minimum=1), as_number(eps, "eps")
    progress = as_progress(progress)
    X = as_clouds(clouds)
    for k, x in enumerate(X):
        mean_norm(x, f"clouds[{k}]")  # a zero mean would be divided by the released code's 1e-12
    listed, count = as_pair_set(pairs, len(X))
    d, itemsize = X[0].shape[1], torch.empty((), dtype=dtype).element_size()
    # every cloud's d x d covariance, a batch's square roots and products, and the results (i, j and three floats)
    need = len(X) * (d * d + d) * itemsize + 6 * batch_size * d * d * itemsize + count * 5 * 8
    require_memory(need, f"paper_route on {len(X):,} clouds of d = {d} ({d} x {d} covariances) and "
                         f"{count:,} pairs", "Use socm_lib.socm_pairs (exact, O(n^2 d) memory per pair), "
                         "or fewer clouds.")
    stats = [_statistics(x.to(device), dtype) for x in X]
    out, ij = np.empty((count, 3)), np.empty((count, 2), dtype=np.int64)
    show = show_progress(progress, count, ROUTE_PROGRESS_PAIRS)
    with tqdm(total=count, disable=not show, file=sys.stderr, unit="pair", desc="paper route") as bar:
        for s in range(0, count, batch_size):  # all pairs are formed batch by batch, never all at once
            span = np.arange(s, min(s + batch_size, count))
            chunk = listed[span] if listed is not None else condensed_pairs(span, len(X))
            ij[span] = chunk
            first, slot = np.unique(chunk[:, 0], return_inverse=True)
            lam, V = _regularised_eigenvalues(torch.stack([stats[i][1] for i in first]), eps, vectors=True)
            R = ((V * lam.sqrt()[:, None, :]) @ V.mT)[torch.from_numpy(slot.reshape(-1)).to(device)]
            S1 = torch.stack([stats[i][1] for i in chunk[:, 0]])
            S2 = torch.stack([stats[j][1] for j in chunk[:, 1]])
            mu, _ = _regularised_eigenvalues(R @ S2 @ R, eps, vectors=False)
            fidelity = mu.sqrt().sum(dim=-1)
            traces = S1.diagonal(dim1=-2, dim2=-1).sum(-1) + S2.diagonal(dim1=-2, dim2=-1).sum(-1)
            d_sigma = (traces - 2 * fidelity).clamp(min=0) / 4
            m1 = torch.stack([stats[i][0] for i in chunk[:, 0]])
            m2 = torch.stack([stats[j][0] for j in chunk[:, 1]])
            d_mu = ((m1 - m2) ** 2).sum(dim=-1) / 4
            block = torch.stack([d_mu, d_sigma, (1 - d_mu) * d_sigma], dim=1)
            out[s : s + len(chunk)] = block.to("cpu", torch.float64).numpy()
            bar.update(len(chunk))
    return PairResult(i=ij[:, 0].copy(), j=ij[:, 1].copy(), d_mu=out[:, 0], d_sigma=out[:, 1], socm=out[:, 2])


class RegulariserExcess(NamedTuple):
    r"""How much the regularised route overstates the fidelity of one ordered pair, in exact arithmetic.

    ``lower <= exact <= upper`` bound :math:`F_{\text{route}} - F`, where :math:`F = \lVert AB^\top\rVert_*`
    (book, Proposition ``prop-ch06-regulariser``). The route's :math:`d_\Sigma` is
    :math:`\max(\operatorname{BW}^2 - 2\,\texttt{exact},\ 0)/4`: low by ``exact / 2`` unless the exact
    :math:`\operatorname{BW}^2` is at most ``2 * exact`` (the exact :math:`d_\Sigma` at most ``exact / 2``), where it is 0.
    """

    lower: float
    exact: float
    upper: float


def _root_step(s: np.ndarray, t) -> np.ndarray:
    r""":math:`\sqrt{s^2 + t} - s` for :math:`s, t \ge 0`, without cancellation."""
    return t / (np.sqrt(s**2 + t) + s)


def regulariser_excess(x1, x2, eps: float = REGULARISER) -> RegulariserExcess:
    r"""The regularised route's excess fidelity :math:`F_{\text{route}} - \lVert AB^\top\rVert_*` for the ordered pair (x1, x2).

    ``x1`` and ``x2`` are token clouds ``(n_i, d)``, normalised and factored as the book does
    (:math:`\Sigma_1 = A^\top A`, :math:`\Sigma_2 = B^\top B`). With :math:`R^2 = \Sigma_1 + \varepsilon I` exactly,
    :math:`R\,\Sigma_2 R` has the nonzero eigenvalues of the :math:`n_2 \times n_2` matrix
    :math:`H = B R^2 B^\top = G^\top G + \varepsilon B B^\top`, with the cross-Gram matrix :math:`G = AB^\top`, so

    .. math::

        F_{\text{route}} = \operatorname{tr}(R\,\Sigma_2 R + \varepsilon I)^{1/2}
            = (d - n_2)\sqrt\varepsilon + \operatorname{tr}(H + \varepsilon I_{n_2})^{1/2}   \quad(\texttt{exact}).

    With :math:`s_1 \ge \dots \ge s_r > 0` the singular values of :math:`G`, :math:`r_2 = \operatorname{rank} B` and
    :math:`\lambda_1 \ge \lambda_2 \ge \dots` the eigenvalues of :math:`\Sigma_2`, Weyl's inequality
    (:math:`0 \preceq \varepsilon BB^\top \preceq \varepsilon\lambda_1 I`) gives

    .. math::

        \texttt{lower} = (d - r)\sqrt\varepsilon + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon} - s_k\big), \qquad
        \texttt{upper} = (d - r_2)\sqrt\varepsilon + \sum_{m=1}^{r_2 - r}\sqrt{\varepsilon(1 + \lambda_m)}
            + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon(1 + \lambda_1)} - s_k\big).

    ``exact`` depends on the order of the pair (through :math:`BB^\top`); ``lower`` does not. All in float64, with
    numerical ranks from :func:`numpy.linalg.matrix_rank`.
    """
    A, B = lowrank_factor(x1)[0], lowrank_factor(x2)[0]
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"The two clouds must have the same dimension d, got {A.shape[1]} and {B.shape[1]}.")
    d, n2 = A.shape[1], B.shape[0]
    G = A @ B.T  # the cross-Gram matrix
    s = np.linalg.svd(G, compute_uv=False)
    r, r2 = np.linalg.matrix_rank(G), np.linalg.matrix_rank(B)
    s = s[:r]
    lam = np.linalg.eigvalsh(B @ B.T)[::-1].clip(min=0)  # the nonzero eigenvalues of Sigma_2 = B^T B, and zeros
    root = np.sqrt(eps)
    fidelity = s.sum()
    theta = np.linalg.eigvalsh(G.T @ G + eps * (B @ B.T))  # the eigenvalues of H
    exact = (d - n2) * root + np.sqrt(theta.clip(min=0) + eps).sum() - fidelity
    lower = (d - r) * root + _root_step(s, eps).sum()
    upper = ((d - r2) * root + np.sqrt(eps * (1 + lam[: r2 - r])).sum()
             + _root_step(s, eps * (1 + lam[0])).sum())
    return RegulariserExcess(float(lower), float(exact), float(upper))
