"""Tasks of notebook 4 (backbone versus contrastive encoder): the "Your turn" section."""

from __future__ import annotations

import numpy as np

from . import Task, register

SAMPLE = 30  # texts of the task sample
SAMPLE_SEED = 1


def _sample():
    from ..data import corpus, sample_texts

    return sample_texts(list(corpus()["text"]), SAMPLE, SAMPLE_SEED)


def _socm(name: str) -> np.ndarray:
    from ..encoders import load_encoder
    from ..extract import token_embeddings
    from ..pairs import socm_pairs

    return np.asarray(socm_pairs(token_embeddings(load_encoder(name), _sample()), progress=False).socm)


def _ratio_minilm_e5() -> float:
    return float(_socm("all-minilm-l6").mean() / _socm("multilingual-e5-small-4bit").mean())


def _spearman() -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(_socm("untrained-minilm-l6"), _socm("all-minilm-l6")).statistic)


register(
    Task(
        id="nb04.1",
        question=f"Average SOCM of all pairs of {SAMPLE} corpus texts (seed {SAMPLE_SEED}) under all-minilm-l6.",
        expected=lambda: float(_socm("all-minilm-l6").mean()),
        kind="number", rtol=1e-3, atol=1e-4,
        hint="Sample with socm_lib.sample_texts(socm_lib.corpus()['text'], 30, 1), keep the special tokens and "
             "average SOCM over all C(30, 2) pairs.",
        wrong_example=0.0,
    ),
    Task(
        id="nb04.2",
        question="Spearman correlation, over the same pairs, between the untrained control's SOCM and "
                 "all-minilm-l6's SOCM.",
        expected=_spearman,
        kind="number", rtol=1e-3, atol=1e-3,
        hint="Both socm_pairs results list the pairs in the same order (i < j); rank-correlate their .socm "
             "arrays with scipy.stats.spearmanr.",
        wrong_example=1.0,
    ),
    Task(
        id="nb04.4",
        question=f"Average SOCM of all pairs of the same {SAMPLE} texts under all-minilm-l6 divided by the average "
                 "under multilingual-e5-small-4bit (three significant figures).",
        expected=_ratio_minilm_e5,
        kind="number", rtol=5e-3, atol=1e-3,
        hint="Both averages must come from the same sample of texts, every pair of it, one encoder at a time; "
             "the ratio puts the encoder that collapses less in the denominator.",
        wrong_example=1.0,
    ),
)
