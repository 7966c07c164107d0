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

* a long cloud (more tokens than dimensions) is represented by the ``d x d`` triangular factor of the
  QR decomposition of its ``A`` (same :math:`\Sigma`, so the same nuclear norms: :func:`_shortened`), so no
  factor has more than ``min(n - 1, d)`` rows and no cross-Gram is larger than ``d x d``;
* texts are sorted by token count and grouped into *buckets* of similar length; each
  bucket is one zero-padded tensor ``(texts, L, d)``. Zero rows of ``A`` or ``B`` add only
  zero singular values, so padding changes nothing (Theorem ``thm-ch06-padding``);
* for all pairs, the cross-Grams of two buckets come from one large matrix product,
  so no pair is handled by Python on its own;
* singular values are taken of :math:`AB^\top` itself (never of its square), in float64
  by default;
* the work is cut into blocks of bounded size (one product and its SVDs each); on the CPU
  every core takes whole blocks, so the products of one block overlap the SVDs of another
  (on a GPU, the blocks run one after another as batched calls);
* the clouds stay as they came (float32 from the encoders: validated, never copied to float64);
  a bucket's float64 Helmert rows, padded, are formed only when a block needs them and kept in a
  small least-recently-used cache (:data:`FACTOR_CACHE_BYTES`), and the blocks are visited tile by
  tile (:func:`_visit_key`) so that each bucket is formed a few times, not once per block. The
  numbers are those of forming every bucket up front, bit for bit; only the memory differs;
* every block's pairs go to a consumer and are then dropped: :func:`socm_pairs` writes them into
  its result arrays, :func:`socm_lib.socm_summary` folds them into running sums, histograms and
  top-k lists, in memory bounded by the block size.

Backends and precision. ``backend="auto"`` takes numpy (BLAS products; the nuclear norms from the
compiled lane kernel of :mod:`socm_lib.nuclear`, or LAPACK ``gesdd`` where it is not built) on the
CPU and torch on a GPU; ``backend="torch"`` runs the GPU's path (torch matmul; singular values of each
block's matrices at once by the batched one-sided Jacobi of :mod:`socm_lib.jacobi` on a GPU when a side
exceeds 32, which cuSOLVER does not batch, else batched ``torch.linalg.svdvals`` on at most
:data:`SVD_BATCH` matrices per call: :data:`TORCH_SVD`; blocks one after another) on any device, so the
CPU tests check it. On a GPU, float64
(the default) is exact to round-off, like the CPU; float32 is much faster and good to about 1e-6
relative. TF32 (10-bit mantissas in float32 products, allowed by
``torch.backends.cuda.matmul.allow_tf32``) is switched off while the engine runs, so it can never
silently cost precision.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from .checks import (as_bool, as_cloud, as_clouds, as_device, as_dtype, as_int, as_number, as_pair_set, as_progress,
                     show_progress)
from .jacobi import batched_svdvals
from .memo import LRUCache
from .nuclear import nuclear_norms
from .stats import normalized_mean_and_scale, unit_scale

BACKENDS = ("auto", "numpy", "torch")
#: Most matrices in one batched SVD call on the torch path. Batched GPU solvers do best on many
#: small matrices (up to about 32 x 32), so those go 4,096 at a time ...
SVD_BATCH = 4096
#: ... and larger ones in proportionally smaller batches: at most this many entries per call.
SVD_BATCH_ELEMS = SVD_BATCH * 32 * 32
#: Solvers of the torch path's singular values: the batched one-sided Jacobi of :mod:`socm_lib.jacobi`
#: (batched for every size) and ``torch.linalg.svdvals`` (on CUDA, batched by cuSOLVER only up to 32 x 32).
TORCH_SVDS = ("auto", "jacobi", "svdvals")
#: The torch path's solver: ``"auto"`` takes the batched Jacobi on a GPU for matrices with a side above 32 and
#: ``torch.linalg.svdvals`` otherwise; ``"jacobi"`` or ``"svdvals"`` always (set it with :func:`torch_svd`).
TORCH_SVD = "auto"
#: Memory of :func:`socm_pairs`'s results per pair: ``i, j, d_mu, d_sigma, socm`` (40 bytes), the
#: ``(P, 2)`` index pairs (16) and the temporaries of building them (about 24).
BYTES_PER_PAIR = 80
#: Bytes of padded bucket factors (:class:`_Factors`) kept between blocks, least recently used dropped
#: first; blocks in flight may hold one or two buckets more. The visiting order (:func:`_visit_key`)
#: works through tiles of buckets of half this size.
FACTOR_CACHE_BYTES = 1 << 27


@dataclass(frozen=True)
class SOCMResult:
    """SOCM of one pair of texts and its two factors."""

    d_mu: float
    d_sigma: float
    socm: float


@dataclass
class PairResult:
    """SOCM for many pairs: ``i[k], j[k]`` index the clouds of pair ``k``; all arrays have one entry per pair.

    From :func:`socm_pairs` with ``pairs=None`` the pairs come in ``scipy.spatial.distance.pdist``'s condensed
    order (``squareform(result.socm)`` is the matrix); from :func:`socm_cross` in ``cdist``'s row-major order.
    """

    i: np.ndarray
    j: np.ndarray
    d_mu: np.ndarray
    d_sigma: np.ndarray
    socm: np.ndarray

    def __len__(self) -> int:
        return len(self.i)

    def __getitem__(self, k):
        """Pair ``k`` as a :class:`SOCMResult`; a slice, boolean mask or index array gives a :class:`PairResult` of
        those pairs."""
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            return SOCMResult(float(self.d_mu[k]), float(self.d_sigma[k]), float(self.socm[k]))
        return PairResult(*(np.asarray(getattr(self, f))[k] for f in ("i", "j", "d_mu", "d_sigma", "socm")))

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
    index: int  # position in the engine's list of buckets (shortest texts first)
    members: np.ndarray  # global indices of the texts in this bucket
    rows: int  # L: each text's Helmert rows of A are zero-padded to L rows (:meth:`_Factors.__call__`)


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


def _shortened(A: torch.Tensor) -> torch.Tensor:
    r"""A factor with the same Gram matrix as ``A`` and at most ``d`` rows: ``A`` itself, or, when ``A`` has more
    rows than columns (a *long* cloud, :math:`n - 1 > d`), the ``d x d`` triangular factor :math:`R` of
    :math:`A = QR` (Householder QR, backward stable).

    :math:`Q` has orthonormal columns, so :math:`A^\top A = R^\top Q^\top Q R = R^\top R = \Sigma`, and for two
    clouds :math:`A B^\top = Q_A (R_A R_B^\top) Q_B^\top` has the singular values of :math:`R_A R_B^\top`:
    the same traces :math:`\lVert R\rVert_F^2 = \operatorname{tr}\Sigma` and the same fidelity
    :math:`\lVert A B^\top\rVert_* = \lVert R_A R_B^\top\rVert_*` from a cross-Gram of at most ``d x d``
    instead of :math:`(n_1 - 1)\times(n_2 - 1)`.
    """
    return torch.linalg.qr(A, mode="r").R if A.shape[0] > A.shape[1] else A


def _factor(x: torch.Tensor, normalize: bool, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(m, A)`` of one float64 cloud: the (normalised) mean ``(d,)`` and a factor of :math:`\Sigma` with
    ``min(n - 1, d)`` rows: the ``n - 1`` scaled Helmert rows, shortened to ``d`` rows for a long cloud
    (:func:`_shortened`).

    Formed from the cloud brought to unit scale (:func:`socm_lib.stats.unit_scale`, exact), so no sum overflows
    or underflows; without normalisation the scale is put back, and a factor that then overflows is refused.
    """
    x, scale = normalized_mean_and_scale(x, name) if normalize else unit_scale(x)
    mu = x.mean(dim=0)
    m, A = mu * scale, _helmert_rows(x - mu) * (scale / np.sqrt(x.shape[0]))
    if not normalize and not (bool(torch.isfinite(m).all()) and bool(torch.isfinite((A * A).sum()))):
        raise ValueError(f"{name} is too large for normalize=False: its mean or spread overflows float64. Pass "
                         "normalize=True (SOCM is then scale-free), or rescale the clouds.")
    return m, _shortened(A)


def _prepare(clouds, normalize: bool, tolerance: float):
    """Normalised means ``m`` (N, d) and traces ``tr Sigma`` (N,) as float64 numpy, the length buckets and the
    validated clouds, each kept in the dtype it came in (:func:`socm_lib.checks.as_clouds` with ``compact=True``).

    Each text's ``A`` is stored as its ``n - 1`` Helmert rows (:func:`_helmert_rows`), or the ``d`` rows of their
    QR factor ``R`` for a long cloud (:func:`_shortened`), which have the same Gram matrix ``A^T A = Sigma`` and
    so the same cross-Gram singular values, at lower cost; here
    they are formed one text at a time for the traces and dropped (:class:`_Factors` forms them again,
    bucket by bucket, when blocks need them).
    """
    X = as_clouds(clouds, compact=True)
    means, traces, row_counts = [], [], []
    for k, x in enumerate(X):
        m, A = _factor(x.to(torch.float64), normalize, f"clouds[{k}]")
        means.append(m)
        traces.append(float((A * A).sum()))
        row_counts.append(max(A.shape[0], 1))  # a one-token text keeps one zero row
    row_counts = np.array(row_counts)
    buckets = [_Bucket(b, np.sort(members), int(row_counts[members].max()))  # in text order: see _texts_of
               for b, members in enumerate(_buckets(row_counts, tolerance))]
    return torch.stack(means).numpy(), np.array(traces), buckets, X


class _Factors:
    """Each bucket's padded factors ``A`` (``(texts, L, d)`` on the engine's device and dtype), formed when asked for.

    A bucket's tensor is formed from the compact clouds exactly as if every bucket were formed up front
    (float64 :func:`_factor` of each text, zero-padded, then moved to the device and dtype), and kept
    in a least-recently-used cache (:class:`socm_lib.memo.LRUCache`) of at most ``capacity`` bytes (default
    :data:`FACTOR_CACHE_BYTES`; the latest always stays). Thread safe: a bucket asked for by two workers at
    once is formed once.
    """

    def __init__(self, clouds: list, normalize: bool, device, dtype, capacity: int | None = None):
        self.clouds, self.normalize, self.device, self.dtype = clouds, normalize, device, dtype
        self.d = clouds[0].shape[1]
        self.itemsize = torch.empty(0, dtype=dtype).element_size()
        self.formed = 0  # buckets formed so far (one per cache miss)
        self._cache = LRUCache(sys.maxsize, maxbytes=FACTOR_CACHE_BYTES if capacity is None else capacity,
                               sizeof=lambda A: A.numel() * self.itemsize, keep_latest=True)
        self._lock = threading.Lock()
        self._forming: dict[int, threading.Lock] = {}

    @property
    def capacity(self) -> int:
        """Bytes of factors the cache keeps between blocks."""
        return self._cache.maxbytes

    @capacity.setter
    def capacity(self, nbytes: int) -> None:
        self._cache.maxbytes = nbytes

    def nbytes(self, bucket: _Bucket) -> int:
        """Bytes of ``bucket``'s padded tensor."""
        return len(bucket.members) * bucket.rows * self.d * self.itemsize

    def __call__(self, bucket: _Bucket) -> torch.Tensor:
        A = self._cache.get(bucket.index)
        if A is not None:
            return A
        with self._lock:
            forming = self._forming.setdefault(bucket.index, threading.Lock())
        with forming:  # a second worker asking for this bucket waits here, then finds it in the cache
            A = self._cache.get(bucket.index)
            if A is None:
                A = self._form(bucket)
                self._cache.put(bucket.index, A)
                with self._lock:
                    self.formed += 1
        return A

    def _form(self, bucket: _Bucket) -> torch.Tensor:
        padded = torch.zeros((len(bucket.members), bucket.rows, self.d), dtype=torch.float64)
        for r, g in enumerate(bucket.members):
            A = _factor(self.clouds[g].to(torch.float64), self.normalize, f"clouds[{g}]")[1]
            padded[r, : A.shape[0]] = A
        return padded.to(device=self.device, dtype=self.dtype)


def _visit_key(buckets: list[_Bucket], factors: _Factors):
    """A sort key for bucket pairs ``(a, b)`` that lets :class:`_Factors`' cache serve most blocks.

    The buckets (shortest first) are cut into consecutive tiles of about half the cache; the pairs of
    tiles ``s <= t`` are visited row by row (``s`` fixed), every other row backwards (so that a backward
    row starts with the tile the forward one ended on), and within two tiles the buckets of the first are
    swept for each bucket of the second (so the second's buckets, each used for one sweep, are the ones
    the cache drops). The same pairs in another order give the same numbers: each pair's result
    depends only on its own factors.
    """
    tile, used, t = [], 0, 0
    for B in buckets:
        size = factors.nbytes(B)
        if used and used + size > factors.capacity // 2:
            t, used = t + 1, 0
        tile.append(t)
        used += size

    def key(a: int, b: int) -> tuple:
        a, b = min(a, b), max(a, b)
        s, t = tile[a], tile[b]
        return s, t if s % 2 == 0 else -t, b, a

    return key


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
    """The torch path's solver for the batch ``G`` under :data:`TORCH_SVD`: ``"jacobi"`` or ``"svdvals"``."""
    if TORCH_SVD != "auto":
        return TORCH_SVD
    return "jacobi" if G.device.type == "cuda" and max(G.shape[-2:]) > 32 else "svdvals"


@contextlib.contextmanager
def torch_svd(solver: str):
    """Run the torch path with ``solver`` (one of :data:`TORCH_SVDS`) inside the ``with`` block, then restore
    :data:`TORCH_SVD`; ``socm_lib.gpu_check`` times the solvers side by side with it."""
    global TORCH_SVD
    if solver not in TORCH_SVDS:
        raise ValueError(f"solver must be one of {', '.join(map(repr, TORCH_SVDS))}, got {solver!r}.")
    before, TORCH_SVD = TORCH_SVD, solver
    try:
        yield
    finally:
        TORCH_SVD = before


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
    """Position of pair ``{i, j}`` (``i != j``) in the canonical order of :func:`all_pairs`."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return lo * n_texts - lo * (lo + 1) // 2 + hi - lo - 1


def _bucket_pair_block(factors: _Factors, Ba: _Bucket, Bb: _Bucket, r0: int, rows: int, means: np.ndarray,
                       use_torch: bool):
    """Texts ``r0 : r0 + rows`` of bucket ``Ba`` against the texts of ``Bb``: ``(positions, i, j, nuclear norms, d_mu)`` of their pairs.

    One matrix product gives every cross-Gram at once; viewed as ``(rows, texts_b, La, Lb)`` it goes
    to the SVD. Within one bucket (``Ba is Bb``) only slots ``r < q`` are pairs, so the product
    starts at text ``r0`` of ``Bb`` and the SVD takes only the slots above the diagonal.
    """
    first = r0 if Ba is Bb else 0
    G = _cross_grams(factors(Ba)[r0 : r0 + rows], factors(Bb)[first:], use_torch)
    ca, nb = G.shape[:2]
    mine, theirs = Ba.members[r0 : r0 + ca], Bb.members[first:]
    d_mu = _mean_distance_grid(means[mine], means[theirs])
    if Ba is Bb:
        r, q = np.nonzero(np.arange(ca)[:, None] < np.arange(nb)[None, :])
        gi, gj = mine[r], theirs[q]
        slots = torch.from_numpy(r).to(G.device), torch.from_numpy(q).to(G.device)
        nuclear, d_mu = _nuclear_norms(G[slots], use_torch), d_mu[r, q]
    else:
        gi, gj = np.repeat(mine, nb), np.tile(theirs, ca)
        nuclear, d_mu = _nuclear_norms(G, use_torch).reshape(-1), d_mu.reshape(-1)
    i, j = np.minimum(gi, gj), np.maximum(gi, gj)  # each pair as in all_pairs: i < j
    return _pair_position(i, j, len(means)), i, j, nuclear, d_mu


def _all_pair_blocks(buckets: list[_Bucket], factors: _Factors, means: np.ndarray, block_elems: int,
                     use_torch: bool) -> list:
    """Every pair ``i < j`` as blocks of :func:`_bucket_pair_block`, each with at most ~``block_elems`` cross-Gram
    entries, in the order of :func:`_visit_key`."""
    blocks, key = [], _visit_key(buckets, factors)
    for a, Ba in enumerate(buckets):
        for Bb in buckets[a:]:
            na, La, nb, Lb = len(Ba.members), Ba.rows, len(Bb.members), Bb.rows
            rows = max(1, block_elems // (La * nb * Lb))
            for r0 in range(0, na, rows):
                blocks.append((key(Ba.index, Bb.index),
                               partial(_bucket_pair_block, factors, Ba, Bb, r0, rows, means, use_torch)))
    return blocks


def _listed_pair_block(factors: _Factors, Ba: _Bucket, Bb: _Bucket, positions, pairs, slot_of, means,
                       use_torch: bool):
    """Pairs ``pairs[positions]`` (texts of ``Ba`` with texts of ``Bb``): ``(positions, i, j, nuclear norms, d_mu)``.

    One batched product of the pairs' factors, then the SVDs; ``slot_of`` maps a text to its row in its bucket.
    """
    gi, gj = pairs[positions, 0], pairs[positions, 1]
    left = factors(Ba)[torch.from_numpy(slot_of[gi]).to(factors.device)]
    right = factors(Bb)[torch.from_numpy(slot_of[gj]).to(factors.device)]
    nuclear = _nuclear_norms(_matmul_t(left, right, use_torch), use_torch)
    return positions, gi, gj, nuclear, _mean_distances(means[gi], means[gj])


def _texts_of(A: torch.Tensor, slots: np.ndarray) -> torch.Tensor:
    """Rows ``slots`` (increasing) of a bucket's factors ``A``: a view when they are consecutive, else a copy.

    A bucket lists its texts in increasing order, so the texts of one set of :func:`socm_cross` (the first set's
    indices all come before the second's) are consecutive in every bucket and are read in place.
    """
    if slots[-1] - slots[0] + 1 == len(slots):
        return A[int(slots[0]) : int(slots[-1]) + 1]
    return A[torch.from_numpy(slots).to(A.device)]


def _grid_pair_block(factors: _Factors, Ba: _Bucket, Bb: _Bucket, positions, rows, cols, pairs, slot_of, means,
                     use_torch: bool):
    """Pairs ``pairs[positions]``, each a text of ``rows`` (sorted texts of ``Ba``) with one of ``cols`` (of ``Bb``):
    ``(positions, i, j, nuclear norms, d_mu)``.

    One matrix product gives the cross-Grams of the whole grid ``rows x cols`` (:func:`_cross_grams`), from which
    each pair takes its own: the same numbers as :func:`_listed_pair_block` to round-off, with one large GEMM in
    place of a gather and a product per pair. A pair listed twice takes one SVD.
    """
    gi, gj = pairs[positions, 0], pairs[positions, 1]
    G = _cross_grams(_texts_of(factors(Ba), slot_of[rows]), _texts_of(factors(Bb), slot_of[cols]), use_torch)
    cells, pair_cell = np.unique(np.searchsorted(rows, gi) * len(cols) + np.searchsorted(cols, gj),
                                 return_inverse=True)
    if len(cells) == len(rows) * len(cols):  # the whole tile: the SVDs read the product where it is, no copy
        nuclear = _nuclear_norms(G, use_torch).reshape(-1)[pair_cell]
    else:
        r, q = (torch.from_numpy(k).to(G.device) for k in np.divmod(cells, len(cols)))
        nuclear = _nuclear_norms(G[r, q], use_torch)[pair_cell]
    return positions, gi, gj, nuclear, _mean_distances(means[gi], means[gj])


def _listed_pair_blocks(buckets: list[_Bucket], factors: _Factors, means: np.ndarray, pairs: np.ndarray,
                        block_elems: int, use_torch: bool) -> list:
    """The given pairs as blocks, grouped by bucket pair so padding stays small, in the order of :func:`_visit_key`.

    A group whose pairs cover its grid (its distinct first texts times its distinct second texts are no more than
    its pairs, as for :func:`socm_cross`) is cut into tiles of the grid, each one :func:`_grid_pair_block`; any
    other group goes pair by pair in :func:`_listed_pair_block`. Both hold at most about ``block_elems``
    cross-Gram entries and ``4 block_elems`` gathered factor entries at a time (at least one text, or one pair).
    """
    bucket_of = np.empty(len(means), dtype=np.int64)
    slot_of = np.empty(len(means), dtype=np.int64)
    for b, B in enumerate(buckets):
        bucket_of[B.members] = b
        slot_of[B.members] = np.arange(len(B.members))
    bi, bj = bucket_of[pairs[:, 0]], bucket_of[pairs[:, 1]]
    order = np.lexsort((bj, bi))
    boundaries = np.flatnonzero(np.diff(bi[order]) | np.diff(bj[order])) + 1
    blocks, key, d = [], _visit_key(buckets, factors), factors.d
    for group in np.split(order, boundaries):
        Ba, Bb = buckets[bi[group[0]]], buckets[bj[group[0]]]
        La, Lb = Ba.rows, Bb.rows
        rows, cols = np.unique(pairs[group, 0]), np.unique(pairs[group, 1])
        if len(rows) * len(cols) <= len(group):
            width = min(len(cols), max(1, 2 * block_elems // (Lb * d)))
            height = max(1, min(block_elems // (La * width * Lb), 2 * block_elems // (La * d)))
            r = np.searchsorted(rows, pairs[group, 0]) // height
            c = np.searchsorted(cols, pairs[group, 1]) // width
            tile_order = np.lexsort((c, r))
            cuts = np.flatnonzero(np.diff(r[tile_order]) | np.diff(c[tile_order])) + 1
            for tile in np.split(tile_order, cuts):
                r0, c0 = r[tile[0]] * height, c[tile[0]] * width
                block = partial(_grid_pair_block, factors, Ba, Bb, group[tile], rows[r0 : r0 + height],
                                cols[c0 : c0 + width], pairs, slot_of, means, use_torch)
                blocks.append((key(Ba.index, Bb.index), block))
            continue
        step = max(1, block_elems // max(La * Lb, (La + Lb) * d // 4))
        for k0 in range(0, len(group), step):
            idx = group[k0 : k0 + step]
            block = partial(_listed_pair_block, factors, Ba, Bb, idx, pairs, slot_of, means, use_torch)
            blocks.append((key(Ba.index, Bb.index), block))
    return blocks


@contextlib.contextmanager
def _full_precision_matmul():
    """Float32 products at full float32 precision while the engine runs (restored afterwards).

    ``torch.backends.cuda.matmul.allow_tf32 = True`` (or ``set_float32_matmul_precision("high")``)
    lets a GPU multiply float32 matrices with 10-bit mantissas (TF32), about 1e-3 relative error,
    silently. Float64 products never use TF32; float32 ones do not while this context is active.
    """
    tf32, precision = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.set_float32_matmul_precision(precision)


@dataclass
class _Engine:
    """Prepared clouds (:func:`_prepare`) and how to run their blocks."""

    means: np.ndarray  # (N, d) normalised means, float64
    traces: np.ndarray  # (N,) tr Sigma, float64
    buckets: list[_Bucket]
    factors: _Factors  # the buckets' padded factors, formed when a block needs them
    device: torch.device
    use_torch: bool  # the batched-torch path (every GPU run; on the CPU when backend="torch")

    @property
    def threads(self) -> int:
        """Worker threads: one per core on the numpy path, one (blocks in turn, batched calls) on the torch path."""
        return 1 if self.use_torch else torch.get_num_threads()


def _engine(clouds, *, normalize: bool, device, dtype, backend: str, bucket_tolerance: float) -> _Engine:
    """Validate the engine's options, then prepare the clouds."""
    device, dtype = as_device(device), as_dtype(dtype)
    normalize, bucket_tolerance = as_bool(normalize, "normalize"), as_number(bucket_tolerance, "bucket_tolerance")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}: 'auto' takes "
                         "numpy on the CPU and torch on a GPU.")
    if backend == "numpy" and device.type != "cpu":
        raise ValueError(f"backend='numpy' runs on the CPU only, but device is {str(device)!r}; "
                         "use backend='auto' or 'torch' there.")
    use_torch = backend == "torch" or device.type != "cpu"
    means, traces, buckets, compact = _prepare(clouds, normalize, bucket_tolerance)
    return _Engine(means, traces, buckets, _Factors(compact, normalize, device, dtype), device, use_torch)


def _run_blocks(engine: _Engine, pairs: np.ndarray | None, block_elems: int, consume, bar) -> None:
    """Compute every pair (``pairs=None``: all ``i < j``) block by block and hand each block to ``consume``.

    ``consume(positions, i, j, d_mu, d_sigma, socm)`` receives one block's pairs (``positions`` index
    them in ``pairs``, or in the order of :func:`all_pairs`); calls never overlap, and nothing of a
    block is kept once it returns, so memory is bounded by the block size, not by the number of pairs.

    On the numpy path the blocks run in one thread per core, in the order of :func:`_visit_key`, each with a
    single-threaded BLAS: numpy's matrix products and LAPACK calls release the GIL, so while one core
    multiplies, another takes SVDs, and no core waits for a shared step to finish. On the torch path
    (every GPU run) the blocks run one after another, each as batched calls.
    """
    if pairs is None:
        blocks = _all_pair_blocks(engine.buckets, engine.factors, engine.means, block_elems, engine.use_torch)
    else:
        blocks = _listed_pair_blocks(engine.buckets, engine.factors, engine.means, pairs, block_elems,
                                     engine.use_torch)
    blocks = [block for _, block in sorted(blocks, key=lambda item: item[0])]  # stable: a pair's blocks in turn
    lock = threading.Lock()
    traces = engine.traces

    def run(block) -> int:
        positions, i, j, nuclear, d_mu = block()
        d_sigma = np.maximum(traces[i] + traces[j] - 2.0 * nuclear, 0.0) / 4.0
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
            socm_ = (1.0 - d_mu) * d_sigma
        _require_finite(socm_, lambda k: (f"clouds[{i[k]}]", f"clouds[{j[k]}]"))
        with lock:
            consume(positions, i, j, d_mu, d_sigma, socm_)
        return len(positions)

    threads = min(engine.threads, len(blocks))
    if threads <= 1:
        with _full_precision_matmul():
            for block in blocks:
                bar.update(run(block))
        return
    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(run, block) for block in blocks]
        try:
            for done in as_completed(futures):
                bar.update(done.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _require_finite(socm_: np.ndarray, names) -> None:
    """Refuse a non-finite SOCM, naming the two clouds (``names(k)``) of the first pair ``k`` that has one."""
    bad = np.flatnonzero(~np.isfinite(socm_))
    if len(bad):
        a, b = names(bad[0])
        raise ValueError(f"The pair ({a}, {b}) gives a non-finite SOCM: its clouds are too large for normalize=False "
                         "(d_mu or d_sigma overflows float64). Pass normalize=True (SOCM is then scale-free), or "
                         "rescale the clouds.")


def all_pairs(n_texts: int) -> np.ndarray:
    """Every pair ``(i, j)`` with ``i < j`` in lexicographic order (``scipy.spatial.distance.pdist``'s condensed
    order), shape ``(n(n-1)/2, 2)``."""
    i, j = np.triu_indices(as_int(n_texts, "n_texts", minimum=0), k=1)
    return np.stack([i, j], axis=1)


def condensed_pairs(positions, n_texts: int) -> np.ndarray:
    """The pairs ``(i, j)``, ``i < j``, at ``positions`` of :func:`all_pairs`'s order of ``n_texts`` texts, ``(P, 2)``,
    without forming all pairs.

    Row ``i`` starts at position ``s(i) = i n - i (i + 1) / 2``; ``i`` is the largest row with ``s(i) <= k``
    (found in floating point, then corrected by one where rounding put it off).
    """
    n = as_int(n_texts, "n_texts", minimum=0)
    k = np.asarray(positions, dtype=np.int64)

    def start(row):
        return row * n - row * (row + 1) // 2

    i = (n - 2 - np.floor(np.sqrt(-8.0 * k + 4.0 * n * (n - 1) - 7) / 2 - 0.5)).astype(np.int64)
    i -= start(i) > k
    i += start(i + 1) <= k
    return np.stack([i, k - start(i) + i + 1], axis=1)


def cross_pairs(n_a: int, n_b: int, *, aligned: bool = False) -> np.ndarray:
    """Index pairs into the concatenation ``clouds_a + clouds_b`` of ``n_a`` and ``n_b`` clouds, shape ``(P, 2)``.

    Every ``(a, b)``, ``a < n_a`` and ``b < n_b``, as ``(a, n_a + b)`` in row-major order
    (``scipy.spatial.distance.cdist(...).ravel()``'s order, ``P = n_a n_b``); with ``aligned=True`` only
    ``(k, n_a + k)`` for ``k < n_a`` (``n_a == n_b`` required).
    """
    n_a, n_b = as_int(n_a, "n_a", minimum=1), as_int(n_b, "n_b", minimum=1)
    if as_bool(aligned, "aligned"):
        if n_a != n_b:
            raise ValueError(f"aligned=True pairs the k-th cloud of each set, but the sets have {n_a} and {n_b} "
                             "clouds; pass sets of the same length, or aligned=False for every pair (a, b).")
        a = np.arange(n_a)
        return np.stack([a, a + n_a], axis=1)
    a, b = np.divmod(np.arange(n_a * n_b), n_b)
    return np.stack([a, b + n_a], axis=1)


class InsufficientMemoryError(MemoryError, ValueError):
    """The per-pair results would not fit in the memory this machine has free (see :func:`socm_pairs`)."""


#: Files that hold a container's memory limit and current use: cgroup v2, then cgroup v1.
CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _read_int(path: str) -> int | None:
    """The integer in a one-line file, or ``None`` if absent, unreadable or ``max`` (no limit)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_available() -> int | None:
    """Bytes left under this process's cgroup memory limit (limit minus use), or ``None`` without a limit."""
    for limit_file, usage_file in CGROUP_FILES:
        limit = _read_int(limit_file)
        if limit is not None and limit < 1 << 60:  # v1 writes a huge number for "no limit"
            return max(limit - (_read_int(usage_file) or 0), 0)
    return None


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: the smaller of ``MemAvailable`` of ``/proc/meminfo``
    (else the free physical pages, ``os.sysconf``) and what a container's cgroup limit leaves (v2
    ``memory.max`` minus ``memory.current``, or v1 ``memory.limit_in_bytes`` minus ``memory.usage_in_bytes``);
    ``None`` where none can be read."""
    host = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    host = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if host is None:
        try:
            host = int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    known = [m for m in (host, _cgroup_available()) if m is not None]
    return min(known) if known else None


def block_bytes(engine: _Engine, block_elems: int) -> int:
    r"""Bytes one worker holds for the largest block it can have in flight (entries counted at 8 bytes, float64).

    * The block's cross-Grams, ``p x q`` per pair: at most ``block_elems`` entries, but never less than one text
      against a whole bucket (all pairs: :math:`L \max_b n_b L_b` entries, ``L`` the tallest padded factor)
      or one pair (listed pairs: :math:`L^2`), held twice (the product and its copy: the pairs above the diagonal
      of one bucket, or the contiguous batch of the torch path).
    * The factors gathered for listed pairs: at most ``max(4 block_elems, 2 L d)`` entries.
    * The SVD's workspace: on the numpy path LAPACK takes one matrix at a time (a copy, ``L^2``, and ``gesdd``'s
      work, under ``8 L``); on the torch path the batched Jacobi (:mod:`socm_lib.jacobi`) holds about six copies
      of the batch (scaled, rotated, permuted and the temporaries of one step), ``torch.linalg.svdvals`` one.
    * Forming one text's factor (:func:`_factor`): float64 copies of the cloud, centred, summed, its Helmert rows
      and their QR workspace, under ``6 n d`` entries for the longest text's ``n`` tokens.
    """
    buckets, factors = engine.buckets, engine.factors
    L, d = max(B.rows for B in buckets), factors.d
    cross = max(block_elems, L * max(len(B.members) * B.rows for B in buckets))
    gathered = max(4 * block_elems, 2 * L * d)
    svd = 6 * cross if engine.use_torch else L * L + 8 * L
    forming = 6 * max(x.shape[0] for x in factors.clouds) * d
    return (2 * cross + gathered + svd + forming) * max(factors.itemsize, 8)


def memory_estimate(n_pairs: int, engine: _Engine, block_elems: int) -> int:
    """Bytes :func:`socm_pairs` allocates beyond the prepared clouds: :data:`BYTES_PER_PAIR` per pair, the
    factor cache (:data:`FACTOR_CACHE_BYTES`, or all buckets if less) and each worker's block in flight
    (:func:`block_bytes`: cross-Grams, their copies, gathered factors, the SVD's workspace), which grows with
    the token count (up to ``d``: no factor has more than ``min(n - 1, d)`` rows)."""
    factors = engine.factors
    cache = min(factors.capacity, sum(factors.nbytes(B) for B in engine.buckets))
    return n_pairs * BYTES_PER_PAIR + cache + engine.threads * block_bytes(engine, block_elems)


def require_memory(need: int, what: str, advice: str) -> None:
    """Raise :class:`InsufficientMemoryError` when ``need`` bytes exceed :func:`available_memory`."""
    free = available_memory()
    if free is not None and need > free:
        gib = 2.0**30
        raise InsufficientMemoryError(f"{what} would need about {need / gib:.1f} GiB, but only {free / gib:.1f} GiB "
                                      f"is available. {advice}")


def socm_pairs(
    clouds,
    pairs=None,
    *,
    normalize: bool = True,
    device=None,
    dtype: torch.dtype = torch.float64,
    backend: str = "auto",
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
        ``None`` for every pair ``i < j`` in lexicographic order, which is the condensed order of
        ``scipy.spatial.distance.pdist`` (so ``scipy.spatial.distance.squareform(result.socm)`` is the
        ``N x N`` matrix), or a ``(P, 2)`` array of index pairs.
    normalize
        Divide each cloud by the norm of its mean first (the paper's convention).
    device
        ``"cpu"``, ``"cuda"``, a ``torch.device``, or ``None`` for the GPU when one is present
        (checked up front by :func:`socm_lib.checks.as_device`).
    dtype
        Precision of the cross-Gram products and singular values. float64 (the default) is exact
        to round-off on every device; float32 is faster, on a GPU much faster, and good to about
        1e-6. TF32 is switched off while the engine runs, so float32 products stay float32.
    backend
        ``"auto"`` (numpy on the CPU, torch on a GPU), ``"numpy"`` (CPU only) or ``"torch"``: the
        batched-torch path a GPU takes (torch matmul, batched singular values: :data:`TORCH_SVD`, blocks
        one after another), on any device; on the CPU it serves to test that path.
    bucket_tolerance
        Texts whose lengths differ by at most this fraction share a padded bucket.
    block_elems
        Largest number of cross-Gram entries held at once per worker (bounds the working memory).
    progress
        Show a progress bar on stderr (``True`` or ``False``); ``None`` shows one for more than
        :data:`~socm_lib.checks.PROGRESS_PAIRS` (20,000) pairs.

    Integer options must be integers (a numpy integer will do, a ``bool`` will not), ``dtype`` may be
    given as ``torch.float32``, ``numpy.float32`` or ``"float32"`` (:func:`socm_lib.checks.as_dtype`).

    On the CPU the numpy path runs in ``torch.get_num_threads()`` threads (``torch.set_num_threads``
    changes it). The results take about :data:`BYTES_PER_PAIR` bytes a pair (16 GB for all pairs of
    20,000 texts); when :func:`memory_estimate` exceeds :func:`available_memory` the call raises
    :class:`InsufficientMemoryError` before allocating, and :func:`socm_lib.socm_summary` is the way.

    A one-token cloud has :math:`\Sigma = 0`; then :math:`d_\Sigma = \operatorname{tr}\Sigma_2/4`,
    the other text's spread alone. :math:`d_\Sigma` is clamped at 0 against round-off below zero.
    """
    return _socm_pairs(clouds, pairs, normalize=normalize, device=device, dtype=dtype, backend=backend,
                       bucket_tolerance=bucket_tolerance, block_elems=block_elems, progress=progress)


def _socm_pairs(clouds, pairs, *, normalize, device, dtype, backend, bucket_tolerance, block_elems, progress,
                caller: str = "socm_pairs") -> PairResult:
    """:func:`socm_pairs`, its errors naming ``caller`` (the public function the user called)."""
    block_elems, progress = as_int(block_elems, "block_elems", minimum=1), as_progress(progress)
    engine = _engine(clouds, normalize=normalize, device=device, dtype=dtype, backend=backend,
                     bucket_tolerance=bucket_tolerance)
    n = len(engine.means)
    pairs, n_pairs = as_pair_set(pairs, n)
    listed = pairs is not None
    require_memory(memory_estimate(n_pairs, engine, block_elems),
                   f"{caller} of {n_pairs:,} pairs ({BYTES_PER_PAIR} bytes a pair for the per-pair results, plus block "
                   "buffers)",
                   "Use socm_lib.socm_summary (means, median, histograms and the most/least collapsed pairs in memory "
                   f"bounded by the block size), or pass a sample of pairs (pairs=(P, 2) array) to {caller}.")
    d_mu, d_sigma, socm_ = np.empty(n_pairs), np.empty(n_pairs), np.empty(n_pairs)

    def fill(positions, i, j, block_d_mu, block_d_sigma, block_socm):
        d_mu[positions], d_sigma[positions], socm_[positions] = block_d_mu, block_d_sigma, block_socm

    show = show_progress(progress, n_pairs)
    with tqdm(total=n_pairs, disable=not show, file=sys.stderr, unit="pair", desc="SOCM") as bar:
        _run_blocks(engine, pairs if listed else None, block_elems, fill, bar)
    pairs = pairs if listed else all_pairs(n)
    return PairResult(i=pairs[:, 0].copy(), j=pairs[:, 1].copy(), d_mu=d_mu, d_sigma=d_sigma, socm=socm_)


def socm_cross(clouds_a, clouds_b, *, aligned: bool = False, **options) -> PairResult:
    r"""SOCM between two sets of clouds, like ``scipy.spatial.distance.cdist``: every pair ``(a, b)``.

    ``result.i`` indexes ``clouds_a`` and ``result.j`` indexes ``clouds_b``; the pairs come in row-major
    order (:func:`cross_pairs`), so ``result.socm.reshape(len(clouds_a), len(clouds_b))`` is the
    matrix of ``cdist``. With ``aligned=True`` only the pairs ``(k, k)`` are taken (the two sets must
    have the same length): ``result.socm[k]`` is SOCM of ``clouds_a[k]`` and ``clouds_b[k]``.

    ``options`` are those of :func:`socm_pairs` (``normalize``, ``device``, ``dtype``, ``backend``,
    ``bucket_tolerance``, ``block_elems``, ``progress``); the pairs run through its engine, on the
    clouds of both sets together.
    """
    if "pairs" in options:
        raise TypeError("socm_cross takes no pairs: it measures every pair (a, b), or with aligned=True every "
                        "(k, k); for other pairs use socm_pairs(clouds_a + clouds_b, pairs).")
    aligned = as_bool(aligned, "aligned")
    unknown = sorted(set(options) - {"normalize", "device", "dtype", "backend", "bucket_tolerance", "block_elems",
                                     "progress"})
    if unknown:
        raise TypeError(f"socm_cross got unknown option(s) {unknown}; it takes normalize, device, dtype, backend, "
                        "bucket_tolerance, block_elems and progress.")
    A, B = as_clouds(clouds_a, "clouds_a"), as_clouds(clouds_b, "clouds_b")
    if A[0].shape[1] != B[0].shape[1]:
        raise ValueError(f"clouds_a have d = {A[0].shape[1]} but clouds_b have d = {B[0].shape[1]}; both sets must "
                         "come from the same encoder and layer.")
    normalize = as_bool(options.get("normalize", True), "normalize")
    for name, clouds in (("clouds_a", A), ("clouds_b", B)):  # a cloud the engine refuses, named as the caller knows it
        for k, x in enumerate(clouds):
            _factor(x, normalize, f"{name}[{k}]")
    options = {"normalize": True, "device": None, "dtype": torch.float64, "backend": "auto", "bucket_tolerance": 0.05,
               "block_elems": 1 << 22, "progress": None, **options}
    result = _socm_pairs(A + B, cross_pairs(len(A), len(B), aligned=aligned), caller="socm_cross", **options)
    result.j -= len(A)
    return result


def socm(X1, X2, *, normalize: bool = True) -> SOCMResult:
    r"""SOCM of two token clouds: :math:`(1-d_\mu)\,d_\Sigma` (Definition ``def-ch03-socm``).

    ``X1`` and ``X2`` are ``(n, d)`` numpy arrays or torch tensors. With ``normalize=True`` each cloud
    is first divided by the norm of its mean, as in Hara et al. (2026). One pair takes a direct path
    (one SVD of the small cross-Gram :math:`A_1 A_2^\top`, float64 on the CPU) with the same factors as
    :func:`socm_pairs`, without the batched engine's buckets and threads: at most ``d x d``, however long the
    clouds, since a cloud with more tokens than dimensions is first shortened to the ``d`` rows of a QR factor
    with the same covariance (:func:`_shortened`).
    """
    normalize = as_bool(normalize, "normalize")
    X = [as_cloud(x, f"X{k + 1}") for k, x in enumerate((X1, X2))]
    if X[0].shape[1] != X[1].shape[1]:
        raise ValueError(f"X2 has d = {X[1].shape[1]} but X1 has d = {X[0].shape[1]}; both clouds must come from "
                         "the same encoder and layer.")
    (m1, A), (m2, B) = (_factor(x, normalize, f"X{k + 1}") for k, x in enumerate(X))
    nuclear = float(np.linalg.svd(A.numpy() @ B.numpy().T, compute_uv=False).sum()) if len(A) and len(B) else 0.0
    d_sigma = max(float((A * A).sum()) + float((B * B).sum()) - 2.0 * nuclear, 0.0) / 4.0
    d_mu = float(((m1 - m2) ** 2).sum()) / 4.0
    _require_finite(np.array([(1.0 - d_mu) * d_sigma]), lambda k: ("X1", "X2"))
    return SOCMResult(d_mu=d_mu, d_sigma=d_sigma, socm=(1.0 - d_mu) * d_sigma)
