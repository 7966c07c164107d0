r"""SOCM next to downstream quality and labelled pairs (book, Chapter 9; notebooks 7 and 8).

Small helpers shared by the two notebooks:

* the paper's reported numbers (:mod:`socm_lib.paper`), arranged backbone by contrastive encoder
  (:func:`paper_family_table`; nothing here is measured, and no MTEB score is invented);
* SOCM of listed text pairs with the mean-pooled cosine and token counts beside it (:func:`pair_frame`);
* Spearman's rho (:func:`spearman`) and the separation of two samples (:func:`separation`);
* uncertainty and effect sizes for the labelled pair kinds: percentile-bootstrap intervals
  (:func:`bootstrap_ci`, :func:`bootstrap_diff_ci`, :func:`bootstrap_paired_diff_ci`,
  :func:`spearman_ci`), Cliff's delta
  (:func:`cliffs_delta`), per-kind tables and contrasts (:func:`kind_ci_table`, :func:`kind_contrasts`),
  and the lexical overlap of a pair (:func:`lexical_overlap`), the confound of the labelled kinds.

Their figures are in :mod:`socm_lib.viz.downstream`; the words and text they print with (a p-value, a
direction word chosen from a measured sign, an estimate with its interval) in :mod:`socm_lib.viz.display`.

With the paper's normalisation every mean has unit norm, so
:math:`d_\mu = \lVert m_1 - m_2\rVert^2/4 = (1-\cos)/2`: the mean-pooled cosine is :math:`1 - 2d_\mu`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .checks import as_device, as_int, as_number, as_progress, as_texts, as_values
from .extract import token_embeddings
from .pairs import socm_cross
from .paper import FAMILIES, wikipedia_socm

def paper_family_table() -> pd.DataFrame:
    """One row per contrastive encoder: its backbone, both reported SOCM values, the change and the ratio."""
    rows = []
    for backbone, children in FAMILIES.items():
        b = wikipedia_socm(backbone)
        for child in children:
            c = wikipedia_socm(child)
            rows.append({
                "backbone": backbone, "backbone_socm": b, "contrastive": child, "contrastive_socm": c,
                "change": c - b, "ratio": c / b, "lower": bool(c < b),
            })
    return _plain_text(pd.DataFrame(rows))


def spearman_p_from_rho(rho: float, n: int) -> float:
    r"""Two-sided p of a Spearman rho from ``n`` points by the t approximation (the one SciPy uses).

    :math:`t = \rho\sqrt{(n-2)/(1-\rho^2)}` with ``n - 2`` degrees of freedom. At :math:`|\rho| = 1` (a perfectly
    monotone sample) :math:`t` is infinite and ``p = 0``, its limit. ``rho`` must lie in :math:`[-1, 1]` and
    ``n >= 3`` (with two points every rho is :math:`\pm 1` and there is no degree of freedom).
    """
    from scipy import stats

    rho = as_number(rho, "rho", minimum=-1.0, maximum=1.0, advice="A rank correlation lies in [-1, 1].")
    n = as_int(n, "n", minimum=3, advice="The t approximation has n - 2 degrees of freedom.")
    if abs(rho) == 1.0:
        return 0.0
    t = rho * np.sqrt((n - 2) / (1.0 - rho * rho))
    return float(2 * stats.t.sf(abs(t), n - 2))


def _paired(x, y, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as samples (:func:`socm_lib.checks.as_values`) of one length, at least ``minimum`` values."""
    x, y = as_values(x, "x", minimum=minimum), as_values(y, "y", minimum=minimum)
    if x.size != y.size:
        raise ValueError(f"x has {x.size} values but y has {y.size}; pass one of each per pair.")
    return x, y


def _not_constant(values: np.ndarray, name: str) -> None:
    """Refuse a sample whose values are all equal: it has no ranks to correlate."""
    if (values == values[0]).all():
        raise ValueError(f"{name} is constant ({values[0]!r} everywhere), so it has no ranks to correlate and "
                         "Spearman's rho is undefined.")


def spearman(x, y) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value, as plain floats (at least three pairs, neither sample constant)."""
    from scipy import stats

    x, y = _paired(x, y, 3)
    _not_constant(x, "x")
    _not_constant(y, "y")
    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def separation(a, b) -> float:
    """Probability that a value drawn from ``a`` exceeds one drawn from ``b`` (ties count half): the AUC.

    0.5 means the two samples are not separated; 0 or 1 means every value of one lies above every value of the other.
    """
    a, b = as_values(a, "a"), as_values(b, "b")
    diff = a[:, None] - b[None, :]
    return float((diff > 0).mean() + 0.5 * (diff == 0).mean())


def pair_frame(encoder, texts_a, texts_b, *, special_tokens: bool = True, layer: int = -1,
               progress: bool | None = None, device=None) -> pd.DataFrame:
    """SOCM of the pairs ``(texts_a[k], texts_b[k])``, with the mean-pooled cosine and token counts.

    Columns ``d_mu, d_sigma, socm, cosine, n_a, n_b``, one row per pair in input order. ``cosine``
    is computed from the raw (unnormalised) means, independently of ``d_mu``.
    """
    progress = as_progress(progress)
    texts_a, texts_b = as_texts(texts_a, "texts_a"), as_texts(texts_b, "texts_b")
    device = as_device(device)
    if len(texts_a) != len(texts_b):
        raise ValueError(f"texts_a has {len(texts_a)} texts but texts_b has {len(texts_b)}; pass one of each per pair.")
    n = len(texts_a)
    clouds = token_embeddings(encoder, texts_a + texts_b, layer=layer, special_tokens=special_tokens,
                              progress=progress)
    res = socm_cross(clouds[:n], clouds[n:], aligned=True, progress=progress, device=device)
    means = np.stack([c.astype(np.float64).mean(axis=0) for c in clouds])
    unit = means / np.linalg.norm(means, axis=1, keepdims=True)
    return pd.DataFrame({
        "d_mu": res.d_mu, "d_sigma": res.d_sigma, "socm": res.socm,
        "cosine": np.einsum("pk,pk->p", unit[:n], unit[n:]),
        "n_a": [c.shape[0] for c in clouds[:n]], "n_b": [c.shape[0] for c in clouds[n:]],
    })


def _plain_text(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns as ``object`` dtype (pandas 3 infers ``str``, which :func:`socm_lib.fixed` cannot inspect)."""
    return df.astype({c: object for c in df.columns if pd.api.types.is_string_dtype(df[c])})


# ---------------------------------------------------------------------------------------------------------------------
# Uncertainty, effect sizes and lexical overlap for the labelled pairs (notebooks 7 and 8, Chapter 9).
#
# The pairs of one kind are treated as an independent sample of that kind; every interval is a percentile bootstrap
# with a fixed seed, so a notebook prints the same interval on every run.


def _check_bootstrap(n_resamples: int, level: float, seed: int, stat=None) -> None:
    as_int(n_resamples, "n_resamples", minimum=1, advice="2000 is a usual choice.")
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.integer, np.floating)):
        raise TypeError(f"level must be a number between 0 and 1 (e.g. 0.95), got {level!r}.")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1 (e.g. 0.95); got {level!r}.")
    as_int(seed, "seed", minimum=0)
    if stat is not None and not callable(stat):
        raise TypeError(f"stat must be a function such as np.mean or np.median, got {stat!r}.")


def _replicates(stat, resamples: np.ndarray) -> np.ndarray:
    """``stat(resamples, axis=-1)``, one finite value per resample, or a ValueError naming ``stat``."""
    try:
        out = np.asarray(stat(resamples, axis=-1), dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"stat={getattr(stat, '__name__', stat)!r} could not be applied to the resamples with "
                        f"axis=-1 ({exc}); pass a function that takes axis=-1, such as np.mean or np.median.") from None
    if out.shape != resamples.shape[:1] or not np.isfinite(out).all():
        raise ValueError(f"stat={getattr(stat, '__name__', stat)!r} must give one finite number per resample with "
                         f"axis=-1; it gave shape {out.shape}{'' if np.isfinite(out).all() else ' with NaN or inf'}.")
    return out


def _percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - float(level)) / 2.0
    low, high = np.percentile(replicates, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return float(low), float(high)


def bootstrap_ci(values, stat=np.mean, *, n_resamples: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    r"""Percentile bootstrap confidence interval of ``stat`` over one sample.

    Draw :math:`B` = ``n_resamples`` resamples :math:`x^{*b}` of the :math:`n` values with replacement (indices from
    ``numpy.random.default_rng(seed).integers(0, n, (B, n))``), compute :math:`\hat\theta^{*b} = \text{stat}(x^{*b})`
    and return the :math:`\alpha` and :math:`1-\alpha` percentiles of the :math:`\hat\theta^{*b}` with
    :math:`\alpha = (1 - \text{level})/2`. This is ``scipy.stats.bootstrap(..., method="percentile")`` with the same
    generator. ``stat`` must accept ``axis=-1`` (``np.mean``, ``np.median`` do).
    """
    _check_bootstrap(n_resamples, level, seed, stat)
    x = as_values(values, "values", minimum=2)
    idx = np.random.default_rng(seed).integers(0, x.size, (n_resamples, x.size))
    return _percentile_interval(_replicates(stat, x[idx]), level)


def bootstrap_diff_ci(a, b, stat=np.mean, *, n_resamples: int = 2000, level: float = 0.95,
                      seed: int = 0) -> tuple[float, float]:
    r"""Percentile bootstrap interval of :math:`\text{stat}(a) - \text{stat}(b)` for two independent samples.

    Each sample is resampled on its own (indices of ``a`` first, then of ``b``, from one
    ``numpy.random.default_rng(seed)``), :math:`\hat\Delta^{*b} = \text{stat}(a^{*b}) - \text{stat}(b^{*b})`, and the
    interval is the :math:`\alpha`, :math:`1-\alpha` percentiles of the :math:`\hat\Delta^{*b}`,
    :math:`\alpha = (1-\text{level})/2` (``scipy.stats.bootstrap`` with two samples, ``paired=False``).
    An interval that excludes 0 says the difference has a stable sign under resampling of the pairs.
    """
    _check_bootstrap(n_resamples, level, seed, stat)
    a, b = as_values(a, "a", minimum=2), as_values(b, "b", minimum=2)
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.size, (n_resamples, a.size))
    ib = rng.integers(0, b.size, (n_resamples, b.size))
    return _percentile_interval(_replicates(stat, a[ia]) - _replicates(stat, b[ib]), level)


def bootstrap_paired_diff_ci(a, b, stat=np.mean, *, n_resamples: int = 2000, level: float = 0.95,
                             seed: int = 0) -> tuple[float, float]:
    r"""Percentile bootstrap interval of :math:`\text{stat}(a) - \text{stat}(b)` for paired samples.

    ``a[k]`` and ``b[k]`` are measured on the same unit (the same base sentence, negated two ways), so the units are
    resampled, not the two samples apart: one draw of :math:`n` indices (``numpy.random.default_rng(seed).integers(0,
    n, (B, n))``) picks both values of each unit, :math:`\hat\Delta^{*b} = \text{stat}(a^{*b}) - \text{stat}(b^{*b})`,
    and the interval is the :math:`\alpha`, :math:`1-\alpha` percentiles, :math:`\alpha = (1-\text{level})/2`
    (``scipy.stats.bootstrap`` with ``paired=True``). For the mean this is :func:`bootstrap_ci` of the differences
    :math:`a_k - b_k`. Resampling the units keeps what the two values of a unit share out of the interval, which
    :func:`bootstrap_diff_ci` (independent samples) would count as noise.
    """
    _check_bootstrap(n_resamples, level, seed, stat)
    a, b = as_values(a, "a", minimum=2), as_values(b, "b", minimum=2)
    if a.size != b.size:
        raise ValueError(f"a has {a.size} values but b has {b.size}; a paired comparison needs one of each per unit "
                         "(use bootstrap_diff_ci for independent samples).")
    idx = np.random.default_rng(seed).integers(0, a.size, (n_resamples, a.size))
    return _percentile_interval(_replicates(stat, a[idx]) - _replicates(stat, b[idx]), level)


def cliffs_delta(a, b) -> float:
    r"""Cliff's delta: :math:`\delta = P(A > B) - P(A < B)` over all :math:`|a|\,|b|` pairs of values.

    :math:`\delta \in [-1, 1]`; 0 means no tendency, :math:`\pm 1` that every value of one sample lies above every
    value of the other. It equals :math:`2\,\text{AUC} - 1` with the AUC of :func:`separation` (ties count half).
    A rank-based effect size: unchanged by any increasing transformation of the values, so it suits skewed
    quantities such as SOCM (non-negative, with no upper bound), where Cohen's d (a difference of means over a pooled
    standard deviation) would lean on a normal shape the data do not have. It compares independent samples: for
    paired ones, compare each unit's two values (:func:`bootstrap_paired_diff_ci`).
    """
    a, b = as_values(a, "a"), as_values(b, "b")
    diff = a[:, None] - b[None, :]
    return float((diff > 0).mean() - (diff < 0).mean())


def spearman_ci(x, y, *, n_resamples: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    r"""Percentile bootstrap interval of Spearman's :math:`\rho` between paired samples ``x`` and ``y``.

    The :math:`n` pairs :math:`(x_k, y_k)` are resampled together (indices from
    ``numpy.random.default_rng(seed).integers(0, n, (B, n))``) and :math:`\rho` is recomputed on each resample
    (Pearson correlation of average ranks). Resamples in which ``x`` or ``y`` is constant have no :math:`\rho` and
    are left out.
    """
    from scipy import stats

    _check_bootstrap(n_resamples, level, seed)
    x, y = _paired(x, y, 2)
    idx = np.random.default_rng(seed).integers(0, x.size, (n_resamples, x.size))
    rx = stats.rankdata(x[idx], axis=-1)
    ry = stats.rankdata(y[idx], axis=-1)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    ok = den > 0
    if not ok.any():
        raise ValueError("spearman_ci: x or y is constant in every resample; there is no correlation to bound.")
    return _percentile_interval((rx * ry).sum(axis=-1)[ok] / den[ok], level)


def lexical_overlap(a: str, b: str) -> float:
    r"""Jaccard overlap of the two texts' word sets: :math:`|W_a \cap W_b| / |W_a \cup W_b|`.

    :math:`W` is the set of lower-cased words (runs of letters, digits and underscores, ``re.findall(r"\w+")``), so
    punctuation and word order are ignored: a word-order swap has overlap 1, a negation that adds *not* a little
    less. A crude proxy for how much of the surface two texts share.
    """
    import re

    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError(f"lexical_overlap compares two strings; got {type(a).__name__} and {type(b).__name__}.")
    wa, wb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    if not wa and not wb:
        raise ValueError("lexical_overlap: neither text contains a word; the overlap is undefined.")
    return len(wa & wb) / len(wa | wb)


def _columns(frame, by, columns) -> list[str]:
    """The value ``columns`` of ``frame`` (a DataFrame holding them and the group column ``by``), as a list."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame (e.g. from labelled_frame), got {type(frame).__name__}.")
    columns = [columns] if isinstance(columns, str) else list(columns)
    if not columns:
        raise ValueError("columns is empty; name at least one column of frame, e.g. ('socm',).")
    missing = [c for c in [by, *columns] if c not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column(s) {missing}; its columns are {list(frame.columns)}.")
    return columns


def _group(frame: pd.DataFrame, by: str, kind) -> pd.DataFrame:
    """The rows of ``frame`` whose ``by`` is ``kind``, refusing a kind with none."""
    sub = frame.loc[frame[by] == kind]
    if sub.empty:
        raise ValueError(f"frame[{by!r}] has no row {kind!r}; its values are {sorted(map(str, frame[by].unique()))}.")
    return sub


def kind_ci_table(frame: pd.DataFrame, by: str, order=None, columns=("socm", "d_mu", "d_sigma"), *,
                  n_resamples: int = 2000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per group of ``by``: pair count and, for each of ``columns``, the mean and its bootstrap interval.

    Columns ``pairs``, then ``mean_<col>``, ``<col>_low``, ``<col>_high`` for each column (:func:`bootstrap_ci`).
    """
    columns = _columns(frame, by, columns)
    _check_bootstrap(n_resamples, level, seed)
    groups = [k for k in (order if order is not None else sorted(frame[by].unique())) if (frame[by] == k).any()]
    rows = []
    for k in groups:
        sub = _group(frame, by, k)
        row = {by: k, "pairs": len(sub)}
        for col in columns:
            low, high = bootstrap_ci(as_values(sub[col], f"frame[{col!r}] where {by} == {k!r}", minimum=2),
                                     n_resamples=n_resamples, level=level, seed=seed)
            row.update({f"mean_{col}": float(sub[col].mean()), f"{col}_low": low, f"{col}_high": high})
        rows.append(row)
    return _plain_text(pd.DataFrame(rows))


def kind_contrasts(frame: pd.DataFrame, by: str, contrasts, columns=("socm",), *, n_resamples: int = 2000,
                   level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """For each ``(kind_a, kind_b)`` in ``contrasts`` and each column: difference of means, its interval, Cliff's delta.

    Columns ``kind_a, kind_b, quantity, diff`` (mean of a minus mean of b), ``diff_low, diff_high``
    (:func:`bootstrap_diff_ci`), ``cliffs_delta`` (:func:`cliffs_delta`, positive when a tends to be larger) and
    ``excludes_0`` (whether the interval lies on one side of 0).
    """
    columns = _columns(frame, by, columns)
    _check_bootstrap(n_resamples, level, seed)
    if isinstance(contrasts, (str, bytes)) or not all(isinstance(c, (tuple, list)) and len(c) == 2
                                                     for c in contrasts):
        raise TypeError(f"contrasts must be a list of (kind_a, kind_b) pairs, got {contrasts!r}.")
    rows = []
    for a, b in contrasts:
        for col in columns:
            va, vb = (as_values(_group(frame, by, k)[col], f"frame[{col!r}] where {by} == {k!r}", minimum=2)
                      for k in (a, b))
            low, high = bootstrap_diff_ci(va, vb, n_resamples=n_resamples, level=level, seed=seed)
            rows.append({"kind_a": a, "kind_b": b, "quantity": col, "diff": float(np.mean(va) - np.mean(vb)),
                         "diff_low": low, "diff_high": high, "cliffs_delta": cliffs_delta(va, vb),
                         "excludes_0": bool(low > 0 or high < 0)})
    return _plain_text(pd.DataFrame(rows))


def labelled_frame(encoder, kinds=None, *, special_tokens: bool = True, progress: bool | None = None,
                   device=None) -> pd.DataFrame:
    """:func:`pair_frame` of the embedded labelled pairs, with each pair's ``kind`` and :func:`lexical_overlap` first.

    Columns ``kind, overlap, d_mu, d_sigma, socm, cosine, n_a, n_b``, one row per pair of
    ``socm_lib.labelled_pairs(kinds)`` in its order.
    """
    from .data import labelled_pairs

    progress, device = as_progress(progress), as_device(device)
    pairs = labelled_pairs(kinds)
    frame = pair_frame(encoder, pairs["text_a"], pairs["text_b"], special_tokens=special_tokens, progress=progress,
                       device=device)
    frame.insert(0, "overlap", [lexical_overlap(a, b) for a, b in zip(pairs["text_a"], pairs["text_b"])])
    frame.insert(0, "kind", pairs["kind"].to_numpy(dtype=object))
    return frame
