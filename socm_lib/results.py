r"""The engine's results: :class:`SOCMResult` for one pair, :class:`PairResult` for many, :class:`PairSummary` for
more than memory holds, and the one formula that makes a pair's figures from its parts, :func:`pair_figures` (book,
Chapters 3 and 6).

A :class:`PairResult` holds one entry per pair in five parallel arrays (``i, j, d_mu, d_sigma, socm``); indexing
it by an integer gives one pair, by a slice, boolean mask or index array the pairs chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SOCMResult:
    """SOCM of one pair of texts and its two factors."""

    d_mu: float
    d_sigma: float
    socm: float


@dataclass
class PairResult:
    """SOCM for many pairs: ``i[k], j[k]`` index the clouds of pair ``k``; all arrays have one entry per pair.

    From :func:`socm_lib.socm_pairs` with ``pairs=None`` the pairs come in ``scipy.spatial.distance.pdist``'s condensed
    order (``squareform(result.socm)`` is the matrix); from :func:`socm_lib.socm_cross` in ``cdist``'s row-major order.
    """

    i: np.ndarray
    j: np.ndarray
    d_mu: np.ndarray
    d_sigma: np.ndarray
    socm: np.ndarray

    def __len__(self) -> int:
        return len(self.i)

    def __getitem__(self, k):
        """Pair ``k`` as a :class:`SOCMResult`; a slice, boolean mask (one entry per pair) or array of integer
        positions gives a :class:`PairResult` of those pairs. Anything else (a column name, a float, a bool, a tuple)
        is refused with a ``TypeError`` that says how to index, never broadcast into arrays of another shape."""
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            return SOCMResult(float(self.d_mu[k]), float(self.d_sigma[k]), float(self.socm[k]))
        if not isinstance(k, slice):
            k = self._selection(k)
            if k.ndim == 0:
                return self[int(k)]
        return PairResult(*(np.asarray(getattr(self, f))[k] for f in ("i", "j", "d_mu", "d_sigma", "socm")))

    def _selection(self, k) -> np.ndarray:
        """``k`` as a 1-D boolean mask of ``len(self)`` entries or an integer array (0-D: one position)."""
        how = ("index a PairResult by an integer (one pair), a slice, a boolean mask with one entry per pair "
               "(result[result.socm > 0.5]) or an array of integer positions; its columns are attributes "
               "(result.socm, result.d_mu, ...)")
        if isinstance(k, tuple):
            raise TypeError(f"PairResult got the tuple {k!r} as an index; {how}. For the pair of clouds (a, b) use "
                            "result[(result.i == a) & (result.j == b)].")
        if isinstance(k, (str, bytes, float, complex, bool, np.bool_, np.floating)) or k is None or k is Ellipsis:
            raise TypeError(f"PairResult cannot be indexed by {k!r} ({type(k).__name__}); {how}.")
        arr = np.asarray(k)
        if arr.size == 0 and arr.ndim == 1:
            return arr.astype(np.int64)  # [] selects no pair
        if arr.dtype == np.bool_ and arr.ndim == 1:
            if len(arr) != len(self):
                raise IndexError(f"the boolean mask has {len(arr)} entries, but the PairResult holds {len(self)} "
                                 "pairs; a mask needs one entry per pair.")
            return arr
        if np.issubdtype(arr.dtype, np.integer) and arr.ndim <= 1:
            return arr
        raise TypeError(f"PairResult cannot be indexed by an array of dtype {arr.dtype} and shape {arr.shape}; {how}.")

    def to_frame(self):
        """The pairs as a pandas DataFrame with columns ``i, j, d_mu, d_sigma, socm``."""
        import pandas as pd

        return pd.DataFrame(
            {"i": self.i, "j": self.j, "d_mu": self.d_mu, "d_sigma": self.d_sigma, "socm": self.socm}
        )

    def summary(self) -> dict[str, float]:
        """Mean and median of SOCM, mean ``d_mu`` and ``d_sigma``, and the share of pairs with ``d_sigma > 1``.

        A result with no pairs (a selection that kept none) has no mean or median: it raises ``ValueError`` rather
        than return NaN.
        """
        if len(self) == 0:
            raise ValueError("This PairResult holds no pairs (a selection that kept none?), so it has no mean or "
                             "median to summarise; check len(result) before calling summary().")
        return {
            "pairs": float(len(self)),
            "mean_socm": float(np.mean(self.socm)),
            "median_socm": float(np.median(self.socm)),
            "mean_d_mu": float(np.mean(self.d_mu)),
            "mean_d_sigma": float(np.mean(self.d_sigma)),
            "share_d_sigma_above_1": float(np.mean(self.d_sigma > 1.0)),
        }


@dataclass
class Histogram:
    """Counts of values in ``len(edges) - 1`` bins: ``[edges[k], edges[k+1])``, the last bin closed."""

    edges: np.ndarray
    counts: np.ndarray


@dataclass
class PairSummary:
    """What :func:`socm_lib.socm_summary` measured; :meth:`summary` has the keys of :meth:`PairResult.summary`."""

    pairs: int
    mean_socm: float
    median_socm: float
    median_socm_error: float  # bound on |median_socm - exact median|; 0.0 when exact
    mean_d_mu: float
    mean_d_sigma: float
    share_d_sigma_above_1: float
    histograms: dict[str, Histogram] = field(repr=False)  # keys "d_mu", "d_sigma", "socm"
    most_collapsed: PairResult = field(repr=False)  # highest SOCM first
    least_collapsed: PairResult = field(repr=False)  # lowest SOCM first

    def summary(self) -> dict[str, float]:
        """The figures of :meth:`socm_lib.PairResult.summary`, same keys and order."""
        return {
            "pairs": float(self.pairs),
            "mean_socm": self.mean_socm,
            "median_socm": self.median_socm,
            "mean_d_mu": self.mean_d_mu,
            "mean_d_sigma": self.mean_d_sigma,
            "share_d_sigma_above_1": self.share_d_sigma_above_1,
        }


def pair_figures(d_mu, trace_a, trace_b, nuclear):
    r"""``(d_sigma, socm)`` of pairs from their parts (floats, or arrays of one entry per pair):

    .. math::

        d_\Sigma = \max\big(\operatorname{tr}\Sigma_a + \operatorname{tr}\Sigma_b
        - 2\lVert A_a A_b^\top\rVert_*,\ 0\big)/4, \qquad \mathrm{SOCM} = (1 - d_\mu)\, d_\Sigma

    (Definition ``def-ch03-socm``, Theorem ``thm-ch06-nuclear``), :math:`d_\Sigma` clamped at 0 against round-off
    below zero. An overflow (clouds too large for ``normalize=False``) gives a non-finite SOCM, which
    :func:`require_finite` refuses.
    """
    d_sigma = np.maximum(trace_a + trace_b - 2.0 * nuclear, 0.0) / 4.0
    with np.errstate(over="ignore", invalid="ignore"):
        socm = (1.0 - d_mu) * d_sigma
    return d_sigma, socm


def require_finite(socm, names) -> None:
    """Refuse a non-finite SOCM, naming the two clouds (``names(k)``) of the first pair ``k`` that has one."""
    bad = np.flatnonzero(~np.isfinite(socm))
    if len(bad):
        a, b = names(bad[0])
        raise ValueError(f"The pair ({a}, {b}) gives a non-finite SOCM: its clouds are too large for normalize=False "
                         "(d_mu or d_sigma overflows float64). Pass normalize=True (SOCM is then scale-free), or "
                         "rescale the clouds.")
