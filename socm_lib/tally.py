r"""The running figures of a streamed summary, as a value that merges in any order (book, Chapter 6).

:func:`socm_lib.socm_summary` never holds all pairs: each block of the engine is folded into a :class:`Tally` and
dropped. A tally is made so that the summary does not depend on how the pairs were grouped or in what order the
groups arrive, so that threads finishing in any order and Dask workers in any number (:mod:`socm_lib.distributed`)
give the same figures, bit for bit (where every worker takes the same BLAS kernels; on other CPUs the blocks'
values, and so the figures, can differ in their last bits). :meth:`TallySpec.of_block` makes the tally of one block, :meth:`Tally.merge` adds
one tally to another, and every part of it merges exactly and commutatively:

* counts (pairs, pairs with :math:`d_\Sigma > 1`, histogram bins) are integers, added;
* sums: each block's float64 sum (``numpy.sum``, the same block gives the same bits wherever it runs on the same kernels), and the sum
  of those kept exactly, as a :class:`fractions.Fraction` (every float is a fraction with a power-of-two
  denominator): the mean is that exact sum rounded once, the value ``math.fsum`` of the block sums gives, whatever
  their order or grouping;
* the median: the SOCM values themselves when there are at most ``exact_median_limit`` pairs in all (decided before
  the run, from the number of pairs), whose order the median ignores; otherwise counts in a fine histogram;
* the ``top_k`` most and least collapsed pairs: the first ``top_k`` of the union by SOCM, ties by pair position, a
  total order, so the pairs kept depend on the set of pairs only.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .results import Histogram, PairResult, PairSummary

#: The figures of each pair a tally folds in, with a histogram each.
FIELDS = ("d_mu", "d_sigma", "socm")
#: What a tally keeps of its ``top_k`` pairs.
_KEPT = ("position", "i", "j") + FIELDS


def bin_index(edges: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Bin of each value, as :func:`numpy.histogram` counts them (values past either end go to the end bins)."""
    return np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)


@dataclass(frozen=True)
class TallySpec:
    """What every tally of one summary shares: the histograms' edges, the median's fine edges (``None`` when the
    SOCM values are kept for an exact median) and how many extreme pairs to keep."""

    edges: dict[str, np.ndarray]  # keys FIELDS
    fine_edges: np.ndarray | None
    top_k: int

    def empty(self) -> Tally:
        """The tally of no pair, to merge others into: it keeps SOCM values, or counts them in the fine histogram."""
        fine = None if self.fine_edges is None else np.zeros(len(self.fine_edges) - 1, dtype=np.int64)
        return Tally(self, 0, 0, {k: Fraction(0) for k in FIELDS},
                     {k: np.zeros(len(e) - 1, dtype=np.int64) for k, e in self.edges.items()},
                     [] if fine is None else None, fine, None, None)

    def of_block(self, positions, i, j, d_mu, d_sigma, socm) -> Tally:
        """The tally of one block's pairs (the arguments of an engine consumer, one entry per pair); it keeps the
        block's SOCM values, whatever :meth:`empty` does with them."""
        block = {"position": np.asarray(positions, np.int64), "i": np.asarray(i), "j": np.asarray(j), "d_mu": d_mu,
                 "d_sigma": d_sigma, "socm": socm}
        most, least = (_first(block, self.top_k, largest) if self.top_k else None for largest in (True, False))
        return Tally(self, len(socm), int(np.count_nonzero(d_sigma > 1.0)),
                     {k: Fraction(float(np.sum(block[k], dtype=np.float64))) for k in FIELDS},
                     {k: np.bincount(bin_index(e, block[k]), minlength=len(e) - 1) for k, e in self.edges.items()},
                     [np.array(socm)], None, most, least)


@dataclass(eq=False)
class Tally:
    """Figures of some pairs (module docstring), made by :meth:`TallySpec.empty` or :meth:`TallySpec.of_block`."""

    spec: TallySpec | None  # None on a tally that travels to the one it merges into (socm_lib.distributed)
    n: int
    above: int  # pairs with d_sigma > 1
    sums: dict[str, Fraction]  # exact sums of the block sums
    counts: dict[str, np.ndarray]  # histogram counts, edges spec.edges
    values: list | None  # SOCM values, while kept ...
    fine: np.ndarray | None  # ... or their counts in the median's fine histogram
    most: dict | None  # the top_k pairs by SOCM, highest first ...
    least: dict | None  # ... and lowest first

    def merge(self, other: Tally) -> Tally:
        """Add ``other``'s pairs to this tally (in place; returned). Merging is exact and commutative."""
        self.n += other.n
        self.above += other.above
        for k in FIELDS:
            self.sums[k] += other.sums[k]
            self.counts[k] += other.counts[k]
        if self.fine is None and other.fine is not None:
            self._count_values()
        if self.fine is None:
            self.values += other.values
        elif other.fine is not None:
            self.fine += other.fine
        else:
            self._count(other.values)
        if other.most is not None:
            self.most = other.most if self.most is None else _first(_joined(self.most, other.most), self.spec.top_k,
                                                                     True)
            self.least = other.least if self.least is None else _first(_joined(self.least, other.least),
                                                                       self.spec.top_k, False)
        return self

    def add(self, positions, i, j, d_mu, d_sigma, socm) -> None:
        """Fold one block's pairs in: an engine consumer (:func:`socm_lib.block_runner.run_blocks`)."""
        self.merge(self.spec.of_block(positions, i, j, d_mu, d_sigma, socm))

    def _count(self, values: list) -> None:
        """Add ``values`` (a list of arrays) to the counts of the fine histogram (a block has far fewer values than
        it has bins: no array of its size is made)."""
        for v in values:
            np.add.at(self.fine, bin_index(self.spec.fine_edges, v), 1)

    def _count_values(self) -> None:
        """Hold the values kept so far as counts of the fine histogram."""
        values, self.values = self.values, None
        self.fine = np.zeros(len(self.spec.fine_edges) - 1, dtype=np.int64)
        self._count(values)

    def _median(self) -> tuple[float, float]:
        if self.fine is None and self.spec.fine_edges is not None:
            self._count_values()
        if self.fine is None:
            return float(np.median(np.concatenate(self.values))), 0.0
        # np.median's order statistics (n-1)//2 and n//2 (0-based), each placed at the centre of its bin
        edges = self.spec.fine_edges
        cum = np.cumsum(self.fine)
        lo, hi = np.searchsorted(cum, [(self.n - 1) // 2, self.n // 2], side="right")
        centres = (edges[:-1] + edges[1:]) / 2
        return float((centres[lo] + centres[hi]) / 2), float((edges[1] - edges[0]) / 2)

    def mean(self, name: str) -> float:
        """The mean of ``name`` over the pairs: the exact sum of the block sums rounded once (as ``math.fsum`` of them
        rounds it), over the count."""
        return float(self.sums[name]) / self.n

    def result(self) -> PairSummary:
        """The figures of :func:`socm_lib.socm_summary`."""
        median, error = self._median()
        none = {k: np.zeros(0, np.int64 if k in ("position", "i", "j") else np.float64) for k in _KEPT}

        def pairs_of(kept):
            kept = none if kept is None else kept
            return PairResult(i=kept["i"], j=kept["j"], d_mu=kept["d_mu"], d_sigma=kept["d_sigma"], socm=kept["socm"])

        return PairSummary(
            pairs=self.n,
            mean_socm=self.mean("socm"),
            median_socm=median,
            median_socm_error=error,
            mean_d_mu=self.mean("d_mu"),
            mean_d_sigma=self.mean("d_sigma"),
            share_d_sigma_above_1=self.above / self.n,
            histograms={k: Histogram(self.spec.edges[k], self.counts[k]) for k in FIELDS},
            most_collapsed=pairs_of(self.most),
            least_collapsed=pairs_of(self.least),
        )


def _joined(a: dict, b: dict) -> dict:
    return {k: np.concatenate([a[k], b[k]]) for k in _KEPT}


def _first(pairs: dict, top_k: int, largest: bool) -> dict:
    """The ``top_k`` pairs of ``pairs`` by SOCM (descending if ``largest``), ties by position."""
    key = -pairs["socm"] if largest else pairs["socm"]
    candidates = np.arange(len(key))
    if len(key) > top_k:
        kth = np.partition(key, top_k - 1)[top_k - 1]
        candidates = np.flatnonzero(key <= kth)
    chosen = candidates[np.lexsort((pairs["position"][candidates], key[candidates]))][:top_k]
    return {k: np.asarray(pairs[k])[chosen] for k in _KEPT}
