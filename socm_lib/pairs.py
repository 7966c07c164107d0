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
  by default;
* the work is cut into blocks of bounded size (one product and its SVDs each); on the CPU
  every core takes whole blocks, so the products of one block overlap the SVDs of another
  (on a GPU, the blocks run one after another as batched calls).
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from threadpoolctl import threadpool_limits
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
    """Normalised means ``m`` (N, d) and traces ``tr Sigma`` (N,) as float64 numpy, and the length buckets.

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
    return torch.stack(means).numpy(), np.array(traces), buckets


def _matmul_t(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``left @ right^T`` over the last two axes; on the CPU through numpy, whose BLAS is faster here."""
    if left.device.type == "cpu":
        return torch.from_numpy(np.matmul(left.numpy(), np.swapaxes(right.numpy(), -1, -2)))
    return left @ right.mT


def _nuclear_norms(G: torch.Tensor) -> np.ndarray:
    """Sum of singular values of each ``p x q`` matrix in the batch ``G`` (shape ``(..., p, q)``), as float64 numpy.

    On the CPU, numpy's LAPACK ``gesdd`` takes the batch as it is (a strided view: no copy is made
    here); on a GPU, one batched ``torch.linalg.svdvals`` call.
    """
    if G.device.type == "cpu":
        return np.linalg.svd(G.numpy(), compute_uv=False).sum(axis=-1).astype(np.float64)
    return torch.linalg.svdvals(G).sum(dim=-1).to("cpu", torch.float64).numpy()


def _mean_distances(ma: np.ndarray, mb: np.ndarray) -> np.ndarray:
    r""":math:`d_\mu = \lVert m_a - m_b\rVert^2/4` for each row ``k`` of ``ma`` and ``mb`` (both ``(P, d)``)."""
    diff = ma - mb
    return np.einsum("pk,pk->p", diff, diff) / 4.0


def _mean_distance_grid(ma: np.ndarray, mb: np.ndarray) -> np.ndarray:
    r""":math:`d_\mu` of every row of ``ma`` ``(p, d)`` with every row of ``mb`` ``(q, d)``, as a ``(p, q)`` array.

    From the Gram matrix, :math:`(\lVert m_a\rVert^2 + \lVert m_b\rVert^2 - 2 m_a^\top m_b)/4`: one small
    product instead of a ``d``-vector per pair. Its round-off is below
    :math:`d\,\varepsilon\,(\lVert m_a\rVert^2 + \lVert m_b\rVert^2)`; where that could exceed
    :math:`10^{-10}` of the result (nearly equal means), the pair is recomputed by :func:`_mean_distances`.
    """
    squares = np.einsum("pk,pk->p", ma, ma)[:, None] + np.einsum("qk,qk->q", mb, mb)[None, :]
    out = np.maximum(squares - 2.0 * (ma @ mb.T), 0.0) / 4.0
    r, q = np.nonzero(out <= 1e10 * ma.shape[1] * np.finfo(np.float64).eps * squares)
    out[r, q] = _mean_distances(ma[r], mb[q])
    return out


def _pair_position(i: np.ndarray, j: np.ndarray, n_texts: int) -> np.ndarray:
    """Position of pair ``{i, j}`` (``i != j``) in the canonical order of :func:`all_pairs`."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return lo * n_texts - lo * (lo + 1) // 2 + hi - lo - 1


def _bucket_pair_block(Ba: _Bucket, Bb: _Bucket, r0: int, rows: int, means: np.ndarray):
    """Texts ``r0 : r0 + rows`` of bucket ``Ba`` against the texts of ``Bb``: positions, nuclear norms, ``d_mu``.

    One matrix product gives every cross-Gram at once; viewed as ``(rows, texts_b, La, Lb)`` it goes
    to the SVD. Within one bucket (``Ba is Bb``) only slots ``r < q`` are pairs, so the product
    starts at text ``r0`` of ``Bb`` and the SVD takes only the slots above the diagonal.
    """
    first = r0 if Ba is Bb else 0
    left, right = Ba.A[r0 : r0 + rows], Bb.A[first:]
    ca, La, d = left.shape
    nb, Lb, _ = right.shape
    G = _matmul_t(left.reshape(ca * La, d), right.reshape(nb * Lb, d)).reshape(ca, La, nb, Lb).transpose(1, 2)
    mine, theirs = Ba.members[r0 : r0 + ca], Bb.members[first:]
    d_mu = _mean_distance_grid(means[mine], means[theirs])
    if Ba is Bb:
        r, q = np.nonzero(np.arange(ca)[:, None] < np.arange(nb)[None, :])
        return _pair_position(mine[r], theirs[q], len(means)), _nuclear_norms(G[r, q]), d_mu[r, q]
    gi, gj = np.repeat(mine, nb), np.tile(theirs, ca)
    return _pair_position(gi, gj, len(means)), _nuclear_norms(G).reshape(-1), d_mu.reshape(-1)


def _all_pair_blocks(buckets: list[_Bucket], means: np.ndarray, block_elems: int) -> list:
    """Every pair ``i < j`` as blocks of :func:`_bucket_pair_block`, each with at most ~``block_elems`` cross-Gram entries."""
    blocks = []
    for a, Ba in enumerate(buckets):
        for Bb in buckets[a:]:
            na, La, d = Ba.A.shape
            nb, Lb, _ = Bb.A.shape
            rows = max(1, block_elems // (La * nb * Lb))
            for r0 in range(0, na, rows):
                partners = nb - r0 if Ba is Bb else nb
                cost = min(rows, na - r0) * partners * La * Lb * (d + min(La, Lb))  # GEMM + SVD flops, roughly
                blocks.append((cost, partial(_bucket_pair_block, Ba, Bb, r0, rows, means)))
    return blocks


def _listed_pair_block(Ba: _Bucket, Bb: _Bucket, positions, pairs, slot_of, means):
    """Pairs ``pairs[positions]`` (texts of ``Ba`` with texts of ``Bb``): positions, nuclear norms, ``d_mu``.

    One batched product of the pairs' factors, then the SVDs; ``slot_of`` maps a text to its row in its bucket.
    """
    gi, gj = pairs[positions, 0], pairs[positions, 1]
    left = Ba.A[torch.from_numpy(slot_of[gi]).to(Ba.A.device)]
    right = Bb.A[torch.from_numpy(slot_of[gj]).to(Bb.A.device)]
    return positions, _nuclear_norms(_matmul_t(left, right)), _mean_distances(means[gi], means[gj])


def _listed_pair_blocks(buckets: list[_Bucket], means: np.ndarray, pairs: np.ndarray, block_elems: int) -> list:
    """The given pairs as blocks of :func:`_listed_pair_block`, grouped by bucket pair so padding stays small."""
    bucket_of = np.empty(len(means), dtype=np.int64)
    slot_of = np.empty(len(means), dtype=np.int64)
    for b, B in enumerate(buckets):
        bucket_of[B.members] = b
        slot_of[B.members] = np.arange(len(B.members))
    bi, bj = bucket_of[pairs[:, 0]], bucket_of[pairs[:, 1]]
    order = np.lexsort((bj, bi))
    boundaries = np.flatnonzero(np.diff(bi[order]) | np.diff(bj[order])) + 1
    blocks = []
    for group in np.split(order, boundaries):
        Ba, Bb = buckets[bi[group[0]]], buckets[bj[group[0]]]
        La, d = Ba.A.shape[1:]
        Lb = Bb.A.shape[1]
        step = max(1, block_elems // max(La * Lb, (La + Lb) * d // 4))
        for k0 in range(0, len(group), step):
            idx = group[k0 : k0 + step]
            cost = len(idx) * La * Lb * (d + min(La, Lb))
            block = partial(_listed_pair_block, Ba, Bb, idx, pairs, slot_of, means)
            blocks.append((cost, block))
    return blocks


def _run_blocks(blocks: list, n_pairs: int, device: torch.device, bar) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate ``(cost, block)`` work items; each returns ``(positions, nuclear norms, d_mu)`` of its pairs.

    On the CPU the blocks run in one thread per core (``torch.get_num_threads()``), largest first,
    each with a single-threaded BLAS: numpy's matrix products and LAPACK calls release the GIL, so
    while one core multiplies, another takes SVDs, and no core waits for a shared step to finish.
    On a GPU the blocks run one after another, each as one batched call.
    """
    nuclear, d_mu = np.empty(n_pairs), np.empty(n_pairs)

    def fill(block) -> int:
        positions, block_nuclear, block_d_mu = block()
        nuclear[positions], d_mu[positions] = block_nuclear, block_d_mu
        return len(positions)

    blocks = [block for _, block in sorted(blocks, key=lambda item: -item[0])]
    threads = min(torch.get_num_threads(), len(blocks))
    if device.type != "cpu" or threads <= 1:
        for block in blocks:
            bar.update(fill(block))
        return nuclear, d_mu
    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(fill, block) for block in blocks]
        try:
            for done in as_completed(futures):
                bar.update(done.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return nuclear, d_mu


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
    bucket_tolerance: float = 0.05,
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

    On the CPU the work runs in ``torch.get_num_threads()`` threads (``torch.set_num_threads`` changes it).

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
    if listed:
        blocks = _listed_pair_blocks(buckets, means, pairs, block_elems)
    else:
        blocks = _all_pair_blocks(buckets, means, block_elems)
    with tqdm(total=len(pairs), disable=not show, file=sys.stderr, unit="pair", desc="SOCM") as bar:
        nuclear, d_mu = _run_blocks(blocks, len(pairs), device, bar)
    i, j = pairs[:, 0], pairs[:, 1]
    d_sigma = np.maximum(traces[i] + traces[j] - 2.0 * nuclear, 0.0) / 4.0
    return PairResult(i=i.copy(), j=j.copy(), d_mu=d_mu, d_sigma=d_sigma, socm=(1.0 - d_mu) * d_sigma)


def socm(X1, X2, *, normalize: bool = True) -> SOCMResult:
    r"""SOCM of two token clouds: :math:`(1-d_\mu)\,d_\Sigma` (Definition ``def-ch03-socm``).

    ``X1`` and ``X2`` are ``(n, d)`` numpy arrays or torch tensors. With ``normalize=True`` each cloud
    is first divided by the norm of its mean, as in Hara et al. (2026).
    """
    return socm_pairs([X1, X2], [(0, 1)], normalize=normalize, device="cpu", progress=False)[0]
