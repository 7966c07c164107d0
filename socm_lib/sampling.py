r"""A corpus's SOCM figures from a sample of its pairs, with 95 % intervals that hold (book, Chapter 6).

All pairs of :math:`N` texts are :math:`N_{\mathrm{pairs}} = N(N-1)/2` (:math:`5 \times 10^9` for 100,000 texts). The
figures of :func:`socm_lib.socm_summary` are averages and a median over that finite population of pair values
:math:`y_1, \dots, y_{N_{\mathrm{pairs}}}` (SOCM, :math:`d_\mu`, :math:`d_\Sigma`, or the indicator of
:math:`d_\Sigma > 1`). :func:`sampled_summary` (``socm_summary(..., sample_pairs=m)``) draws :math:`m` of the pairs
uniformly without replacement, every set of :math:`m` pairs equally likely (a simple random sample: :func:`_draw`,
which never lists all pairs), computes them with the same engine (:func:`socm_lib.socm_pairs`), and estimates the
figures of *these* texts (:func:`_estimate`):

* **means** (:math:`d_\mu`, :math:`d_\Sigma`, SOCM): the sample mean :math:`\hat y` is unbiased for the exhaustive
  mean :math:`\bar y`, with :math:`\operatorname{Var}\hat y = (1 - m/N_{\mathrm{pairs}})\,S^2/m`, where
  :math:`S^2 = \sum_k (y_k - \bar y)^2/(N_{\mathrm{pairs}} - 1)`; the sample variance :math:`\hat S^2` (divisor
  :math:`m - 1`) is unbiased for :math:`S^2` (Cochran 1977, Chapter 2). The interval is
  :math:`\hat y \pm t_{m-1}\,\hat S \sqrt{(1 - m/N_{\mathrm{pairs}})/m}` with :math:`t_{m-1}` the 0.975 quantile of
  Student's t with :math:`m - 1` degrees of freedom: the normal approximation of the finite-population central limit
  theorem (Hájek 1960). At :math:`m = N_{\mathrm{pairs}}` it has zero width around the exhaustive mean.
* **share with** :math:`d_\Sigma > 1`: Wilson's score interval (Wilson 1927) with the same finite-population factor,
  :math:`(N_{\mathrm{pairs}} - m)/(N_{\mathrm{pairs}} - 1)` on the binomial variance, so that a share of 0 in the
  sample still gets an interval of positive width (a plain :math:`\hat S` would be 0 there).
* **median**: the order statistics :math:`y_{(r)} \le y_{(m+1-r)}` of the sample, distribution-free. For distinct
  pair values, the number of sampled values at or below the exhaustive median has the hypergeometric law
  :math:`\mathrm{Hyp}(N_{\mathrm{pairs}}, \lceil N_{\mathrm{pairs}}/2\rceil, m)`, so the interval misses it with
  probability :math:`2\operatorname{P}(\mathrm{Hyp} \le r - 1)`; :math:`r` is the largest rank that keeps this at
  most 5 % (Sedransk and Meyer 1978). The binomial ranks of :math:`\mathrm{Bin}(m, 1/2)`, the classical rule, are
  those of draws *with* replacement, the limit :math:`N_{\mathrm{pairs}} \to \infty`; without replacement the
  hypergeometric law is narrower, so binomial ranks would be conservative. Tied values (pairs clamped at 0) only raise
  the coverage. At :math:`m = N_{\mathrm{pairs}}` the interval is the two middle values (one when
  :math:`N_{\mathrm{pairs}}` is odd), around the exhaustive median.

Pairs that share a text have correlated values, and none of this needs them independent: the values are fixed
numbers and the only randomness is which pairs are drawn, so the design alone gives the variance. The intervals are
for the exhaustive figures over *these* :math:`N` texts, what ``socm_summary`` without sampling would return. They
are not intervals for a wider population of texts from which these were drawn: there the exhaustive mean is itself
a U-statistic of the texts (Hoeffding 1948), whose variance, :math:`4(N-2)\zeta_1/(N(N-1)) + 2\zeta_2/(N(N-1))` with
:math:`\zeta_1` the covariance of two pairs sharing one text, does not shrink as :math:`m` grows.

**Target half-width** (``target_halfwidth=h``): a pilot of :data:`PILOT_PAIRS` pairs estimates :math:`S` of SOCM,
the rule of :func:`pairs_needed` sets the total :math:`m`, the further pairs are drawn without replacement from those
not yet drawn (so every stage's pairs are again a simple random sample), and the stages go on until the mean SOCM's
interval has half-width at most ``h`` (or ``sample_pairs``, a cap, is reached). A sequential rule of Chow and Robbins
(1965)'s kind: the stopping depends on :math:`\hat S`, and the tests measure that the coverage still holds.

References: W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley 1977; J. Hájek, Publ. Math. Inst. Hungar. Acad. Sci.
5 (1960) 361-374; E. B. Wilson, JASA 22 (1927) 209-212; J. Sedransk and J. Meyer, JRSS B 40 (1978) 239-252;
W. Hoeffding, Ann. Math. Statist. 19 (1948) 293-325; Y. S. Chow and H. Robbins, Ann. Math. Statist. 36 (1965)
457-462.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .block_plan import condensed_pairs
from .checks import as_clouds, as_int, as_number, as_pair_set
from .pairs import socm_pairs
from .report import fmt

#: The level of every interval.
CONFIDENCE = 0.95
#: Pairs of the pilot stage of ``target_halfwidth`` (all pairs when there are fewer).
PILOT_PAIRS = 1000
#: Up to this many pairs not yet drawn, :func:`_draw` lists them and picks among them; above, it draws by rejection.
DENSE_DRAW_LIMIT = 1 << 22
#: Below this share of the pairs drawn, the median's ranks come from the binomial law (:func:`_median_rank`).
BINOMIAL_FRACTION = 1e-4
#: The figures estimated, in the order of :meth:`socm_lib.PairSummary.summary` (``pairs`` apart).
FIGURES = ("mean_socm", "median_socm", "mean_d_mu", "mean_d_sigma", "share_d_sigma_above_1")
_VALUES = ("d_mu", "d_sigma", "socm")


@dataclass(frozen=True, repr=False)
class SampledSummary:
    """An estimate of :func:`socm_lib.socm_summary`'s figures from ``pairs`` of the ``population_pairs`` pairs,
    drawn uniformly without replacement with ``seed`` (:mod:`socm_lib.sampling`); ``intervals[name]`` is the
    ``confidence`` interval of figure ``name`` for its exhaustive value over the same texts. ``print`` it to read it."""

    pairs: int  # m, the pairs drawn and computed
    population_pairs: int  # N_pairs, the pairs sampled from (all i < j of the texts, or the pairs given)
    texts: int
    seed: int
    method: str
    mean_socm: float
    median_socm: float
    mean_d_mu: float
    mean_d_sigma: float
    share_d_sigma_above_1: float
    intervals: dict[str, tuple[float, float]]
    median_ranks: tuple[int, int]  # 1-based ranks of the median interval's order statistics (0, 0: none reaches 95 %)
    std_socm: float  # the sample's standard deviation of SOCM, S hat: pairs_needed(std_socm, h, N_pairs) plans a run
    target_halfwidth: float | None = None
    stages: tuple[int, ...] = ()  # pairs drawn after each stage (one stage without a target)
    confidence: float = CONFIDENCE
    estimate: bool = True  # an estimate, not an exhaustive summary

    def summary(self) -> dict[str, float]:
        """The estimates under the keys of :meth:`socm_lib.PairSummary.summary` (``pairs``: the pairs drawn)."""
        return {"pairs": float(self.pairs), **{name: getattr(self, name) for name in FIGURES}}

    def halfwidth(self, name: str = "mean_socm") -> float:
        """Half the width of the interval of figure ``name`` (one of :data:`FIGURES`)."""
        if name not in FIGURES:
            raise ValueError(f"halfwidth: unknown figure {name!r}; use one of {list(FIGURES)}.")
        low, high = self.intervals[name]
        return (high - low) / 2

    @property
    def target_reached(self) -> bool | None:
        """Whether the mean SOCM's half-width reached ``target_halfwidth`` (``None`` without a target)."""
        return None if self.target_halfwidth is None else self.halfwidth() <= self.target_halfwidth

    def __str__(self) -> str:
        widths = [self.halfwidth(name) for name in FIGURES if 0 < self.halfwidth(name) < math.inf]
        digits = max(4, 1 - math.floor(math.log10(min(widths)))) if widths else 4
        level = f"{100 * self.confidence:g} %"
        lines = [f"Sampled estimate from {self.pairs:,} of the {self.population_pairs:,} pairs of {self.texts:,} texts "
                 f"({self.method}; seed {self.seed}).",
                 f"{level} intervals for the values over all {self.population_pairs:,} pairs:"]
        for name in FIGURES:
            low, high = self.intervals[name]
            lines.append(f"  {name:22s} {fmt(getattr(self, name), digits):>9s}   [{fmt(low, digits)}, "
                         f"{fmt(high, digits)}]")
        if self.median_ranks == (0, 0):
            lines.append(f"  (too few pairs for a {level} interval of the median from order statistics)")
        if self.target_halfwidth is not None:
            reached = "reached" if self.target_reached else "NOT reached (sample_pairs, the cap, came first)"
            lines.append(f"Target half-width of mean_socm {fmt(self.target_halfwidth, digits)}: {reached}; pairs "
                         f"after each stage: {', '.join(f'{m:,}' for m in self.stages)}.")
        return "\n".join(lines)

    __repr__ = __str__


def pairs_needed(std: float, halfwidth: float, population: int, confidence: float = CONFIDENCE) -> int:
    r"""How many pairs a mean needs for an interval of half-width ``halfwidth``: the smallest :math:`m` with
    :math:`z\,S\sqrt{(1 - m/N_{\mathrm{pairs}})/m} \le h`, that is

    .. math::

        m = \Big\lceil \frac{z^2 S^2}{h^2 + z^2 S^2/N_{\mathrm{pairs}}} \Big\rceil ,

    with ``std`` :math:`= S`, ``halfwidth`` :math:`= h`, ``population`` :math:`= N_{\mathrm{pairs}}` and :math:`z` the
    normal quantile of ``confidence`` (1.96 for 95 %). Without the finite-population factor this is the familiar
    :math:`(zS/h)^2`; it never exceeds ``population``. Example: :math:`S = 0.1` and :math:`h = 0.001` need 38,415
    pairs among the :math:`5 \times 10^9` pairs of 100,000 texts, and as many among those of a million texts.
    """
    std = as_number(std, "std")
    halfwidth = as_number(halfwidth, "halfwidth")
    if halfwidth == 0:
        raise ValueError("halfwidth = 0: no sample short of all pairs reaches a zero-width interval; pass a positive "
                         "half-width, or compute every pair (socm_summary without sample_pairs).")
    population = as_int(population, "population", minimum=1)
    z2s2 = (special.ndtri(0.5 + confidence / 2) * std) ** 2
    return min(population, math.ceil(z2s2 / (halfwidth**2 + z2s2 / population)))


def _draw(rng: np.random.Generator, population: int, count: int, taken: np.ndarray) -> np.ndarray:
    """``count`` positions of ``range(population)`` outside ``taken`` (sorted, distinct), uniformly without
    replacement and in the order drawn, so that ``taken`` plus them is a simple random sample as ``taken`` was.

    When at most :data:`DENSE_DRAW_LIMIT` positions are left they are listed and chosen among; otherwise positions
    are drawn uniformly with replacement and those already drawn (before or within the batch) are skipped, which
    never lists the population (5e9 pairs of 100,000 texts) and stays fast while more than
    :data:`DENSE_DRAW_LIMIT` positions are left.
    """
    left = population - len(taken)
    if left <= DENSE_DRAW_LIMIT:
        free = np.setdiff1d(np.arange(population, dtype=np.int64), taken, assume_unique=True)
        return rng.choice(free, size=count, replace=False)
    out, seen = [], taken
    while count > 0:
        batch = rng.integers(0, population, size=int(count * population / left * 1.1) + 16, dtype=np.int64)
        _, first = np.unique(batch, return_index=True)
        batch = batch[np.sort(first)]  # each position once, at its first draw
        batch = batch[~np.isin(batch, seen, assume_unique=True)][:count]
        out.append(batch)
        seen, count, left = np.union1d(seen, batch), count - len(batch), left - len(batch)
    return np.concatenate(out)


def _halfwidth(y: np.ndarray, population: int, confidence: float) -> float:
    """Half the width of the mean's interval, :math:`t_{m-1}\,\hat S\sqrt{(1 - m/N_{\mathrm{pairs}})/m}`
    (module docstring)."""
    m = len(y)
    return special.stdtrit(m - 1, 0.5 + confidence / 2) * math.sqrt((1 - m / population) * np.var(y, ddof=1) / m)


def _mean_interval(y: np.ndarray, population: int, confidence: float) -> tuple[float, float, float]:
    """``(mean, low, high)``: the sample mean (``math.fsum``) and its Student-t interval (:func:`_halfwidth`)."""
    mean, half = math.fsum(y) / len(y), _halfwidth(y, population, confidence)
    return mean, mean - half, mean + half


def _share_interval(hits: int, m: int, population: int, confidence: float) -> tuple[float, float, float]:
    """``(share, low, high)``: Wilson's score interval for a share of ``hits`` in ``m`` drawn without replacement,
    the binomial variance times :math:`(N_{\\mathrm{pairs}} - m)/(N_{\\mathrm{pairs}} - 1)`."""
    p = hits / m
    k = special.ndtri(0.5 + confidence / 2) ** 2 * (population - m) / (population - 1) / m
    centre, half = (p + k / 2) / (1 + k), math.sqrt(k * p * (1 - p) + k * k / 4) / (1 + k)
    return p, max(centre - half, 0.0), min(centre + half, 1.0)


@functools.lru_cache(maxsize=1024)  # the same ranks for every sample of the same size
def _median_rank(m: int, population: int, confidence: float) -> int:
    """The largest 1-based rank ``r`` with :math:`2\operatorname{P}(\mathrm{Hyp}(N_{\mathrm{pairs}},
    \lceil N_{\mathrm{pairs}}/2\rceil, m) \le r - 1) \le 1 - ` ``confidence``; 0 when even ``r = 1`` misses more
    often (too few pairs).

    When less than :data:`BINOMIAL_FRACTION` of the pairs are drawn, the binomial law
    :math:`\mathrm{Bin}(m, \lceil N_{\mathrm{pairs}}/2\rceil / N_{\mathrm{pairs}})` stands in for the hypergeometric
    one: their variances differ by that fraction, and scipy's hypergeometric distribution function takes seconds to
    minutes past :math:`10^{10}` pairs.
    """
    above = (population + 1) // 2
    law = (stats.binom, (m, above / population)) if m < BINOMIAL_FRACTION * population else \
        (stats.hypergeom, (population, above, m))
    tail = (1 - confidence) / 2
    k = int(law[0].ppf(tail, *law[1]))  # the smallest k with P(count <= k) >= tail ...
    return k if law[0].cdf(k, *law[1]) > tail else k + 1  # ... so r - 1 = k - 1, or k when P(count <= k) = tail


def _estimate(values: dict[str, np.ndarray], population: int, confidence: float) -> dict:
    """The figures of :data:`FIGURES` from the sampled ``values`` (``d_mu``, ``d_sigma``, ``socm`` arrays of the
    pairs drawn), their ``intervals`` and ``median_ranks``, as keyword arguments of :class:`SampledSummary`."""
    m = len(values["socm"])
    out, intervals = {}, {}
    for name in _VALUES:
        out[f"mean_{name}"], *intervals[f"mean_{name}"] = _mean_interval(values[name], population, confidence)
    hits = int(np.count_nonzero(values["d_sigma"] > 1.0))
    out["share_d_sigma_above_1"], *intervals["share_d_sigma_above_1"] = _share_interval(hits, m, population,
                                                                                        confidence)
    r = _median_rank(m, population, confidence)
    ordered = np.sort(values["socm"])
    out["median_socm"] = float(np.median(ordered))
    intervals["median_socm"] = (float(ordered[r - 1]), float(ordered[m - r])) if r else (-math.inf, math.inf)
    return {**out, "intervals": {name: tuple(map(float, intervals[name])) for name in FIGURES},
            "median_ranks": (r, m + 1 - r) if r else (0, 0), "std_socm": float(np.std(values["socm"], ddof=1))}


def sample_size(sample_pairs, target_halfwidth, population: int,
                names: tuple[str, str] = ("sample_pairs", "target_halfwidth")) -> tuple[int | None, float | None]:
    """``(sample_pairs, target_halfwidth)`` checked against a ``population`` of pairs: at least one given;
    ``2 <= sample_pairs <= population``; ``target_halfwidth`` a positive number. Errors call them by ``names`` (the
    command line checks its options ``--sample-pairs`` and ``--target-halfwidth`` with it before any model loads)."""
    size, target = names
    if sample_pairs is None and target_halfwidth is None:
        raise ValueError(f"A sampled estimate needs {size} (how many pairs to draw) or {target} (draw until the mean "
                         f"SOCM's 95 % interval is +/- that), or both ({target}, drawing at most {size} pairs).")
    if population < 2:
        raise ValueError(f"There is only {population} pair, so there is nothing to sample: compute it exactly "
                         f"(without {size} or {target}).")
    if sample_pairs is not None:
        sample_pairs = as_int(sample_pairs, size, minimum=2, maximum=population,
                              advice=f"There are {population:,} pairs to draw from, and an interval needs at least 2; "
                                     f"to compute every pair, drop {size}.")
    if target_halfwidth is not None:
        target_halfwidth = as_number(target_halfwidth, target)
        if target_halfwidth == 0:
            raise ValueError(f"{target} = 0: only all pairs give a zero-width interval; pass a positive half-width "
                             f"such as 0.001, or compute every pair (drop {target}).")
    return sample_pairs, target_halfwidth


def _sampled(evaluate, population: int, texts: int, *, sample_pairs, seed, target_halfwidth) -> SampledSummary:
    """The sampled estimate of :func:`sampled_summary`, with ``evaluate(positions)`` giving the ``d_mu``, ``d_sigma``,
    ``socm`` arrays of the pairs at ``positions`` of the population (in that order)."""
    sample_pairs, target_halfwidth = sample_size(sample_pairs, target_halfwidth, population)
    seed = int(np.random.SeedSequence().entropy) if seed is None else as_int(seed, "seed", minimum=0)
    cap = population if sample_pairs is None else sample_pairs
    rng = np.random.default_rng(seed)
    positions = _draw(rng, population, cap if target_halfwidth is None else min(cap, PILOT_PAIRS),
                      np.zeros(0, np.int64))
    values, stages = evaluate(positions), [len(positions)]
    while target_halfwidth is not None and len(positions) < cap:
        if _halfwidth(values["socm"], population, CONFIDENCE) <= target_halfwidth:
            break
        m = len(positions)
        needed = pairs_needed(float(np.std(values["socm"], ddof=1)), target_halfwidth, population)
        extra = _draw(rng, population, min(cap, max(needed, m + (m + 7) // 8)) - m, np.sort(positions))
        more = evaluate(extra)
        positions = np.concatenate([positions, extra])
        values = {k: np.concatenate([values[k], more[k]]) for k in _VALUES}
        stages.append(len(positions))
    method = "drawn uniformly without replacement"
    if target_halfwidth is not None:
        method += f" in stages: a pilot of {stages[0]:,}, then as many as the target half-width needs"
    return SampledSummary(pairs=len(positions), population_pairs=population, texts=texts, seed=seed, method=method,
                          target_halfwidth=target_halfwidth, stages=tuple(stages),
                          **_estimate(values, population, CONFIDENCE))


def _is_default(value, default) -> bool:
    """Whether an option holds its default: the same object, or an integer equal to an integer default (never an
    array compared element by element)."""
    if value is default:
        return True
    numbers = (int, np.integer)
    return (isinstance(value, numbers) and not isinstance(value, bool) and isinstance(default, numbers)
            and value == default)


def _global_names(error: ValueError, texts: np.ndarray) -> ValueError:
    """``error`` from the engine run on the clouds ``texts`` (a subset), with each ``clouds[k]`` renamed to the
    caller's ``clouds[texts[k]]``."""
    return type(error)(re.sub(r"clouds\[(\d+)\]", lambda m: f"clouds[{texts[int(m.group(1))]}]", str(error)))


def sampled_summary(clouds, pairs=None, *, sample_pairs=None, seed=None, target_halfwidth=None,
                    exhaustive_only=None, **engine) -> SampledSummary:
    r"""``socm_summary(clouds, pairs, sample_pairs=m, seed=s, target_halfwidth=h)``: the figures of the exhaustive
    summary estimated from a sample of the pairs, each with a 95 % interval for its exhaustive value over these texts.

    Parameters
    ----------
    clouds, pairs
        As for :func:`socm_lib.socm_summary`: the population is every pair ``i < j`` of the clouds
        (:math:`N_{\mathrm{pairs}} = N(N-1)/2`, never listed), or the rows of ``pairs``.
    sample_pairs
        :math:`m`, the pairs drawn uniformly without replacement (``2 <= m <= N_pairs``); with ``target_halfwidth``,
        the most that may be drawn.
    seed
        A non-negative integer: the same seed draws the same pairs. ``None`` takes a fresh one from the operating
        system and records it in the result (``result.seed``), so a run can always be repeated.
    target_halfwidth
        :math:`h`: draw in stages until the mean SOCM's 95 % interval is at most :math:`\pm h` (module docstring).
    exhaustive_only
        ``{name: (value, default)}`` of the options of :func:`socm_lib.socm_summary` that apply to every pair only
        (histograms, the median's bins, extreme pairs, ``on_pairs``): one given a value other than its default is
        refused.
    engine
        ``normalize``, ``device``, ``dtype``, ``backend``, ``bucket_tolerance``, ``block_elems``, ``progress``, as for
        :func:`socm_lib.socm_pairs`, which computes the drawn pairs (on the clouds they touch only).

    Returns
    -------
    SampledSummary
        ``mean_socm, median_socm, mean_d_mu, mean_d_sigma, share_d_sigma_above_1`` (the names of
        :class:`~socm_lib.PairSummary`), ``intervals`` of each, and what was drawn (``pairs``, ``population_pairs``,
        ``texts``, ``seed``, ``method``, ``stages``).

    The mean's estimator is the sample mean :math:`\hat y`, unbiased, of variance
    :math:`(1 - m/N_{\mathrm{pairs}})\,S^2/m` (:math:`S^2` the variance of the values over all pairs, divisor
    :math:`N_{\mathrm{pairs}} - 1`); its interval :math:`\hat y \pm t_{m-1}\hat S\sqrt{(1 - m/N_{\mathrm{pairs}})/m}`.
    Pairs that share a text need no correction for this question; for a wider population of texts they would (module
    docstring, and Chapter 6).
    """
    refused = [name for name, (value, default) in (exhaustive_only or {}).items() if not _is_default(value, default)]
    if refused:
        raise ValueError(f"{', '.join(refused)}: these options of socm_summary apply to every pair, not to a sampled "
                         "estimate (sample_pairs, seed or target_halfwidth); drop them, or drop the sampling options.")
    X = as_clouds(clouds, compact=True)  # every cloud checked, drawn or not: they are all in the population
    listed, population = as_pair_set(pairs, len(X))
    pairs_at = (lambda k: listed[k]) if listed is not None else (lambda k: condensed_pairs(k, len(X)))

    def evaluate(positions: np.ndarray) -> dict[str, np.ndarray]:
        drawn = pairs_at(positions)
        texts, local = np.unique(drawn, return_inverse=True)  # the engine prepares only the texts drawn
        try:
            result = socm_pairs([X[t] for t in texts], local.reshape(drawn.shape), **engine)
        except ValueError as exc:
            raise _global_names(exc, texts) from None
        return {k: getattr(result, k) for k in _VALUES}

    return _sampled(evaluate, population, len(X), sample_pairs=sample_pairs, seed=seed,
                    target_halfwidth=target_halfwidth)
