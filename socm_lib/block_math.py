r"""What one block of pairs computes: cross-Gram products, their nuclear norms, the mean distances and each pair's
figures (book, Chapter 6).

For two texts with factors :math:`A` and :math:`B` (:mod:`socm_lib.factors`), the fidelity term of the Bures distance
is the nuclear norm of the small cross-Gram :math:`AB^\top` (Theorem ``thm-ch06-nuclear``). A block takes the
cross-Grams of many pairs from one large matrix product (:func:`_cross_grams`), so no pair is handled by Python on
its own, and their singular values at once, of :math:`AB^\top` itself (never of its square):

* the numpy path (every CPU run by default): BLAS products; the nuclear norms from the compiled lane kernel of
  :mod:`socm_lib.nuclear`, or LAPACK ``gesdd`` where it is not built (the setting ``svd_kernel``);
* the torch path (every GPU run; on the CPU with ``backend="torch"``): torch matmul; singular values by the batched
  one-sided Jacobi of :mod:`socm_lib.jacobi` on a GPU when a side exceeds 32, which cuSOLVER does not batch, else
  batched ``torch.linalg.svdvals`` on at most :data:`SVD_BATCH` matrices per call (the setting ``torch_svd`` of
  :func:`socm_lib.config_context` chooses by hand).

:func:`block_figures` is the one entry: a block of the plan (:mod:`socm_lib.block_plan`) and the data of its two
buckets (:class:`socm_lib.factors.BucketData`) give ``(positions, i, j, d_mu, d_sigma, socm)`` of its pairs, the
last two by :func:`socm_lib.results.pair_figures`. It reads nothing else, so a block gives the same numbers in any
thread, in any order, in any process that has the same two buckets (:mod:`socm_lib.block_runner`,
:mod:`socm_lib.distributed`).
"""

from __future__ import annotations

import numpy as np
import torch

from .block_plan import Block, GridBlock, ListedBlock, RowBlock
from .config import get_config
from .factors import BucketData
from .jacobi import batched_svdvals
from .nuclear import nuclear_norms
from .results import pair_figures, require_finite

#: Most matrices in one batched SVD call on the torch path. Batched GPU solvers do best on many
#: small matrices (up to about 32 x 32), so those go 4,096 at a time ...
SVD_BATCH = 4096
#: ... and larger ones in proportionally smaller batches: at most this many entries per call.
SVD_BATCH_ELEMS = SVD_BATCH * 32 * 32


def block_figures(block: Block, A: BucketData, B: BucketData, pairs: np.ndarray | None, n_texts: int,
                  use_torch: bool) -> tuple[np.ndarray, ...]:
    """``(positions, i, j, d_mu, d_sigma, socm)`` of the pairs of ``block``, from the data ``A`` and ``B`` of its buckets
    ``block.a`` and ``block.b``; ``pairs``: the listed pairs (``None`` for all pairs, whose positions are those of
    :func:`socm_lib.block_plan.all_pairs` of ``n_texts`` texts). A non-finite SOCM is refused, naming the pair."""
    positions, i, j, d_mu, trace_a, trace_b, nuclear = _KINDS[type(block)](block, A, B, pairs, n_texts, use_torch)
    d_sigma, socm = pair_figures(d_mu, trace_a, trace_b, nuclear)
    require_finite(socm, lambda k: (f"clouds[{i[k]}]", f"clouds[{j[k]}]"))
    return positions, i, j, d_mu, d_sigma, socm


def _matmul_t(left: torch.Tensor, right: torch.Tensor, use_torch: bool) -> torch.Tensor:
    """``left @ right^T`` over the last two axes: torch's matmul on the torch path, else numpy (faster BLAS here)."""
    if use_torch:
        return left @ right.mT
    return torch.from_numpy(np.matmul(left.numpy(), np.swapaxes(right.numpy(), -1, -2)))


def _cross_grams(left: torch.Tensor, right: torch.Tensor, use_torch: bool) -> torch.Tensor:
    """Every cross-Gram :math:`A_a A_b^\top` of the texts of ``left`` (``(n_a, L_a, d)``) with those of ``right``
    (``(n_b, L_b, d)``), as a ``(n_a, n_b, L_a, L_b)`` view of one matrix product (a single large GEMM)."""
    ca, La, d = left.shape
    nb, Lb, _ = right.shape
    G = _matmul_t(left.reshape(ca * La, d), right.reshape(nb * Lb, d), use_torch)
    return G.reshape(ca, La, nb, Lb).transpose(1, 2)


def _svd_batch(p: int, q: int) -> int:
    """How many ``p x q`` matrices go to one batched SVD call on the torch path (see :data:`SVD_BATCH`)."""
    return max(1, min(SVD_BATCH, SVD_BATCH_ELEMS // (p * q)))


def _torch_solver(G: torch.Tensor) -> str:
    """The torch path's solver for the batch ``G`` under the setting ``torch_svd``: ``"jacobi"`` or ``"svdvals"``."""
    choice = get_config()["torch_svd"]
    if choice != "auto":
        return choice
    return "jacobi" if G.device.type == "cuda" and max(G.shape[-2:]) > 32 else "svdvals"


def _nuclear_norms(G: torch.Tensor, use_torch: bool) -> np.ndarray:
    """Sum of singular values of each ``p x q`` matrix in the batch ``G`` (shape ``(..., p, q)``), as float64 numpy.

    The numpy path hands the batch, as it is (a strided view: no copy is made here), to
    :func:`socm_lib.nuclear.nuclear_norms`: the compiled lane kernel, many matrices at once, or LAPACK's
    ``gesdd`` where the kernel is not built. The torch path takes the whole batch at once in the batched Jacobi
    solver (:func:`socm_lib.jacobi.batched_svdvals`), or calls ``torch.linalg.svdvals`` on at most
    :func:`_svd_batch` matrices at a time (:func:`_torch_solver` chooses).
    """
    if not use_torch:
        return nuclear_norms(G.numpy())
    batch, (p, q) = G.shape[:-2], G.shape[-2:]
    flat = G.reshape(-1, p, q)
    if _torch_solver(flat) == "jacobi":
        sums = batched_svdvals(flat).sum(dim=-1)
    else:
        step = _svd_batch(p, q)
        parts = [torch.linalg.svdvals(flat[k : k + step]).sum(dim=-1) for k in range(0, flat.shape[0], step)]
        sums = torch.cat(parts) if parts else flat.new_zeros(0)
    return sums.to("cpu", torch.float64).numpy().reshape(batch)


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
    """Position of pair ``{i, j}`` (``i != j``) in the canonical order of :func:`socm_lib.block_plan.all_pairs`."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return lo * n_texts - lo * (lo + 1) // 2 + hi - lo - 1


def _row_block(block: RowBlock, A: BucketData, B: BucketData, pairs, n_texts: int, use_torch: bool):
    """Texts ``start : stop`` of bucket ``A`` against the texts of ``B``: ``(positions, i, j, d_mu, tr_a, tr_b,
    nuclear norms)`` of their pairs.

    One matrix product gives every cross-Gram at once; viewed as ``(rows, texts_b, La, Lb)`` it goes
    to the SVD. Within one bucket (``a == b``) only slots ``r < q`` are pairs, so the product
    starts at text ``start`` of ``B`` and the SVD takes only the slots above the diagonal.
    """
    start, stop = block.start, block.stop
    first = start if block.a == block.b else 0
    G = _cross_grams(A.factors[start:stop], B.factors[first:], use_torch)
    ca, nb = G.shape[:2]
    d_mu = _mean_distance_grid(A.means[start:stop], B.means[first:])
    if block.a == block.b:
        r, q = np.nonzero(np.arange(ca)[:, None] < np.arange(nb)[None, :])
        slots = torch.from_numpy(r).to(G.device), torch.from_numpy(q).to(G.device)
        nuclear, d_mu = _nuclear_norms(G[slots], use_torch), d_mu[r, q]
    else:
        r, q = np.repeat(np.arange(ca), nb), np.tile(np.arange(nb), ca)
        nuclear, d_mu = _nuclear_norms(G, use_torch).reshape(-1), d_mu.reshape(-1)
    gi, gj = A.members[start + r], B.members[first + q]
    i, j = np.minimum(gi, gj), np.maximum(gi, gj)  # each pair as in all_pairs: i < j
    return _pair_position(i, j, n_texts), i, j, d_mu, A.traces[start + r], B.traces[first + q], nuclear


def _listed_block(block: ListedBlock, A: BucketData, B: BucketData, pairs: np.ndarray, n_texts: int,
                  use_torch: bool):
    """Pairs ``pairs[positions]`` (texts of ``A`` with texts of ``B``): ``(positions, i, j, d_mu, tr_a, tr_b, nuclear
    norms)``. One batched product of the pairs' factors, then the SVDs."""
    gi, gj = pairs[block.positions, 0], pairs[block.positions, 1]
    si, sj = np.searchsorted(A.members, gi), np.searchsorted(B.members, gj)  # each text's slot in its bucket
    left = A.factors[torch.from_numpy(si).to(A.factors.device)]
    right = B.factors[torch.from_numpy(sj).to(B.factors.device)]
    nuclear = _nuclear_norms(_matmul_t(left, right, use_torch), use_torch)
    return (block.positions, gi, gj, _mean_distances(A.means[si], B.means[sj]), A.traces[si], B.traces[sj],
            nuclear)


def _texts_of(A: torch.Tensor, slots: np.ndarray) -> torch.Tensor:
    """Rows ``slots`` (increasing) of a bucket's factors ``A``: a view when they are consecutive, else a copy.

    A bucket lists its texts in increasing order, so the texts of one set of :func:`socm_lib.socm_cross` (the first
    set's indices all come before the second's) are consecutive in every bucket and are read in place.
    """
    if slots[-1] - slots[0] + 1 == len(slots):
        return A[int(slots[0]) : int(slots[-1]) + 1]
    return A[torch.from_numpy(slots).to(A.device)]


def _grid_block(block: GridBlock, A: BucketData, B: BucketData, pairs: np.ndarray, n_texts: int, use_torch: bool):
    """Pairs ``pairs[positions]``, each a text of ``rows`` (sorted texts of ``A``) with one of ``cols`` (of ``B``):
    ``(positions, i, j, d_mu, tr_a, tr_b, nuclear norms)``.

    One matrix product gives the cross-Grams of the whole grid ``rows x cols`` (:func:`_cross_grams`), from which
    each pair takes its own: the same numbers as :func:`_listed_block` to round-off, with one large GEMM in
    place of a gather and a product per pair. A pair listed twice takes one SVD.
    """
    rows, cols = block.rows, block.cols
    gi, gj = pairs[block.positions, 0], pairs[block.positions, 1]
    G = _cross_grams(_texts_of(A.factors, np.searchsorted(A.members, rows)),
                     _texts_of(B.factors, np.searchsorted(B.members, cols)), use_torch)
    cells, pair_cell = np.unique(np.searchsorted(rows, gi) * len(cols) + np.searchsorted(cols, gj),
                                 return_inverse=True)
    if len(cells) == len(rows) * len(cols):  # the whole tile: the SVDs read the product where it is, no copy
        nuclear = _nuclear_norms(G, use_torch).reshape(-1)[pair_cell]
    else:
        r, q = (torch.from_numpy(k).to(G.device) for k in np.divmod(cells, len(cols)))
        nuclear = _nuclear_norms(G[r, q], use_torch)[pair_cell]
    si, sj = np.searchsorted(A.members, gi), np.searchsorted(B.members, gj)
    return (block.positions, gi, gj, _mean_distances(A.means[si], B.means[sj]), A.traces[si], B.traces[sj],
            nuclear)


#: What each kind of block computes.
_KINDS = {RowBlock: _row_block, ListedBlock: _listed_block, GridBlock: _grid_block}
