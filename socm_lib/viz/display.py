"""Fixed-precision printing, so notebook outputs are stable across machines (nbval compares them as text).

Also the words and text the downstream notebooks print with: a p-value (:func:`fmt_p`), a direction word chosen
from a measured sign (:func:`direction`) and estimates with their intervals (:func:`format_ci`).
"""

from __future__ import annotations

import math

import pandas as pd

from ..report import DIGITS, device_report, fmt, summary_lines

__all__ = ["DIGITS", "device_report", "direction", "fixed", "fmt", "fmt_p", "format_ci", "summary_lines"]


def fixed(df, digits: int = DIGITS):
    """A copy of a DataFrame whose float columns are strings at ``digits`` decimals (for display); a NaN, a figure
    with nothing to compute it from (a mean over no pairs), shows as an en dash."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = ["\u2013" if math.isnan(v) else fmt(v, digits) for v in out[col]]
    return out


def fmt_p(p: float, digits: int = 4) -> str:
    """A p-value at ``digits`` decimals, or ``"< 0.0001"`` (for 4 digits) when it rounds to zero."""
    return f"< {10.0 ** -digits:.{digits}f}" if p < 10.0 ** -digits else f"{p:.{digits}f}"


def direction(a: float, b: float, *, digits: int = 4, words=("higher", "lower", "equal")) -> str:
    """``"higher"`` if ``a > b``, ``"lower"`` if ``a < b``, ``"equal"`` if they agree at ``digits`` decimals.

    A NaN has no direction: it raises ``ValueError`` rather than turning into a word.
    """
    if math.isnan(float(a)) or math.isnan(float(b)):
        raise ValueError(f"direction got a NaN ({a!r} vs {b!r}); compute the figures from non-empty, finite data.")
    if round(float(a) - float(b), digits) == 0:
        return words[2]
    return words[0] if a > b else words[1]


def format_ci(table: pd.DataFrame, columns, digits: int = 4) -> pd.DataFrame:
    """``table`` with each estimate and its interval merged into one text column ``"<col> [CI]"``: ``"v [low, high]"``.

    For each name in ``columns`` the estimate is the column ``<col>`` if there is one, else ``mean_<col>`` (as in
    :func:`socm_lib.downstream.kind_ci_table`); the interval is ``<col>_low, <col>_high``. Values are printed at ``digits`` decimals.
    """
    out = table.copy()
    for col in columns:
        value = col if col in out else f"mean_{col}"
        low, high = out[f"{col}_low"], out[f"{col}_high"]
        text = [f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" for v, lo, hi in zip(out[value], low, high)]
        at = out.columns.get_loc(value)
        out = out.drop(columns=[value, f"{col}_low", f"{col}_high"])
        out.insert(at, f"{col} [CI]", pd.Series(text, index=out.index, dtype=object))
    return out
