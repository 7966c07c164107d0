r"""Exact, batched SOCM over many pairs of token clouds (book, Chapters 3 and 6).

For a text with ``n`` tokens (rows of ``X``), after dividing every token by
:math:`\lVert\mu(X)\rVert` when ``normalize=True``, let

.. math::

    m = \mu(X), \qquad A = \frac{X - \mathbf 1 m^\top}{\sqrt n} \in \mathbb R^{n\times d},
    \qquad \Sigma = A^\top A, \qquad \operatorname{tr}\Sigma = \lVert A\rVert_F^2 .

For two texts the fidelity term of the Bures distance is a nuclear norm of the small
:math:`n_1 \times n_2` cross-Gram matrix (Chapter 6, Theorem ``thm-ch06-nuclear``):

.. math::

    \operatorname{tr}\big(\Sigma_1^{1/2}\Sigma_2\Sigma_1^{1/2}\big)^{1/2} = \lVert A B^\top\rVert_*,

so :math:`d_\Sigma = (\lVert A\rVert_F^2 + \lVert B\rVert_F^2 - 2\lVert AB^\top\rVert_*)/4`,
:math:`d_\mu = \lVert m_1 - m_2\rVert^2/4` and :math:`\mathrm{SOCM} = (1-d_\mu)\,d_\Sigma`.

How the engine is fast and still exact:

* texts are sorted by token count and grouped into *buckets* of similar length; each
  bucket is one zero-padded tensor ``(texts, L, d)``. Zero rows of ``A`` or ``B`` add only
  zero singular values, so padding changes nothing (Theorem ``thm-ch06-padding``);
* for all pairs, the cross-Grams of two buckets come from one large matrix product,
  so no pair is handled by Python on its own;
* singular values are taken of :math:`AB^\top` itself (never of its square), in float64
  by default, in bounded-size blocks spread over the CPU's threads (or on the GPU).
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from .checks import as_clouds, as_pairs
from .stats import mean_norm


@dataclass(frozen=True)
class SOCMResult:
    """SOCM of one pair of texts and its two factors."""

    d_mu: float
    d_sigma: float
    socm: float


@dataclass
class PairResult:
    """SOCM for many pairs: ``i[k], j[k]`` index the clouds of pair ``k``; all arrays have one entry per pair."""

    i: np.ndarray
    j: np.ndarray
    d_mu: np.ndarray
    d_sigma: np.ndarray
    socm: np.ndarray

    def __len__(self) -> int:
        return len(self.i)

    def __getitem__(self, k: int) -> SOCMResult:
        return SOCMResult(float(self.d_mu[k]), float(self.d_sigma[k]), float(self.socm[k]))

    def to_frame(self):
        """The pairs as a pandas DataFrame with columns ``i, j, d_mu, d_sigma, socm``."""
        import pandas as pd

        return pd.DataFrame(
            {"i": self.i, "j": self.j, "d_mu": self.d_mu, "d_sigma": self.d_sigma, "socm": self.socm}
        )

    def summary(self) -> dict[str, float]:
        """Mean and median of SOCM, mean ``d_mu`` and ``d_sigma``, and the share of pairs with ``d_sigma > 1``."""
        return {
            "pairs": float(len(self)),
            "mean_socm": float(np.mean(self.socm)),
            "median_socm": float(np.median(self.socm)),
            "mean_d_mu": float(np.mean(self.d_mu)),
            "mean_d_sigma": float(np.mean(self.d_sigma)),
            "share_d_sigma_above_1": float(np.mean(self.d_sigma > 1.0)),
        }


@dataclass
class _Bucket:
    members: np.ndarray  # global indices of the texts in this bucket
    A: torch.Tensor  # (len(members), L, d): each text's Helmert rows of A, zero-padded to L rows


def _buckets(lengths: np.ndarray, tolerance: float) -> list[np.ndarray]:
    """Group text indices by token count: a bucket's longest text has at most ``(1 + tolerance)`` x its shortest."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    for k in range(1, len(order) + 1):
        if k == len(order) or lengths[order[k]] > max(lengths[order[start]] * (1 + tolerance), lengths[order[start]]):
            groups.append(order[start:k])
            start = k
    return groups


def _helmert_rows(C: torch.Tensor) -> torch.Tensor:
    r"""Rows :math:`HC` for a centred ``C`` (n, d), with :math:`H` the ``(n-1) x n`` Helmert matrix.

    The rows of :math:`H` are an orthonormal basis of the vectors orthogonal to :math:`\mathbf 1`, so
    :math:`H^\top H = I - \mathbf 1\mathbf 1^\top/n` and :math:`(HC)^\top HC = C^\top C`: the same
    covariance from ``n - 1`` rows instead of ``n``. Row ``k`` is
    :math:`(c_1 + \dots + c_k - k\,c_{k+1})/\sqrt{k(k+1)}`.
    """
    k = torch.arange(1, C.shape[0], dtype=C.dtype)[:, None]
    return (C.cumsum(dim=0)[:-1] - k * C[1:]) / torch.sqrt(k * (k + 1))


def _prepare(clouds, normalize: bool, tolerance: float, device, dtype):
    """Normalised means ``m`` (N, d), traces ``tr Sigma`` (N,) and length buckets of the matrices ``A``.

    Each text's ``A`` is stored as its ``n - 1`` Helmert rows (:func:`_helmert_rows`), which have the
    same Gram matrix ``A^T A = Sigma`` and so the same cross-Gram singular values, at lower cost.
    """
    X = as_clouds(clouds)
    means, traces, rows = [], [], []
    for k, x in enumerate(X):
        mu = x.mean(dim=0)
        scale = 1.0 / mean_norm(x, f"clouds[{k}]") if normalize else torch.tensor(1.0, dtype=x.dtype)
        A = _helmert_rows(x - mu) * (scale / np.sqrt(x.shape[0]))
        means.append(mu * scale)
        traces.append(float((A * A).sum()))
        rows.append(A)
    row_counts = np.array([max(A.shape[0], 1) for A in rows])  # a one-token text keeps one zero row
    buckets = []
    for members in _buckets(row_counts, tolerance):
        padded = torch.zeros((len(members), int(row_counts[members].max()), X[0].shape[1]), dtype=torch.float64)
        for r, g in enumerate(members):
            padded[r, : rows[g].shape[0]] = rows[g]
        buckets.append(_Bucket(members, padded.to(device=device, dtype=dtype)))
    return torch.stack(means), np.array(traces), buckets


def _matmul_t(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``left @ right^T`` over the last two axes; on the CPU through numpy, whose BLAS is faster here."""
    if left.device.type == "cpu":
        return torch.from_numpy(np.matmul(left.numpy(), np.swapaxes(right.numpy(), -1, -2)))
    return left @ right.mT


def _nuclear_norms(G: torch.Tensor, pool: ThreadPoolExecutor | None) -> np.ndarray:
    """Sum of singular values of each ``p x q`` matrix in the batch ``G`` (shape ``(..., p, q)``), as float64 numpy.

    On the CPU the batch (possibly a strided view: no copy is made) is cut along its first axis into
    pieces that numpy's LAPACK ``gesdd`` handles in parallel threads (it releases the GIL); on a GPU
    one batched call does it.
    """
    if pool is None:
        return torch.linalg.svdvals(G).sum(dim=-1).to("cpu", torch.float64).numpy()
    G = G.numpy()
    pieces = np.array_split(G, max(1, min(G.shape[0], G[..., 0, 0].size // 256)))
    sums = pool.map(lambda g: np.linalg.svd(g, compute_uv=False).sum(axis=-1), pieces)
    return np.concatenate(list(sums)).astype(np.float64)


def _all_pair_nuclear(buckets, n_texts, block_elems, pool, bar) -> np.ndarray:
    """:math:`\\lVert A_i A_j^\\top\\rVert_*` for every pair i < j, in the canonical order of :func:`all_pairs`.

    One matrix product gives the cross-Grams of every text of bucket ``a`` (or a slice of it) with
    every text of bucket ``b``; the result, viewed as ``(texts_a, texts_b, La, Lb)``, goes to the SVD.
    """
    out = np.empty(n_texts * (n_texts - 1) // 2)
    for a, Ba in enumerate(buckets):
        for Bb in buckets[a:]:
            na, La, d = Ba.A.shape
            nb, Lb, _ = Bb.A.shape
            right = Bb.A.reshape(nb * Lb, d)
            rows = max(1, block_elems // (La * nb * Lb))
            for r0 in range(0, na, rows):
                left = Ba.A[r0 : r0 + rows]
                ca = left.shape[0]
                G = _matmul_t(left.reshape(ca * La, d), right).reshape(ca, La, nb, Lb).transpose(1, 2)
                if Ba is Bb:  # a diagonal block holds every pair twice: keep slot r < slot q
                    r, q = np.nonzero(np.arange(r0, r0 + ca)[:, None] < np.arange(nb)[None, :])
                    gi, gj, vals = Ba.members[r + r0], Bb.members[q], _nuclear_norms(G[r, q], pool)
                else:
                    gi, gj = np.repeat(Ba.members[r0 : r0 + ca], nb), np.tile(Bb.members, ca)
                    vals = _nuclear_norms(G, pool).reshape(-1)
                lo, hi = np.minimum(gi, gj), np.maximum(gi, gj)
                out[lo * n_texts - lo * (lo + 1) // 2 + hi - lo - 1] = vals
                bar.update(len(vals))
    return out


def _listed_pair_nuclear(buckets, n_texts, pairs, block_elems, pool, bar) -> np.ndarray:
    """:math:`\\lVert A_i A_j^\\top\\rVert_*` for the given pairs, grouped by bucket so padding stays small."""
    bucket_of = np.empty(n_texts, dtype=np.int64)
    slot_of = np.empty(n_texts, dtype=np.int64)
    for b, B in enumerate(buckets):
        bucket_of[B.members] = b
        slot_of[B.members] = np.arange(len(B.members))
    bi, bj = bucket_of[pairs[:, 0]], bucket_of[pairs[:, 1]]
    order = np.lexsort((bj, bi))
    out = np.empty(len(pairs))
    boundaries = np.flatnonzero(np.diff(bi[order]) | np.diff(bj[order])) + 1
    for group in np.split(order, boundaries):
        Ba, Bb = buckets[bi[group[0]]], buckets[bj[group[0]]]
        La, d = Ba.A.shape[1:]
        Lb = Bb.A.shape[1]
        step = max(1, block_elems // max(La * Lb, (La + Lb) * d // 4))
        for k0 in range(0, len(group), step):
            idx = group[k0 : k0 + step]
            left = Ba.A[torch.from_numpy(slot_of[pairs[idx, 0]]).to(Ba.A.device)]
            right = Bb.A[torch.from_numpy(slot_of[pairs[idx, 1]]).to(Bb.A.device)]
            out[idx] = _nuclear_norms(_matmul_t(left, right), pool)
            bar.update(len(idx))
    return out


def all_pairs(n_texts: int) -> np.ndarray:
    """Every pair ``(i, j)`` with ``i < j`` in lexicographic order, shape ``(n(n-1)/2, 2)``."""
    i, j = np.triu_indices(n_texts, k=1)
    return np.stack([i, j], axis=1)


def socm_pairs(
    clouds,
    pairs=None,
    *,
    normalize: bool = True,
    device=None,
    dtype: torch.dtype = torch.float64,
    bucket_tolerance: float = 0.15,
    block_elems: int = 1 << 22,
    progress: bool | None = None,
) -> PairResult:
    r"""SOCM, :math:`d_\mu` and :math:`d_\Sigma` for many pairs of token clouds, exactly.

    Parameters
    ----------
    clouds
        List of ``(n_i, d)`` numpy arrays or torch tensors, one per text (``d`` shared).
    pairs
        ``None`` for every pair ``i < j`` (in lexicographic order), or a ``(P, 2)`` array of index pairs.
    normalize
        Divide each cloud by the norm of its mean first (the paper's convention).
    device
        ``"cpu"``, ``"cuda"``, a ``torch.device``, or ``None`` for the GPU when one is present.
    dtype
        Precision of the cross-Gram products and singular values (float64 by default; float32 is
        faster and good to about 1e-6).
    bucket_tolerance
        Texts whose lengths differ by at most this fraction share a padded bucket.
    block_elems
        Largest number of cross-Gram entries held at once (bounds memory).
    progress
        Show a progress bar on stderr; ``None`` shows one for more than 20,000 pairs.

    A one-token cloud has :math:`\Sigma = 0`; then :math:`d_\Sigma = \operatorname{tr}\Sigma_2/4`,
    the other text's spread alone. :math:`d_\Sigma` is clamped at 0 against round-off below zero.
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}.")
    means, traces, buckets = _prepare(clouds, normalize, bucket_tolerance, device, dtype)
    n = len(means)
    listed = pairs is not None
    pairs = as_pairs(pairs, n) if listed else all_pairs(n)
    if len(pairs) == 0:
        raise ValueError("There are no pairs: pass at least two clouds, or explicit pairs.")
    show = len(pairs) > 20_000 if progress is None else progress
    pool = ThreadPoolExecutor(max(1, torch.get_num_threads())) if device.type == "cpu" else None
    with tqdm(total=len(pairs), disable=not show, file=sys.stderr, unit="pair", desc="SOCM") as bar:
        try:
            if listed:
                nuclear = _listed_pair_nuclear(buckets, n, pairs, block_elems, pool, bar)
            else:
                nuclear = _all_pair_nuclear(buckets, n, block_elems, pool, bar)
        finally:
            if pool is not None:
                pool.shutdown()
    i, j = pairs[:, 0], pairs[:, 1]
    d_sigma = np.maximum(traces[i] + traces[j] - 2.0 * nuclear, 0.0) / 4.0
    m = means.numpy()
    d_mu = np.concatenate(
        [np.einsum("pk,pk->p", d, d) / 4.0 for d in (m[i[s:s + 8192]] - m[j[s:s + 8192]] for s in range(0, len(i), 8192))]
    )
    return PairResult(i=i.copy(), j=j.copy(), d_mu=d_mu, d_sigma=d_sigma, socm=(1.0 - d_mu) * d_sigma)


def socm(X1, X2, *, normalize: bool = True) -> SOCMResult:
    r"""SOCM of two token clouds: :math:`(1-d_\mu)\,d_\Sigma` (Definition ``def-ch03-socm``).

    ``X1`` and ``X2`` are ``(n, d)`` numpy arrays or torch tensors. With ``normalize=True`` each cloud
    is first divided by the norm of its mean, as in Hara et al. (2026).
    """
    return socm_pairs([X1, X2], [(0, 1)], normalize=normalize, device="cpu", progress=False)[0]
