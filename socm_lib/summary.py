r"""SOCM over more pairs than memory holds: a streamed summary (book, Chapter 6).

All pairs of :math:`N` texts are :math:`N(N-1)/2` pairs; :func:`socm_lib.socm_pairs` keeps about 80
bytes of each (16 GB at :math:`N = 20{,}000`). :func:`socm_summary` runs the same engine
(:func:`socm_lib.block_runner.run_blocks`, or the workers of a Dask cluster: :mod:`socm_lib.distributed`) but folds
every block into a tally (:mod:`socm_lib.tally`) and drops it:

* exact counts and means of :math:`d_\mu`, :math:`d_\Sigma` and SOCM (float64 block sums added exactly and
  rounded once, as ``math.fsum`` rounds them, so that they do not depend on the order in which threads or workers
  finish), and the share of pairs with :math:`d_\Sigma > 1`;
* the median of SOCM: exact when the pairs number at most ``exact_median_limit`` (their SOCM
  values are kept, 8 bytes a pair), beyond that from a histogram of :data:`MEDIAN_BINS` bins, with
  its error bound (half a bin width) stated next to it;
* histograms of :math:`d_\mu`, :math:`d_\Sigma` and SOCM over ranges fixed before the main pass
  (values outside a range are counted in its end bins, so the counts add up to the number of pairs):
  ``range=`` where given, else from a pre-pass over :data:`RANGE_SAMPLE_PAIRS` pairs drawn with a
  fixed seed (the same pairs on every run, whatever the threads) through the same engine. When
  there are no more pairs than that, the pre-pass sees them all and a range is their minimum to
  maximum; otherwise it is the sample's minimum to maximum clamped to Tukey's far-out fences
  :math:`[Q_1 - 3\,\mathrm{IQR},\ Q_3 + 3\,\mathrm{IQR}]` (so one very spread text, whose pairs a sample
  may or may not catch, cannot stretch the bins over the whole corpus: its pairs go to the end bin).
  Either range is widened by :data:`RANGE_MARGIN` of its width on each side and kept within the
  worst-case bounds: with :math:`r` the largest norm of a (normalised) mean and :math:`t` the largest
  :math:`\operatorname{tr}\Sigma`, :math:`d_\mu \le r^2` and
  :math:`0 \le d_\Sigma \le (\operatorname{tr}\Sigma_i + \operatorname{tr}\Sigma_j)/4 \le t/2`;
* the median's fine histogram always spans those worst-case bounds, which every pair respects;
* the ``top_k`` most and least collapsed pairs (ties broken by pair position, like a stable sort).

Memory is bounded by the block size and these fixed-size tallies, not by the number of pairs.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from tqdm import tqdm

from .block_plan import all_pairs
from .block_runner import prepare_engine, run_blocks
from .checks import as_int, as_pair_set, as_progress, show_progress
from .distributed import require_client, run_on_cluster
from .memory import as_block_elems
from .results import PairResult, PairSummary
from .sampling import SampledSummary, sampled_summary
from .tally import FIELDS, TallySpec

#: Bins of the histograms returned by :func:`socm_summary` (one per quantity).
DEFAULT_BINS = 200
#: Bins of the histogram the median is read from when the values are not all kept.
MEDIAN_BINS = 1 << 20
#: Most bins :func:`socm_summary` accepts for a histogram (an option with an upper bound: ``bins=2**50`` would ask
#: for petabytes): as many as the median's.
MAX_BINS = MEDIAN_BINS
#: Up to this many pairs the SOCM values are kept (8 bytes each) and the median is exact.
EXACT_MEDIAN_LIMIT = 1_000_000
#: Pairs per chunk when the pairs are also handed out in order (``on_pairs``).
CHUNK_PAIRS = 1 << 20

#: Pairs of the pre-pass that sets the histograms' ranges when ``range`` does not (module docstring) ...
RANGE_SAMPLE_PAIRS = 4096
#: ... drawn with this seed, so that every run takes the same pairs.
RANGE_SEED = 0
#: Tukey's far-out fences, :math:`Q_1 - k\,\mathrm{IQR}` and :math:`Q_3 + k\,\mathrm{IQR}`: the ``k``.
RANGE_FENCE = 3.0
#: Share of a sampled range's width added on each side.
RANGE_MARGIN = 0.01


def _edges(lo: float, hi: float, bins: int) -> np.ndarray:
    hi = hi + 1e-9 * max(abs(hi), abs(lo)) if hi > lo else lo + 1.0  # round-off margin; a point range gets width 1
    return np.linspace(lo, hi, bins + 1)


def _ranges(means: np.ndarray, traces: np.ndarray) -> dict:
    r"""Bounds of :math:`d_\mu`, :math:`d_\Sigma` and SOCM over every pair, from the prepared clouds alone."""
    r2 = float(np.max(np.einsum("nk,nk->n", means, means)))
    d_sigma_hi = float(np.max(traces)) / 2
    socm_lo = min(0.0, (1.0 - r2) * d_sigma_hi)  # negative only without normalisation (d_mu > 1 possible)
    return {"d_mu": (0.0, r2), "d_sigma": (0.0, d_sigma_hi), "socm": (socm_lo, d_sigma_hi)}


def _range_sample(n: int, pairs: np.ndarray | None, n_pairs: int) -> tuple[np.ndarray, bool]:
    """The pre-pass's ``(S, 2)`` pairs and whether they are all the pairs (at most :data:`RANGE_SAMPLE_PAIRS`).

    Otherwise :data:`RANGE_SAMPLE_PAIRS` pairs drawn uniformly (with replacement, seed :data:`RANGE_SEED`):
    rows of ``pairs``, or for all pairs ``i`` uniform and ``j`` uniform among the other texts.
    """
    if n_pairs <= RANGE_SAMPLE_PAIRS:
        return (all_pairs(n) if pairs is None else pairs), True
    rng = np.random.default_rng(RANGE_SEED)
    if pairs is not None:
        return pairs[rng.integers(0, len(pairs), RANGE_SAMPLE_PAIRS)], False
    i = rng.integers(0, n, RANGE_SAMPLE_PAIRS)
    j = rng.integers(0, n - 1, RANGE_SAMPLE_PAIRS)
    return np.stack([i, j + (j >= i)], axis=1), False


def _sampled_ranges(engine, pairs: np.ndarray | None, n_pairs: int, block_elems: int, bounds: dict) -> dict:
    """Histogram ranges ``{name: (low, high)}`` from the pre-pass of :func:`_range_sample` (module docstring)."""
    sample, complete = _range_sample(engine.n_texts, pairs, n_pairs)
    values = {k: np.empty(len(sample)) for k in FIELDS}

    def keep(positions, i, j, d_mu, d_sigma, socm):
        values["d_mu"][positions], values["d_sigma"][positions], values["socm"][positions] = d_mu, d_sigma, socm

    with tqdm(total=len(sample), disable=True) as bar:
        run_blocks(engine, sample, block_elems, keep, bar)
    out = {}
    for k, v in values.items():
        lo, hi = float(v.min()), float(v.max())
        if not complete:
            q1, q3 = np.quantile(v, [0.25, 0.75])
            lo, hi = max(lo, q1 - RANGE_FENCE * (q3 - q1)), min(hi, q3 + RANGE_FENCE * (q3 - q1))
        pad = RANGE_MARGIN * (hi - lo)
        lo, hi = max(lo - pad, bounds[k][0]), min(hi + pad, bounds[k][1])
        out[k] = (float(lo), float(hi)) if hi > lo else bounds[k]
    return out


def _histogram_ranges(given) -> dict:
    """Validate the ``range=`` of :func:`socm_summary`: ``{name: (low, high)}`` with finite ``low < high``."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise TypeError(f"range must be None or a dict such as {{'socm': (0.0, 0.5)}}, got {type(given).__name__}.")
    out = {}
    for name, value in given.items():
        if name not in FIELDS:
            raise ValueError(f"range has an unknown key {name!r}; use some of {list(FIELDS)}.")
        numbers = (int, float, np.integer, np.floating)
        if (isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2
                or not all(isinstance(v, numbers) and not isinstance(v, (bool, np.bool_)) for v in value)):
            raise TypeError(f"range[{name!r}] must be a pair (low, high) of numbers, got {value!r}.")
        try:
            low, high = (float(v) for v in value)
        except OverflowError:  # an int beyond float64
            low = high = float("nan")
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"range[{name!r}] = {value!r}: need finite low < high.")
        out[name] = (low, high)
    return out


def _chunks_in_order(n: int, pairs: np.ndarray | None, size: int):
    """``(start, (P, 2) pairs)`` chunks of ``pairs`` (``None``: all ``i < j`` in lexicographic order, generated
    row by row, never all at once), about ``size`` pairs each."""
    if pairs is not None:
        for k in range(0, len(pairs), size):
            yield k, pairs[k : k + size]
        return
    start, row = 0, 0
    while row < n - 1:
        end, count = row, 0
        while end < n - 1 and (count == 0 or count + n - 1 - end <= size):
            count += n - 1 - end
            end += 1
        rows = np.arange(row, end)
        lengths = n - 1 - rows
        i = np.repeat(rows, lengths)
        j = i + 1 + np.arange(count) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        yield start, np.stack([i, j], axis=1)
        start, row = start + count, end


def socm_summary(
    clouds,
    pairs=None,
    *,
    bins: int = DEFAULT_BINS,
    top_k: int = 10,
    normalize: bool = True,
    device=None,
    dtype: torch.dtype = torch.float64,
    backend: str = "auto",
    bucket_tolerance: float = 0.05,
    block_elems: int = 1 << 22,
    progress: bool | None = None,
    exact_median_limit: int = EXACT_MEDIAN_LIMIT,
    on_pairs=None,
    chunk_pairs: int = CHUNK_PAIRS,
    range: dict | None = None,
    sample_pairs: int | None = None,
    seed: int | None = None,
    target_halfwidth: float | None = None,
    client=None,
) -> PairSummary | SampledSummary:
    r"""The figures of ``socm_pairs(clouds, pairs).summary()``, histograms and extreme pairs, in bounded memory.

    Parameters
    ----------
    clouds, pairs, normalize, device, dtype, backend, bucket_tolerance, block_elems, progress
        As for :func:`socm_lib.socm_pairs`; the pairs are computed by the same engine.
    bins
        Bins of each histogram (at most :data:`MAX_BINS`) (:math:`d_\mu`, :math:`d_\Sigma`, SOCM), over ``range`` or, where it
        gives none, over a range set by a sampled pre-pass (module docstring).
    range
        ``None``, or ``{name: (low, high)}`` for some of ``"d_mu"``, ``"d_sigma"``, ``"socm"``: that
        histogram's range, as ``numpy.histogram``'s ``range=`` (``low < high``, finite). Values outside it
        are counted in the end bins, so that the counts still add up to the number of pairs (as they
        are outside a sampled range). The median is unaffected (its fine histogram always spans the
        worst-case bounds).
    top_k
        How many of the most and of the least collapsed pairs to keep.
    exact_median_limit
        Up to this many pairs the median is exact (``median_socm_error == 0``); beyond, it is read
        from a histogram of :data:`MEDIAN_BINS` bins and ``median_socm_error`` is half a bin width.
    on_pairs
        ``None``, or a function called as ``on_pairs(start, chunk)`` with consecutive
        :class:`~socm_lib.PairResult` chunks of about ``chunk_pairs`` pairs, in pair order
        (``start`` is the chunk's first position); for writing every pair out without holding them all.
    client
        ``None`` (this machine's cores), or a ``distributed.Client``: the blocks run as tasks on its Dask cluster's
        workers (:mod:`socm_lib.distributed`; needs ``pip install socm-book[distributed]``), and the summary is the
        one this machine gives, bit for bit, whatever the number of workers (on workers whose CPUs take other BLAS
        kernels, the last bits can differ: the figures then agree to round-off). The workers compute on their CPUs
        (``device`` ``None`` or ``"cpu"``); ``on_pairs`` needs the pairs in order here and is not taken with it.

    Returns
    -------
    PairSummary
        ``pairs, mean_socm, median_socm, median_socm_error, mean_d_mu, mean_d_sigma,
        share_d_sigma_above_1``, ``histograms`` and ``most_collapsed`` / ``least_collapsed``
        (:class:`~socm_lib.PairResult`, SOCM descending / ascending). ``.summary()`` gives the dict of
        :meth:`socm_lib.PairResult.summary`.

    With ``sample_pairs``, ``seed`` or ``target_halfwidth``, not every pair is computed: ``sample_pairs`` pairs drawn
    uniformly without replacement (seeded by ``seed``), or as many as the mean SOCM's 95 % interval needs to reach
    :math:`\pm` ``target_halfwidth``, give a :class:`~socm_lib.SampledSummary` of the same figures, each with a 95 %
    interval for its exhaustive value (:func:`socm_lib.sampling.sampled_summary`; Chapter 6).
    """
    if sample_pairs is not None or seed is not None or target_halfwidth is not None:  # a sampled estimate
        exhaustive_only = {"bins": (bins, DEFAULT_BINS), "top_k": (top_k, 10), "on_pairs": (on_pairs, None),
                           "exact_median_limit": (exact_median_limit, EXACT_MEDIAN_LIMIT),
                           "chunk_pairs": (chunk_pairs, CHUNK_PAIRS), "range": (range, None),
                           "client": (client, None)}
        return sampled_summary(clouds, pairs, sample_pairs=sample_pairs, seed=seed, target_halfwidth=target_halfwidth,
                               exhaustive_only=exhaustive_only, normalize=normalize, device=device, dtype=dtype,
                               backend=backend, bucket_tolerance=bucket_tolerance, block_elems=block_elems,
                               progress=progress)
    bins = as_int(bins, "bins", minimum=1, maximum=MAX_BINS,
                  advice=f"A histogram of more bins than the median's own ({MEDIAN_BINS:,}) resolves nothing more.")
    top_k = as_int(top_k, "top_k", minimum=0)
    exact_median_limit = as_int(exact_median_limit, "exact_median_limit", minimum=0)
    chunk_pairs = as_int(chunk_pairs, "chunk_pairs", minimum=1)
    block_elems = as_block_elems(block_elems)
    progress = as_progress(progress)
    if on_pairs is not None and not callable(on_pairs):
        raise TypeError(f"on_pairs must be a function on_pairs(start, chunk) or None, got {type(on_pairs).__name__}.")
    if client is not None:
        require_client(client)
        if on_pairs is not None:
            raise TypeError("on_pairs hands out the pairs in order from this process, which a cluster's workers do not "
                            "keep; call socm_summary without client= to write every pair.")
        device = "cpu" if device is None else device
    engine = prepare_engine(clouds, normalize=normalize, device=device, dtype=dtype, backend=backend,
                            bucket_tolerance=bucket_tolerance)
    n = engine.n_texts
    pairs, n_pairs = as_pair_set(pairs, n)
    bounds, given = _ranges(engine.means, engine.traces), _histogram_ranges(range)
    sampled = _sampled_ranges(engine, pairs, n_pairs, block_elems, bounds) if set(FIELDS) - set(given) else {}
    ranges = {**bounds, **sampled, **given}
    spec = TallySpec({k: _edges(*ranges[k], bins) for k in FIELDS},
                     None if n_pairs <= exact_median_limit else _edges(*bounds["socm"], MEDIAN_BINS), top_k)
    tally = spec.empty()
    show = show_progress(progress, n_pairs)
    with tqdm(total=n_pairs, disable=not show, file=sys.stderr, unit="pair", desc="SOCM") as bar:
        if client is not None:
            run_on_cluster(client, engine, pairs, block_elems, tally, bar)
        elif on_pairs is None:
            run_blocks(engine, pairs, block_elems, tally.add, bar)
        else:
            for start, chunk in _chunks_in_order(n, pairs, chunk_pairs):
                out = {k: np.empty(len(chunk)) for k in FIELDS}

                def fill(positions, i, j, d_mu, d_sigma, socm):
                    out["d_mu"][positions], out["d_sigma"][positions], out["socm"][positions] = d_mu, d_sigma, socm

                run_blocks(engine, chunk, block_elems, fill, bar)
                result = PairResult(i=chunk[:, 0].copy(), j=chunk[:, 1].copy(), **out)
                on_pairs(start, result)
                tally.add(start + np.arange(len(chunk)), result.i, result.j, result.d_mu, result.d_sigma, result.socm)
    return tally.result()
