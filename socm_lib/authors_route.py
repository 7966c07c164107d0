r"""The paper's own route to :math:`d_\mu`, :math:`d_\Sigma` and SOCM, as a named reference (book, Chapter 6).

:func:`paper_route` re-implements the :math:`d \times d` computation of the code released by
Hara et al. (2026), step by step as the book's brief records it (BRIEF §1.2). It is a faithful
re-implementation written for this book, not the authors' code. Per text, in float32:

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
:math:`R = (\Sigma_1 + \varepsilon I)^{1/2}` is invertible and :math:`R\,\Sigma_2 R` has only
:math:`r = \operatorname{rank}(AB^\top) = \min(r_1, r_2)` eigenvalues of real size, the squares :math:`s_k^2` of the
singular values of the cross-Gram; its other :math:`d - r` eigenvalues are zero or of order :math:`\varepsilon`
(where :math:`r_2 > r_1`, the first root's :math:`\sqrt\varepsilon` on the null space of :math:`\Sigma_1` makes
:math:`r_2 - r_1` of them :math:`\varepsilon\lambda(\Sigma_2)`). After :math:`+\varepsilon I` each of those returns
about :math:`\sqrt\varepsilon`, and each :math:`s_k` becomes :math:`\sqrt{s_k^2 + \varepsilon}`. So the fidelity comes
out high and, in exact arithmetic,

.. math::

    d_\Sigma^{\text{route}} \approx d_\Sigma - \frac12\Big[(d - r)\sqrt\varepsilon
        + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon} - s_k\big)\Big],

whose leading term :math:`(d - r)\sqrt\varepsilon/2` is about :math:`0.0057` at :math:`d = 384` and :math:`0.0118` at
:math:`d = 768` for 25-token texts (:math:`r = 24`), whatever the concentration; the sum adds at most
:math:`r\sqrt\varepsilon/2` more, for very concentrated clouds (tiny :math:`s_k`). Pairs whose exact
:math:`\operatorname{BW}^2` is below the shift are clamped to 0. In float32 the eigenvalues that should equal
:math:`\varepsilon` come back with round-off of order :math:`10^{-7}\lVert R\Sigma_2R\rVert`, which can exceed
:math:`\varepsilon`, so the float32 route adds noise on top of the bias (Chapter 6 and notebook 10 measure both).
``dtype=torch.float64`` runs every step in float64, which isolates the regulariser's bias.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from tqdm import tqdm

from .checks import as_clouds, as_device, as_pairs
from .pairs import PairResult, all_pairs, require_memory
from .stats import mean_norm

#: The regulariser the released code adds to every matrix before its square root.
REGULARISER = 1e-9
#: Pairs per batch in the released code.
BATCH = 64


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
        ``None`` for every pair ``i < j`` (lexicographic order, as :func:`socm_lib.socm_pairs`), or ``(P, 2)`` indices.
    dtype
        ``torch.float32`` (the released code) or ``torch.float64`` (to study the regulariser's bias alone).
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
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}.")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    if not (isinstance(eps, (int, float)) and eps >= 0):
        raise ValueError(f"eps must be a number >= 0, got {eps!r}.")
    device = as_device(device)
    X = as_clouds(clouds)
    for k, x in enumerate(X):
        mean_norm(x, f"clouds[{k}]")  # a zero mean would be divided by the released code's 1e-12
    pairs = as_pairs(pairs, len(X)) if pairs is not None else all_pairs(len(X))
    if len(pairs) == 0:
        raise ValueError("There are no pairs: pass at least two clouds, or explicit pairs.")
    d, itemsize = X[0].shape[1], torch.empty((), dtype=dtype).element_size()
    # every cloud's d x d covariance, a batch's square roots and products, and the float64 results
    need = len(X) * (d * d + d) * itemsize + 6 * batch_size * d * d * itemsize + len(pairs) * 3 * 8
    require_memory(need, f"paper_route on {len(X):,} clouds of d = {d} ({d} x {d} covariances) and "
                         f"{len(pairs):,} pairs", "Use socm_lib.socm_pairs (exact, O(n^2 d) memory per pair), "
                         "or fewer clouds.")
    stats = [_statistics(x.to(device), dtype) for x in X]
    out = np.empty((len(pairs), 3))
    show = len(pairs) > 2_000 if progress is None else progress
    with tqdm(total=len(pairs), disable=not show, file=sys.stderr, unit="pair", desc="paper route") as bar:
        for s in range(0, len(pairs), batch_size):
            chunk = pairs[s : s + batch_size]
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
    i, j = pairs[:, 0], pairs[:, 1]
    return PairResult(i=i.copy(), j=j.copy(), d_mu=out[:, 0], d_sigma=out[:, 1], socm=out[:, 2])
