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

How the engine is fast and still exact, one job per module, each calling only the public names of those below it:

* :mod:`socm_lib.factors`: each text's ``A`` as its Helmert rows, or the ``d`` rows of their QR factor for a
  long cloud, grouped into zero-padded buckets of similar length (padding adds only zero singular values);
* :mod:`socm_lib.block_plan`: the pairs cut into blocks of bounded size (all pairs, listed pairs, grids of
  listed pairs), visited so that each bucket is formed a few times, not once per block: a plan that is data;
* :mod:`socm_lib.block_math`: one block's cross-Grams from one large matrix product, and their nuclear norms
  (singular values of :math:`AB^\top` itself, never of its square; float64 by default) on the numpy or torch path,
  and each pair's figures by the one formula of :func:`socm_lib.results.pair_figures`;
* :mod:`socm_lib.block_runner`: the blocks run on every core (CPU) or one after another as batched calls (GPU),
  each block's pairs handed to a consumer and then dropped (:mod:`socm_lib.distributed`: on a Dask cluster);
* :mod:`socm_lib.memory`: what a call will allocate, from the numbers of its layout, against what the machine has
  free;
* :mod:`socm_lib.results`: :class:`~socm_lib.results.SOCMResult`, :class:`~socm_lib.results.PairResult` and the
  formula.

Backends. ``backend="auto"`` takes numpy (BLAS products; the nuclear norms from the compiled lane kernel of
:mod:`socm_lib.nuclear`, or LAPACK ``gesdd`` where it is not built) on the CPU and torch on a GPU;
``backend="torch"`` runs the GPU's path (:mod:`socm_lib.block_math`) on any device, so the CPU tests check it.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from tqdm import tqdm

from .block_plan import all_pairs, cross_pairs
from .block_runner import prepare_engine, run_blocks
from .checks import as_bool, as_cloud, as_clouds, as_pair_set, as_progress, show_progress
from .factors import factor
from .memory import BYTES_PER_PAIR, as_block_elems, memory_estimate, require_memory
from .results import PairResult, SOCMResult, pair_figures, require_finite


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
        batched-torch path a GPU takes (torch matmul, batched singular values: the setting ``torch_svd`` of
        :func:`socm_lib.config_context`, blocks one after another), on any device; on the CPU it serves to
        test that path.
    bucket_tolerance
        Texts whose lengths differ by at most this fraction share a padded bucket.
    block_elems
        Largest number of cross-Gram entries held at once per worker (bounds the working memory); at most
        :data:`~socm_lib.memory.MAX_BLOCK_ELEMS`.
    progress
        Show a progress bar on stderr (``True`` or ``False``); ``None`` follows the setting ``progress`` of
        :func:`socm_lib.config_context`, by default a bar for more than :data:`~socm_lib.checks.PROGRESS_PAIRS`
        (20,000) pairs when stderr is a terminal (not in a notebook).

    Integer options must be integers (a numpy integer will do, a ``bool`` will not), ``dtype`` may be
    given as ``torch.float32``, ``numpy.float32`` or ``"float32"`` (:func:`socm_lib.checks.as_dtype`).

    On the CPU the numpy path runs in ``torch.get_num_threads()`` threads (``torch.set_num_threads``
    changes it). The results take about :data:`~socm_lib.memory.BYTES_PER_PAIR` bytes a pair (16 GB for all pairs
    of 20,000 texts); when :func:`~socm_lib.memory.memory_estimate` exceeds
    :func:`~socm_lib.memory.available_memory` the call raises :class:`~socm_lib.memory.InsufficientMemoryError`
    before allocating, and :func:`socm_lib.socm_summary` is the way.

    A one-token cloud has :math:`\Sigma = 0`; then :math:`d_\Sigma = \operatorname{tr}\Sigma_2/4`,
    the other text's spread alone. :math:`d_\Sigma` is clamped at 0 against round-off below zero.
    """
    return _socm_pairs(clouds, pairs, normalize=normalize, device=device, dtype=dtype, backend=backend,
                       bucket_tolerance=bucket_tolerance, block_elems=block_elems, progress=progress)


def _socm_pairs(clouds, pairs, *, normalize, device, dtype, backend, bucket_tolerance, block_elems, progress,
                caller: str = "socm_pairs", name=lambda k: f"clouds[{k}]") -> PairResult:
    """:func:`socm_pairs`, its errors naming ``caller`` (the public function the user called) and each cloud
    ``name(k)``."""
    block_elems, progress = as_block_elems(block_elems), as_progress(progress)
    engine = prepare_engine(clouds, normalize=normalize, device=device, dtype=dtype, backend=backend,
                            bucket_tolerance=bucket_tolerance, name=name)
    n = engine.n_texts
    pairs, n_pairs = as_pair_set(pairs, n)
    listed = pairs is not None
    require_memory(memory_estimate(n_pairs, engine.footprint(), block_elems),
                   f"{caller} of {n_pairs:,} pairs ({BYTES_PER_PAIR} bytes a pair for the per-pair results, plus block "
                   "buffers)",
                   "Use socm_lib.socm_summary (means, median, histograms and the most/least collapsed pairs in memory "
                   f"bounded by the block size), or pass a sample of pairs (pairs=(P, 2) array) to {caller}.")
    d_mu, d_sigma, socm_ = np.empty(n_pairs), np.empty(n_pairs), np.empty(n_pairs)

    def fill(positions, i, j, block_d_mu, block_d_sigma, block_socm):
        d_mu[positions], d_sigma[positions], socm_[positions] = block_d_mu, block_d_sigma, block_socm

    show = show_progress(progress, n_pairs)
    with tqdm(total=n_pairs, disable=not show, file=sys.stderr, unit="pair", desc="SOCM") as bar:
        run_blocks(engine, pairs if listed else None, block_elems, fill, bar)
    pairs = pairs if listed else all_pairs(n)
    return PairResult(i=pairs[:, 0].copy(), j=pairs[:, 1].copy(), d_mu=d_mu, d_sigma=d_sigma, socm=socm_)


def socm_cross(clouds_a, clouds_b, *, aligned: bool = False, **options) -> PairResult:
    r"""SOCM between two sets of clouds, like ``scipy.spatial.distance.cdist``: every pair ``(a, b)``.

    ``result.i`` indexes ``clouds_a`` and ``result.j`` indexes ``clouds_b``; the pairs come in row-major
    order (:func:`socm_lib.cross_pairs`), so ``result.socm.reshape(len(clouds_a), len(clouds_b))`` is the
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
    options = {"normalize": True, "device": None, "dtype": torch.float64, "backend": "auto", "bucket_tolerance": 0.05,
               "block_elems": 1 << 22, "progress": None, **options}
    result = _socm_pairs(A + B, cross_pairs(len(A), len(B), aligned=aligned), caller="socm_cross",
                         name=lambda k: f"clouds_a[{k}]" if k < len(A) else f"clouds_b[{k - len(A)}]", **options)
    result.j -= len(A)
    return result


def socm(X1, X2, *, normalize: bool = True) -> SOCMResult:
    r"""SOCM of two token clouds: :math:`(1-d_\mu)\,d_\Sigma` (Definition ``def-ch03-socm``).

    ``X1`` and ``X2`` are ``(n, d)`` numpy arrays or torch tensors. With ``normalize=True`` each cloud
    is first divided by the norm of its mean, as in Hara et al. (2026). One pair takes a direct path
    (one SVD of the small cross-Gram :math:`A_1 A_2^\top`, float64 on the CPU) with the same factors as
    :func:`socm_pairs`, without the batched engine's buckets and threads: at most ``d x d``, however long the
    clouds, since a cloud with more tokens than dimensions is first shortened to the ``d`` rows of a QR factor
    with the same covariance (:func:`socm_lib.factors.shortened`).
    """
    normalize = as_bool(normalize, "normalize")
    X = [as_cloud(x, f"X{k + 1}") for k, x in enumerate((X1, X2))]
    if X[0].shape[1] != X[1].shape[1]:
        raise ValueError(f"X2 has d = {X[1].shape[1]} but X1 has d = {X[0].shape[1]}; both clouds must come from "
                         "the same encoder and layer.")
    (m1, A), (m2, B) = (factor(x, normalize, f"X{k + 1}") for k, x in enumerate(X))
    nuclear = float(np.linalg.svd(A.numpy() @ B.numpy().T, compute_uv=False).sum()) if len(A) and len(B) else 0.0
    d_mu = float(((m1 - m2) ** 2).sum()) / 4.0
    d_sigma, socm_ = pair_figures(d_mu, float((A * A).sum()), float((B * B).sum()), nuclear)
    require_finite(np.array([socm_]), lambda k: ("X1", "X2"))
    return SOCMResult(d_mu=d_mu, d_sigma=float(d_sigma), socm=float(socm_))
