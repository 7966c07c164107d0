r"""SOCM next to downstream quality and labelled pairs (book, Chapter 8; notebooks 7 and 8).

Small helpers shared by the two notebooks:

* the paper's reported numbers (:mod:`socm_lib.paper`), arranged backbone by contrastive encoder
  (:func:`paper_family_table`; nothing here is measured, and no MTEB score is invented);
* SOCM of listed text pairs with the mean-pooled cosine and token counts beside it
  (:func:`pair_frame`), summarised per group (:func:`group_summary`);
* Spearman's rho (:func:`spearman`), a direction word chosen from a measured sign
  (:func:`direction`) and the separation of two samples (:func:`separation`).

Their figures are in :mod:`socm_lib.viz.downstream`.

With the paper's normalisation every mean has unit norm, so
:math:`d_\mu = \lVert m_1 - m_2\rVert^2/4 = (1-\cos)/2`: the mean-pooled cosine is :math:`1 - 2d_\mu`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .checks import as_device, as_texts
from .extract import token_embeddings
from .pairs import socm_pairs
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

    :math:`t = \rho\sqrt{(n-2)/(1-\rho^2)}` with ``n - 2`` degrees of freedom.
    """
    from scipy import stats

    t = rho * np.sqrt((n - 2) / (1.0 - rho * rho))
    return float(2 * stats.t.sf(abs(t), n - 2))


def spearman(x, y) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value, as plain floats."""
    from scipy import stats

    res = stats.spearmanr(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    return float(res.statistic), float(res.pvalue)


def fmt_p(p: float, digits: int = 4) -> str:
    """A p-value at ``digits`` decimals, or ``"< 0.0001"`` (for 4 digits) when it rounds to zero."""
    return f"< {10.0 ** -digits:.{digits}f}" if p < 10.0 ** -digits else f"{p:.{digits}f}"


def separation(a, b) -> float:
    """Probability that a value drawn from ``a`` exceeds one drawn from ``b`` (ties count half): the AUC.

    0.5 means the two samples are not separated; 0 or 1 means every value of one lies above every value of the other.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("separation needs at least one value in each sample.")
    diff = a[:, None] - b[None, :]
    return float((diff > 0).mean() + 0.5 * (diff == 0).mean())


def direction(a: float, b: float, *, digits: int = 4, words=("higher", "lower", "equal")) -> str:
    """``"higher"`` if ``a > b``, ``"lower"`` if ``a < b``, ``"equal"`` if they agree at ``digits`` decimals.

    A NaN has no direction: it raises ``ValueError`` rather than turning into a word.
    """
    if np.isnan(float(a)) or np.isnan(float(b)):
        raise ValueError(f"direction got a NaN ({a!r} vs {b!r}); compute the figures from non-empty, finite data.")
    if round(float(a) - float(b), digits) == 0:
        return words[2]
    return words[0] if a > b else words[1]


def pair_frame(encoder, texts_a, texts_b, *, special_tokens: bool = True, layer: int = -1,
               progress: bool | None = None, device=None) -> pd.DataFrame:
    """SOCM of the pairs ``(texts_a[k], texts_b[k])``, with the mean-pooled cosine and token counts.

    Columns ``d_mu, d_sigma, socm, cosine, n_a, n_b``, one row per pair in input order. ``cosine``
    is computed from the raw (unnormalised) means, independently of ``d_mu``.
    """
    texts_a, texts_b = as_texts(texts_a, "texts_a"), as_texts(texts_b, "texts_b")
    device = as_device(device)
    if len(texts_a) != len(texts_b):
        raise ValueError(f"texts_a has {len(texts_a)} texts but texts_b has {len(texts_b)}; pass one of each per pair.")
    n = len(texts_a)
    clouds = token_embeddings(encoder, texts_a + texts_b, layer=layer, special_tokens=special_tokens,
                              progress=progress)
    pairs = np.stack([np.arange(n), np.arange(n) + n], axis=1)
    res = socm_pairs(clouds, pairs, progress=progress, device=device)
    means = np.stack([c.astype(np.float64).mean(axis=0) for c in clouds])
    unit = means / np.linalg.norm(means, axis=1, keepdims=True)
    return pd.DataFrame({
        "d_mu": res.d_mu, "d_sigma": res.d_sigma, "socm": res.socm,
        "cosine": np.einsum("pk,pk->p", unit[:n], unit[n:]),
        "n_a": [c.shape[0] for c in clouds[:n]], "n_b": [c.shape[0] for c in clouds[n:]],
    })


def group_summary(frame: pd.DataFrame, by: str, order=None) -> pd.DataFrame:
    """Per group of ``by``: pair count, mean and median SOCM, mean ``d_mu``, ``d_sigma`` and (if present) cosine."""
    agg = {"pairs": ("socm", "size"), "mean_socm": ("socm", "mean"), "median_socm": ("socm", "median"),
           "mean_d_mu": ("d_mu", "mean"), "mean_d_sigma": ("d_sigma", "mean")}
    if "cosine" in frame:
        agg["mean_cosine"] = ("cosine", "mean")
    out = frame.groupby(by, sort=True, observed=True).agg(**agg)
    if order is not None:
        out = out.reindex([k for k in order if k in out.index])
    return _plain_text(out.reset_index())


def _plain_text(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns as ``object`` dtype (pandas 3 infers ``str``, which :func:`socm_lib.fixed` cannot inspect)."""
    return df.astype({c: object for c in df.columns if pd.api.types.is_string_dtype(df[c])})
