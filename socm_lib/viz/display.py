"""Fixed-precision printing, so notebook outputs are stable across machines (nbval compares them as text)."""

from __future__ import annotations

import pandas as pd

from ..report import DIGITS, device_report, fmt, summary_lines

__all__ = ["DIGITS", "device_report", "fixed", "fmt", "summary_lines"]


def fixed(df, digits: int = DIGITS):
    """A copy of a DataFrame whose float columns are strings at ``digits`` decimals (for display)."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = [fmt(v, digits) for v in out[col]]
    return out
