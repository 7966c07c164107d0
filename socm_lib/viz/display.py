"""Fixed-precision printing, so notebook outputs are stable across machines (nbval compares them as text)."""

from __future__ import annotations

import platform

import pandas as pd
import torch

DIGITS = 4


def fmt(x, digits: int = DIGITS) -> str:
    """``x`` rounded to ``digits`` decimals, with ``-0.0000`` shown as ``0.0000``."""
    s = f"{float(x):.{digits}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def fixed(df, digits: int = DIGITS):
    """A copy of a DataFrame whose float columns are strings at ``digits`` decimals (for display)."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = [fmt(v, digits) for v in out[col]]
    return out


def summary_lines(summary: dict, digits: int = DIGITS) -> list[str]:
    """Lines ``name: value`` for a summary dict such as :meth:`PairResult.summary`."""
    return [f"{k}: {int(v) if k == 'pairs' else fmt(v, digits)}" for k, v in summary.items()]


def device_report() -> str:
    """Where the work runs: CPU threads, GPU name if any, library versions (not for compared outputs)."""
    import transformers

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return (
        f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}; "
        f"CPU threads: {torch.get_num_threads()}; GPU: {gpu}"
    )
