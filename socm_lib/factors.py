r"""Each text's factor of :math:`\Sigma` and the length buckets the engine pads them into (book, Chapter 6).

For a text with ``n`` tokens (rows of ``X``), after dividing every token by :math:`\lVert\mu(X)\rVert` when
``normalize=True``, :math:`m = \mu(X)` and :math:`A = (X - \mathbf 1 m^\top)/\sqrt n`, so :math:`\Sigma = A^\top A`.
The engine never forms :math:`A` itself:

* its ``n - 1`` Helmert rows (:func:`helmert_rows`) have the same Gram matrix, one row fewer;
* a long cloud (more tokens than dimensions) is represented by the ``d x d`` triangular factor of the QR
  decomposition of those rows (same :math:`\Sigma`, so the same nuclear norms: :func:`shortened`), so no factor has
  more than ``min(n - 1, d)`` rows and no cross-Gram is larger than ``d x d``;
* texts are sorted by row count and grouped into *buckets* of similar length (:func:`length_buckets`,
  :class:`Bucket`); each bucket is one zero-padded tensor ``(texts, L, d)``. Zero rows add only zero singular values,
  so padding changes nothing (Theorem ``thm-ch06-padding``);
* the clouds stay as they came (float32 from the encoders: validated, never copied to float64); a bucket's float64
  factors, padded, are formed only when a block needs them (:class:`BucketData`: with the bucket's means and traces,
  all that a block reads) and kept in a small least-recently-used cache (:class:`FactorCache`,
  :data:`FACTOR_CACHE_BYTES`). The numbers are those of forming every bucket up front, bit for bit; only the memory
  differs.

What the other modules of the engine use: :func:`prepare` (means, traces, buckets: :class:`Prepared`), :class:`Bucket`,
:class:`BucketData`, :class:`FactorCache` and :func:`factor` (one cloud's, for :func:`socm_lib.socm`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .checks import as_clouds
from .memo import LRUCache
from .stats import normalized_mean_and_scale, unit_scale

#: Bytes of bucket data (:class:`FactorCache`) kept between blocks, least recently used dropped first; blocks in
#: flight may hold one or two buckets more. The visiting order (:func:`socm_lib.block_plan.plan_blocks`) works
#: through tiles of buckets of half this size.
FACTOR_CACHE_BYTES = 1 << 27


@dataclass(frozen=True)
class Bucket:
    """Texts of similar length, padded to one height: a piece of the engine's layout (numbers only)."""

    index: int  # position in the engine's list of buckets (shortest texts first)
    members: np.ndarray  # global indices of the texts in this bucket, increasing
    rows: int  # L: each text's factor is zero-padded to L rows


@dataclass(frozen=True)
class BucketData:
    """All that a block reads of one bucket: its texts, their normalised means ``(texts, d)`` and traces
    :math:`\operatorname{tr}\Sigma` ``(texts,)`` (float64 numpy), and their padded factors ``(texts, L, d)`` (a tensor
    on the engine's device, in its dtype)."""

    members: np.ndarray
    means: np.ndarray
    traces: np.ndarray
    factors: torch.Tensor


@dataclass(frozen=True)
class Prepared:
    """The clouds prepared for the engine (:func:`prepare`)."""

    means: np.ndarray  # (N, d) normalised means, float64
    traces: np.ndarray  # (N,) tr Sigma, float64
    buckets: list[Bucket]  # shortest texts first
    clouds: list[torch.Tensor]  # validated, each in the dtype it came in


def length_buckets(lengths: np.ndarray, tolerance: float) -> list[np.ndarray]:
    """Group text indices by token count: a bucket's longest text has at most ``(1 + tolerance)`` x its shortest."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    for k in range(1, len(order) + 1):
        if k == len(order) or lengths[order[k]] > max(lengths[order[start]] * (1 + tolerance), lengths[order[start]]):
            groups.append(order[start:k])
            start = k
    return groups


def helmert_rows(C: torch.Tensor) -> torch.Tensor:
    r"""Rows :math:`HC` for a centred ``C`` (n, d), with :math:`H` the ``(n-1) x n`` Helmert matrix.

    The rows of :math:`H` are an orthonormal basis of the vectors orthogonal to :math:`\mathbf 1`, so
    :math:`H^\top H = I - \mathbf 1\mathbf 1^\top/n` and :math:`(HC)^\top HC = C^\top C`: the same
    covariance from ``n - 1`` rows instead of ``n``. Row ``k`` is
    :math:`(c_1 + \dots + c_k - k\,c_{k+1})/\sqrt{k(k+1)}`.
    """
    k = torch.arange(1, C.shape[0], dtype=C.dtype)[:, None]
    return (C.cumsum(dim=0)[:-1] - k * C[1:]) / torch.sqrt(k * (k + 1))


def shortened(A: torch.Tensor) -> torch.Tensor:
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


def factor(x: torch.Tensor, normalize: bool, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(m, A)`` of one float64 cloud: the (normalised) mean ``(d,)`` and a factor of :math:`\Sigma` with
    ``min(n - 1, d)`` rows: the ``n - 1`` scaled Helmert rows, shortened to ``d`` rows for a long cloud
    (:func:`shortened`).

    Formed from the cloud brought to unit scale (:func:`socm_lib.stats.unit_scale`, exact), so no sum overflows
    or underflows; without normalisation the scale is put back, and a factor that then overflows is refused,
    naming the cloud ``name``.
    """
    x, scale = normalized_mean_and_scale(x, name) if normalize else unit_scale(x)
    mu = x.mean(dim=0)
    m, A = mu * scale, helmert_rows(x - mu) * (scale / np.sqrt(x.shape[0]))
    if not normalize and not (bool(torch.isfinite(m).all()) and bool(torch.isfinite((A * A).sum()))):
        raise ValueError(f"{name} is too large for normalize=False: its mean or spread overflows float64. Pass "
                         "normalize=True (SOCM is then scale-free), or rescale the clouds.")
    return m, shortened(A)


def prepare(clouds, normalize: bool, tolerance: float,
            name: Callable[[int], str] = lambda k: f"clouds[{k}]") -> Prepared:
    """Normalised means ``m`` (N, d) and traces ``tr Sigma`` (N,) as float64 numpy, the length buckets and the
    validated clouds, each kept in the dtype it came in (:func:`socm_lib.checks.as_clouds` with ``compact=True``).

    Each text's ``A`` is stored as its ``n - 1`` Helmert rows (:func:`helmert_rows`), or the ``d`` rows of their
    QR factor ``R`` for a long cloud (:func:`shortened`), which have the same Gram matrix ``A^T A = Sigma`` and
    so the same cross-Gram singular values, at lower cost; here they are formed one text at a time for the traces
    and dropped (:class:`FactorCache` forms them again, bucket by bucket, when blocks need them). A cloud the
    engine cannot take is refused here, named by ``name(k)`` (``clouds[k]`` unless the caller knows it otherwise).
    """
    X = as_clouds(clouds, compact=True)
    means, traces, row_counts = [], [], []
    for k, x in enumerate(X):
        m, A = factor(x.to(torch.float64), normalize, name(k))
        means.append(m)
        traces.append(float((A * A).sum()))
        row_counts.append(max(A.shape[0], 1))  # a one-token text keeps one zero row
    row_counts = np.array(row_counts)
    buckets = [Bucket(b, np.sort(members), int(row_counts[members].max()))  # in text order: see block_math
               for b, members in enumerate(length_buckets(row_counts, tolerance))]
    return Prepared(torch.stack(means).numpy(), np.array(traces), buckets, X)


class FactorCache:
    """Each bucket's :class:`BucketData`, its padded factors ``A`` (``(texts, L, d)`` on the engine's device and
    dtype) formed when asked for.

    A bucket's tensor is formed from the compact clouds exactly as if every bucket were formed up front
    (float64 :func:`factor` of each text, zero-padded, then moved to the device and dtype), and kept
    in a least-recently-used cache (:class:`socm_lib.memo.LRUCache`) of at most ``capacity`` bytes (default
    :data:`FACTOR_CACHE_BYTES`; the latest always stays). Thread safe: a bucket asked for by two workers at
    once is formed once.
    """

    def __init__(self, prepared: Prepared, normalize: bool, device, dtype, capacity: int | None = None):
        self.prepared, self.normalize, self.device, self.dtype = prepared, normalize, device, dtype
        self.d = prepared.clouds[0].shape[1]
        self.itemsize = torch.empty(0, dtype=dtype).element_size()
        self._cache = LRUCache(sys.maxsize, maxbytes=FACTOR_CACHE_BYTES if capacity is None else capacity,
                               sizeof=self._sizeof, keep_latest=True)
        self._lock = threading.Lock()
        self._forming: dict[int, threading.Lock] = {}

    @property
    def capacity(self) -> int:
        """Bytes of bucket data the cache keeps between blocks."""
        return self._cache.maxbytes

    @capacity.setter
    def capacity(self, nbytes: int) -> None:
        self._cache.maxbytes = nbytes

    def nbytes(self, bucket: Bucket) -> int:
        """Bytes of ``bucket``'s data: its padded factors, and its means and traces (float64)."""
        return len(bucket.members) * (bucket.rows * self.d * self.itemsize + (self.d + 1) * 8)

    def _sizeof(self, data: BucketData) -> int:
        return data.factors.numel() * self.itemsize + (data.means.size + data.traces.size) * 8

    def __call__(self, bucket: Bucket) -> BucketData:
        data = self._cache.get(bucket.index)
        if data is not None:
            return data
        with self._lock:
            forming = self._forming.setdefault(bucket.index, threading.Lock())
        with forming:  # a second worker asking for this bucket waits here, then finds it in the cache
            data = self._cache.get(bucket.index)
            if data is None:
                data = self.form(bucket)
                self._cache.put(bucket.index, data)
        return data

    def form(self, bucket: Bucket) -> BucketData:
        """``bucket``'s data, formed anew (not cached): what :mod:`socm_lib.distributed` sends to a cluster."""
        padded = torch.zeros((len(bucket.members), bucket.rows, self.d), dtype=torch.float64)
        for r, g in enumerate(bucket.members):
            A = factor(self.prepared.clouds[g].to(torch.float64), self.normalize, f"clouds[{g}]")[1]
            padded[r, : A.shape[0]] = A
        return BucketData(bucket.members, self.prepared.means[bucket.members], self.prepared.traces[bucket.members],
                          padded.to(device=self.device, dtype=self.dtype))
