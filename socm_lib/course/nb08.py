r"""Tasks of notebook 8 (beyond the paper): lexical overlap and bootstrap intervals on the labelled pairs.

Each ``expected`` recomputes its answer from scratch through :mod:`socm_lib.downstream`, independently of the
notebook's variables (task 2 loads the offline encoder all-MiniLM-L6-v2).
"""

from __future__ import annotations

import numpy as np

from .. import downstream
from ..data import labelled_pairs
from ..encoders import load_encoder
from . import Task, register


#: Task 2: the interval's level; the notebook's tables print 95 % intervals, so a 90 % one must be computed.
LEVEL = 0.90


def _median_overlap_negation() -> float:
    pairs = labelled_pairs(["negation"])
    return float(np.median([downstream.lexical_overlap(a, b) for a, b in zip(pairs["text_a"], pairs["text_b"])]))


def _ci_dsigma_negation() -> np.ndarray:
    f = downstream.labelled_frame(load_encoder("all-minilm-l6"), ["negation"])
    return np.array(downstream.bootstrap_ci(f["d_sigma"], n_resamples=2000, level=LEVEL, seed=0))


register(
    Task(
        id="nb08.1",
        question="Median lexical overlap (Jaccard of lower-cased word sets) of the negation pairs.",
        expected=_median_overlap_negation,
        kind="number",
        rtol=5e-4,  # four significant digits
        atol=0.0,
        hint="Take the median (not the mean, which the tables print) of downstream.lexical_overlap(text_a, text_b) "
             "over the pairs of kind 'negation' only.",
        wrong_example=0.6944,  # the mean, printed in the tables of part (c)
    ),
    Task(
        id="nb08.2",
        question="90% percentile bootstrap interval (2,000 resamples, seed 0) of the mean d_Sigma of the negation "
                 "pairs under all-MiniLM-L6-v2, as [low, high].",
        expected=_ci_dsigma_negation,
        kind="array",
        rtol=1e-3,
        atol=1e-4,
        hint="Take the d_sigma column of the negation pairs only and call downstream.bootstrap_ci on it with "
             "n_resamples=2000, level=0.9, seed=0; answer [low, high].",
        wrong_example=[0.0959, 0.1153],  # the 95 % interval, printed in the table of part (c)
    ),
)
