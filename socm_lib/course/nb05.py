"""Tasks of notebook 5 (the paper's protocol at full scale): the "Your turn" section."""

from __future__ import annotations

from functools import cache

import numpy as np

from . import Task, register

SAMPLE = 200  # texts of the task sample (19,900 pairs)
SAMPLE_SEED = 1
THRESHOLD = 1.93  # concentration-ratio threshold of task 3 (not a value the formula hits exactly at a whole n)


@cache
def _pairs(name: str):
    from ..data import corpus
    from ..encoders import load_encoder
    from ..protocol import paper_protocol

    return paper_protocol(load_encoder(name), list(corpus()["text"]), n_texts=SAMPLE, seed=SAMPLE_SEED,
                          progress=False).pairs


def _lower() -> str:
    names = ("all-minilm-l6", "untrained-minilm-l6")
    return min(names, key=lambda n: float(np.mean(_pairs(n).socm)))


def _first_length_above() -> int:
    from ..control import predicted_concentration

    n = np.arange(1, 10_000)
    return int(n[np.argmax(predicted_concentration(n) > THRESHOLD)])


register(
    Task(
        id="nb05.1",
        question=f"Share of the pairs of {SAMPLE} corpus texts (seed {SAMPLE_SEED}) with d_sigma > 1 under "
                 "all-minilm-l6.",
        expected=lambda: float(np.mean(_pairs("all-minilm-l6").d_sigma > 1)),
        kind="number", rtol=1e-3, atol=1e-4,
        hint="socm_lib.paper_protocol(encoder, corpus texts, n_texts=200, seed=1) gives .pairs.d_sigma; the "
             "share is the mean of (d_sigma > 1), a number between 0 and 1.",
        wrong_example=0.5,
    ),
    Task(
        id="nb05.2",
        question="On the same sample, which offline encoder has the lower mean SOCM?",
        expected=_lower,
        kind="choice", options=("all-minilm-l6", "untrained-minilm-l6"),
        hint="Measure both encoders on the same 200 texts and compare the means of .pairs.socm.",
        wrong_example="all-minilm-l6",
    ),
    Task(
        id="nb05.3",
        question=f"The smallest text length n (tokens, special tokens included) for which the initialisation "
                 f"scheme predicts a concentration ratio c above {THRESHOLD}.",
        expected=_first_length_above,
        kind="integer",
        hint="Solve 2(n - 1)/(n + 2) > 1.93 for n, or evaluate socm_lib.control.predicted_concentration on "
             "a range of lengths.",
        wrong_example=83,
    ),
)
