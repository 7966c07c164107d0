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
* the clouds stay as they came (float32 from the encoders: validated, never copied to float64); :func:`prepare`
  forms each factor once for its trace and keeps only what forms it again with no reduction (the cloud's unit scale,
  centre and scale: :class:`Prepared`); a bucket's float64 factors, padded, are formed only when a block needs them
  (:class:`BucketData`: with the bucket's means and traces, all that a block reads), clouds of one length together,
  and kept in a small least-recently-used cache (:class:`FactorCache`, :data:`FACTOR_CACHE_BYTES`); a block of a
  sparse list of pairs forms its own texts alone instead (:meth:`FactorCache.form`). The numbers are those of
  forming every bucket up front, bit for bit: every step of forming is exact or the same reduction on the same
  cloud (:func:`factor` forms one cloud the same way); only the memory and the time differ.

What the other modules of the engine use: :func:`prepare` (:class:`Prepared`), :class:`Bucket`, :class:`BucketData`,
:class:`FactorCache` and :func:`factor` (one cloud's, for :func:`socm_lib.socm`).
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .checks import as_clouds
from .memo import LRUCache
from .stats import scaled_mean, unit_powers

#: Bytes of bucket data (:class:`FactorCache`) kept between blocks, least recently used dropped first; blocks in
#: flight may hold one or two buckets more. The visiting order (:func:`socm_lib.block_plan.plan_blocks`) works
#: through tiles of buckets of half this size.
FACTOR_CACHE_BYTES = 1 << 27
#: Most cloud entries formed together: clouds of one length are formed in batches of about this many entries (float64,
#: 1 MiB), each step one numpy call for the whole batch, in memory each thread reuses.
FORMING_ELEMS = 1 << 17


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
    """The clouds prepared for the engine (:func:`prepare`): what forms each text's factor again, and its trace."""

    centres: np.ndarray  # (N, d) the mean of each cloud brought to unit scale, float64
    units: np.ndarray  # (N,) the power of two each cloud is divided by to bring it to unit scale
    scales: np.ndarray  # (N,) what a centre is multiplied by for the engine's mean m: 1/||centre||, or the unit
    traces: np.ndarray  # (N,) tr Sigma, float64
    buckets: list[Bucket]  # shortest texts first
    clouds: list[torch.Tensor]  # validated, each in the dtype it came in

    def means(self, texts=slice(None)) -> np.ndarray:
        """The (normalised) means ``m`` of ``texts`` (an index array; every text by default), ``(texts, d)`` float64:
        each centre times its scale, as :func:`factor` forms them."""
        return self.centres[texts] * self.scales[texts, None]


def length_buckets(lengths: np.ndarray, tolerance: float) -> list[np.ndarray]:
    """Group text indices by token count: a bucket's longest text has at most ``(1 + tolerance)`` x its shortest."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    for k in range(1, len(order) + 1):
        if k == len(order) or lengths[order[k]] > max(lengths[order[start]] * (1 + tolerance), lengths[order[start]]):
            groups.append(order[start:k])
            start = k
    return groups


@functools.lru_cache(maxsize=1024)
def _helmert_weights(n: int) -> tuple[np.ndarray, np.ndarray]:
    r"""``(k, sqrt(k (k + 1)))`` for :math:`k = 1, \dots, n - 1`, float64 arrays ``(n - 1, 1, 1)``: the square roots
    are ``torch.sqrt``'s, which on some CPUs (AVX-512) is not correctly rounded, so that the factors stay those the
    engine has always formed, bit for bit."""
    k = torch.arange(1, n, dtype=torch.float64)[:, None]
    return k.numpy()[:, :, None], torch.sqrt(k * (k + 1)).numpy()[:, :, None]


def helmert_rows(C: np.ndarray, out: np.ndarray) -> np.ndarray:
    r"""Rows :math:`HC` of centred clouds ``C`` (``(n, k, d)`` float64: token first, then cloud), with :math:`H` the
    ``(n-1) x n`` Helmert matrix, written to ``out`` (``(n - 1, k, d)``) and returned; ``C`` is overwritten.

    The rows of :math:`H` are an orthonormal basis of the vectors orthogonal to :math:`\mathbf 1`, so
    :math:`H^\top H = I - \mathbf 1\mathbf 1^\top/n` and :math:`(HC)^\top HC = C^\top C`: the same
    covariance from ``n - 1`` rows instead of ``n``. Row ``j`` is
    :math:`(c_1 + \dots + c_j - j\,c_{j+1})/\sqrt{j(j+1)}`; its prefix sums are added one token after another
    from 0 (the order of ``torch.cumsum``), each step one call for the tokens of all ``k`` clouds.
    """
    n = C.shape[0]
    if n > 1:
        np.add(0.0, C[0], out=out[0])
    for r in range(1, n - 1):
        np.add(out[r - 1], C[r], out=out[r])
    k, root = _helmert_weights(n)
    out -= np.multiply(C[1:], k, out=C[1:])
    out /= root
    return out


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


class _Scratch(threading.local):
    """Arrays that each thread reuses while it forms factors, one for each role (the clouds, at unit scale, centred,
    their factors), each of :data:`FORMING_ELEMS` entries: new memory costs a page fault for every 4 KiB first written,
    more than the arithmetic of forming. A batch larger than that (one long cloud) takes new memory, not kept."""

    def __init__(self):
        self.buffers: dict[str, np.ndarray] = {}

    def __call__(self, role: str, shape: tuple[int, ...]) -> np.ndarray:
        """A float64 array of ``shape`` for ``role``, valid until this thread asks for ``role`` again."""
        size = math.prod(shape)
        if size > FORMING_ELEMS:
            return np.empty(shape)
        if role not in self.buffers:
            self.buffers[role] = np.empty(FORMING_ELEMS)
        return self.buffers[role][:size].reshape(shape)


_scratch = _Scratch()


def _same_length_batches(clouds: list[torch.Tensor], texts: np.ndarray):
    """``texts`` (indices into ``clouds``) in batches of clouds with the same token count, each at most about
    :data:`FORMING_ELEMS` entries (at least one cloud): ``(batch, X)`` with ``X`` the ``(k, n, d)`` float64 stack of
    the batch's clouds (scratch memory: valid until the next batch)."""
    counts = np.array([clouds[t].shape[0] for t in texts], dtype=np.int64)
    d = clouds[0].shape[1]
    for n in np.unique(counts):
        same = texts[counts == n]
        step = max(1, FORMING_ELEMS // (int(n) * d))
        for k0 in range(0, len(same), step):
            batch = same[k0 : k0 + step]
            yield batch, np.stack([clouds[t].numpy() for t in batch], out=_scratch("clouds", (len(batch), int(n), d)))


def _factors(X: np.ndarray, units: np.ndarray, centres: np.ndarray, scales: np.ndarray) -> np.ndarray:
    r""":math:`A = H(Y - \mathbf 1\mu^\top)\cdot \mathrm{scale}/\sqrt n` of each cloud of a batch, with
    :math:`Y = X/s` at unit scale (``X``: ``(k, n, d)`` float64; ``units`` :math:`s`, ``centres`` :math:`\mu`
    ``(k, d)`` and ``scales`` from :func:`_statistics`), ``(k, n - 1, d)`` (scratch memory, valid until the next
    batch): the Helmert rows of the centred clouds (:func:`helmert_rows`, token first), scaled into each cloud's
    own rows."""
    k, n, d = X.shape
    C = np.divide(X.transpose(1, 0, 2), units[:, None], out=_scratch("centred", (n, k, d)))
    C -= centres
    H = helmert_rows(C, _scratch("helmert", (max(n - 1, 0), k, d)))
    A = _scratch("factors", (k, max(n - 1, 0), d))
    np.multiply(H, (scales / np.sqrt(n))[:, None], out=A.transpose(1, 0, 2))
    return A


def _statistics(X: np.ndarray, normalize: bool, names: list[str]):
    r"""``(units, centres, scales)`` of a batch of clouds ``X`` (``(k, n, d)``, float64): the power of two :math:`s`
    that brings each cloud to unit scale (:func:`socm_lib.stats.unit_powers`), the mean :math:`\mu(X/s)` of each
    (``centres``, ``(k, d)``) and what it is multiplied by for the engine's mean :math:`m`:
    :math:`1/\lVert\mu(X/s)\rVert` with ``normalize``, else :math:`s`. A cloud whose mean cannot be normalised is
    refused, named by ``names`` (the first of the batch, when several are)."""
    units = unit_powers(np.abs(X).max(axis=(1, 2)))
    Y = np.divide(X, units[:, None, None], out=_scratch("unit", X.shape))
    centres, scales = np.empty((len(X), X.shape[2])), units.copy()
    for r, name in enumerate(names):
        cloud = torch.from_numpy(Y[r])
        if normalize:
            mu, norm = scaled_mean(cloud, name)
            scales[r] = 1.0 / float(norm)
        else:
            mu = cloud.mean(dim=0)
        centres[r] = mu.numpy()
    return units, centres, scales


def _checked(A: np.ndarray, m: np.ndarray | None, name: str) -> torch.Tensor:
    """One cloud's factor ``A`` (``(n - 1, d)``, contiguous) as a tensor, shortened (:func:`shortened`; ``A`` itself
    unless the cloud is long); without normalisation (``m``: the mean, ``None`` when normalising) a mean or factor
    that overflows float64 is refused, naming the cloud ``name``."""
    A = torch.from_numpy(A)
    if m is not None and not (bool(np.isfinite(m).all()) and bool(torch.isfinite((A * A).sum()))):
        raise ValueError(f"{name} is too large for normalize=False: its mean or spread overflows float64. Pass "
                         "normalize=True (SOCM is then scale-free), or rescale the clouds.")
    return shortened(A)


def factor(x: torch.Tensor, normalize: bool, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(m, A)`` of one float64 cloud: the (normalised) mean ``(d,)`` and a factor of :math:`\Sigma` with
    ``min(n - 1, d)`` rows: the ``n - 1`` scaled Helmert rows, shortened to ``d`` rows for a long cloud
    (:func:`shortened`); the numbers of :func:`prepare` and :class:`FactorCache` for that cloud, bit for bit.

    Formed from the cloud brought to unit scale (:func:`socm_lib.stats.unit_scale`, exact), so no sum overflows
    or underflows; without normalisation the scale is put back, and a factor that then overflows is refused,
    naming the cloud ``name``.
    """
    X = np.ascontiguousarray(x.numpy())[None]
    units, centres, scales = _statistics(X, normalize, [name])
    m = centres[0] * scales[0]
    return torch.from_numpy(m), _checked(_factors(X, units, centres, scales)[0].copy(), None if normalize else m, name)


def prepare(clouds, normalize: bool, tolerance: float,
            name: Callable[[int], str] = lambda k: f"clouds[{k}]") -> Prepared:
    """The clouds prepared for the engine (:class:`Prepared`): each text's unit scale, centre and scale (what forms its
    factor again, :class:`FactorCache`), its trace ``tr Sigma``, the length buckets and the validated clouds, each
    kept in the dtype it came in (:func:`socm_lib.checks.as_clouds` with ``compact=True``).

    Each text's ``A`` is stored as its ``n - 1`` Helmert rows (:func:`helmert_rows`), or the ``d`` rows of their
    QR factor ``R`` for a long cloud (:func:`shortened`), which have the same Gram matrix ``A^T A = Sigma`` and
    so the same cross-Gram singular values, at lower cost; here they are formed, clouds of one length together,
    for the traces and dropped. A cloud the engine cannot take is refused here (the first in order, when several
    are), named by ``name(k)`` (``clouds[k]`` unless the caller knows it otherwise).
    """
    X = as_clouds(clouds, compact=True)
    N, d = len(X), X[0].shape[1]
    units, scales, traces, centres = np.empty(N), np.empty(N), np.empty(N), np.empty((N, d))
    refused = {}
    for batch, stack in _same_length_batches(X, np.arange(N)):
        try:
            units[batch], centres[batch], scales[batch] = _statistics(stack, normalize, [name(k) for k in batch])
            A = _factors(stack, units[batch], centres[batch], scales[batch])
            for r, k in enumerate(batch):
                R = _checked(A[r], None if normalize else centres[k] * scales[k], name(k))
                traces[k] = float((R * R).sum())
        except ValueError as error:
            k, error = _first_refused(X, batch, normalize, name, error)
            refused[k] = error
    if refused:
        raise refused[min(refused)]
    row_counts = np.array([max(min(x.shape[0] - 1, d), 1) for x in X])  # a one-token text keeps one zero row
    buckets = [Bucket(b, np.sort(members), int(row_counts[members].max()))  # in text order: see block_math
               for b, members in enumerate(length_buckets(row_counts, tolerance))]
    return Prepared(centres, units, scales, traces, buckets, X)


def _first_refused(X: list[torch.Tensor], batch: np.ndarray, normalize: bool, name,
                   error: ValueError) -> tuple[int, ValueError]:
    """``(k, refusal)``: the first cloud of ``batch`` that :func:`factor` refuses alone, and its refusal (``batch[0]``
    and ``error``, the batch's, if none does)."""
    for k in batch:
        try:
            factor(X[k].to(torch.float64), normalize, name(k))
        except ValueError as alone:
            return int(k), alone
    return int(batch[0]), error


class FactorCache:
    """Each bucket's :class:`BucketData`, its padded factors ``A`` (``(texts, L, d)`` on the engine's device and
    dtype) formed when asked for.

    A bucket's tensor is formed from the compact clouds exactly as if every bucket were formed up front (each text's
    factor as :func:`factor` forms it, from the unit scale, centre and scale that :func:`prepare` recorded, clouds of
    one length together; zero-padded, then moved to the device and dtype), and kept in a least-recently-used cache
    (:class:`socm_lib.memo.LRUCache`) of at most ``capacity`` bytes (default :data:`FACTOR_CACHE_BYTES`; the latest
    always stays). Thread safe: a bucket asked for by two workers at once is formed once.
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

    def form(self, bucket: Bucket, texts: np.ndarray | None = None) -> BucketData:
        """The data of ``bucket``'s ``texts`` (increasing; all its members by default), formed anew and not cached: what
        :mod:`socm_lib.distributed` sends to a cluster, and what a block of a sparse list forms for itself (its own
        texts). Every factor is padded to the bucket's height, so a pair's numbers do not depend on which other texts
        were formed with it."""
        texts = bucket.members if texts is None else texts
        p = self.prepared
        padded = np.zeros((len(texts), bucket.rows, self.d))
        for batch, X in _same_length_batches(p.clouds, texts):
            A = _factors(X, p.units[batch], p.centres[batch], p.scales[batch])
            slots = np.searchsorted(texts, batch)
            if A.shape[1] <= self.d:
                padded[slots, : A.shape[1]] = A
                continue
            for slot, rows in zip(slots, A):  # long clouds: each shortened to its d x d factor
                padded[slot] = shortened(torch.from_numpy(rows))
        return BucketData(texts, p.means(texts), p.traces[texts],
                          torch.from_numpy(padded).to(device=self.device, dtype=self.dtype))
