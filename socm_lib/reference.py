r"""The slow, obviously-correct references the fast paths are tested and benchmarked against (book, Chapter 6).

Two references, one of each kind, used by the tests and the benchmarks alike:

* **low rank** -- :func:`lowrank_pair` and :func:`lowrank_pairs`: one pair at a time, float64 numpy,
  straight from the definitions. Normalise each cloud by :math:`\lVert\mu(X)\rVert`, centre it, form
  :math:`A = (X - \mathbf 1 m^\top)/\sqrt n`; then :math:`\operatorname{tr}\Sigma = \lVert A\rVert_F^2`,
  the fidelity is :math:`\lVert A B^\top\rVert_*` from one LAPACK SVD of the :math:`n_1 \times n_2` cross-Gram
  (Theorem ``thm-ch06-nuclear``), :math:`d_\Sigma = (\lVert A\rVert_F^2 + \lVert B\rVert_F^2 - 2\lVert AB^\top\rVert_*)/4`
  and :math:`d_\mu = \lVert m_1 - m_2\rVert^2/4`. No batching, no padding, no buckets, no Helmert rows and no
  shared code with :mod:`socm_lib.pairs`: each line is a definition, which is why it is obviously correct.
  Accuracy: float64 round-off, about :math:`10^{-15}` relative on :math:`d_\mu` and on :math:`d_\Sigma` unless
  :math:`d_\Sigma` is tiny next to the traces (then about :math:`10^{-16}(\operatorname{tr}\Sigma_1 + \operatorname{tr}\Sigma_2)`
  absolute), whatever the rank of the clouds.
* **d x d** -- :mod:`socm_lib.bures` (:func:`~socm_lib.bures.psd_sqrt`, :func:`~socm_lib.bures.fidelity`,
  :func:`~socm_lib.bures.bures_wasserstein_sq`): the textbook formula with two symmetric eigendecompositions
  in float64. It shares nothing with the low-rank route, so agreement of the two is evidence for both.
  Accuracy: about :math:`10^{-10}` relative (and better) on full-rank, well-conditioned covariances; on the
  rank-deficient covariances of token clouds (:math:`n \ll d`) the square roots of eigenvalues that should be
  zero carry errors near :math:`\sqrt{\varepsilon_{64}}`, so there it is good only to about :math:`10^{-7}`
  (Chapter 6, Proposition ``prop-ch06-sqrt-error``). Compare at 1e-6 there and use the low-rank
  reference for anything tighter.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from .checks import as_cloud, as_clouds, as_pairs
from .results import PairResult
from .stats import mean_norm


class ReferencePair(NamedTuple):
    """One pair by the low-rank reference: the three figures and the two traces :math:`\\operatorname{tr}\\Sigma_i`."""

    d_mu: float
    d_sigma: float
    socm: float
    trace1: float
    trace2: float


def lowrank_factor(X, normalize: bool = True, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
    """``(A, m)`` of one cloud in float64: ``m`` the (normalised) mean, ``A = (X - 1 m^T)/sqrt(n)``.

    The cloud is checked as every public function checks it (:func:`socm_lib.checks.as_cloud`), and with
    ``normalize`` a mean that vanishes (a centred cloud) is refused as :func:`socm_lib.stats.mean_norm` refuses it,
    whose value, free of overflow, is the divisor.
    """
    t = as_cloud(X, name)
    X = t.numpy()
    if normalize:
        X = X / float(mean_norm(t, name))
    m = X.mean(axis=0)
    return (X - m) / np.sqrt(X.shape[0]), m


def _pair(A: np.ndarray, m1: np.ndarray, B: np.ndarray, m2: np.ndarray) -> ReferencePair:
    """The figures of one pair from its factors and means (one SVD of ``A B^T``); ``d_sigma`` clamped at 0."""
    nuclear = float(np.linalg.svd(A @ B.T, compute_uv=False).sum())
    tr1, tr2 = float(np.sum(A * A)), float(np.sum(B * B))
    d_sigma = max(tr1 + tr2 - 2.0 * nuclear, 0.0) / 4.0
    d_mu = float(np.sum((m1 - m2) ** 2)) / 4.0
    if not np.isfinite([tr1, tr2, nuclear, d_mu]).all():
        raise ValueError("The pair's traces or mean distance overflow float64 (clouds of entries near 1e154 or "
                         "more, with normalize=False); rescale the clouds or normalise them.")
    return ReferencePair(d_mu, d_sigma, (1.0 - d_mu) * d_sigma, tr1, tr2)


def lowrank_pair(X1, X2, normalize: bool = True) -> ReferencePair:
    """:math:`d_\\mu`, :math:`d_\\Sigma`, SOCM and both traces of one pair of ``(n_i, d)`` clouds, float64, from the definitions."""
    (A, m1), (B, m2) = lowrank_factor(X1, normalize, "X1"), lowrank_factor(X2, normalize, "X2")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"X1 has d = {A.shape[1]} but X2 has d = {B.shape[1]}; both clouds must have the same d.")
    return _pair(A, m1, B, m2)


def _chunk(args) -> np.ndarray:
    """Rows ``(d_mu, d_sigma, socm)`` of the given pairs."""
    factors, pairs = args
    return np.array([_pair(*factors[i], *factors[j])[:3] for i, j in pairs]).reshape(-1, 3)


def _one_thread_worker() -> None:
    """Limit a worker process of :func:`lowrank_pairs` to one thread (BLAS and OpenMP): its own setting, not the
    caller's."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def lowrank_pairs(clouds, pairs, workers: int | None = None, normalize: bool = True) -> PairResult:
    """:func:`lowrank_pair` for every pair ``(i, j)`` of ``pairs`` (a ``(P, 2)`` array), as a :class:`~socm_lib.PairResult`.

    Each cloud's factor is formed once; each pair then takes one SVD. Lists of more than 2,000 pairs are split
    over ``workers`` processes (default: the CPU count; forked, so POSIX only), one BLAS thread each; a shorter
    list is computed in the calling thread, whose thread settings are left as they are.
    """
    factors = [lowrank_factor(X, normalize, f"clouds[{k}]") for k, X in enumerate(as_clouds(clouds))]
    pairs = as_pairs(pairs, len(factors))
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(pairs) < 2000:
        rows = _chunk((factors, pairs))
    else:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers, initializer=_one_thread_worker) as pool:
            rows = np.concatenate(pool.map(_chunk, [(factors, c) for c in np.array_split(pairs, workers * 4)]))
    i, j = pairs[:, 0], pairs[:, 1]
    return PairResult(i=i.copy(), j=j.copy(), d_mu=rows[:, 0], d_sigma=rows[:, 1], socm=rows[:, 2])
