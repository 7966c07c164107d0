r"""Tasks of notebook 2 (the properties): which transformation changes SOCM, and the range bound of a real pair."""

from __future__ import annotations

import numpy as np

from ..pairs import socm
from ..stats import concentration_ratio
from . import Task, register

#: Task 1: the transformations offered, applied to both texts of a pair (the last one is not an invariance).
TRANSFORMS = ("swap the texts", "reorder the tokens", "scale each text", "rotate both", "translate both")
#: Task 2: two sentences of the book's corpus (neither printed by the notebook), embedded with the offline encoder
#: all-minilm-l6; the first has a concentration ratio above 2 on its own.
PAIR = (
    "Light from the Sun takes a little over eight minutes to reach Earth, so every sunrise you watch actually shows "
    "the Sun as it was in the recent past.",
    "Jupiter is so large that all the other planets could fit inside it.",
)


def _changing_transform() -> str:
    """The transformation of :data:`TRANSFORMS` that changes SOCM most on random clouds in d = 8 (seed 0)."""
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(7, 8)) + 1.0, rng.normal(size=(9, 8)) + 1.0
    Q = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    shift = rng.normal(size=8)
    moved = {
        "swap the texts": (X2, X1),
        "reorder the tokens": (X1[::-1], X2[rng.permutation(len(X2))]),
        "scale each text": (3.0 * X1, 0.2 * X2),
        "rotate both": (X1 @ Q.T, X2 @ Q.T),
        "translate both": (X1 + shift, X2 + shift),
    }
    base = socm(X1, X2).socm
    return max(TRANSFORMS, key=lambda name: abs(socm(*moved[name]).socm - base))


def _pair_bound() -> float:
    """(c1 + c2)/4 for the two sentences of :data:`PAIR` under all-minilm-l6 (final layer, special tokens kept)."""
    from ..encoders import load_encoder
    from ..extract import token_embeddings

    clouds = token_embeddings(load_encoder("all-minilm-l6"), list(PAIR))
    return sum(concentration_ratio(X) for X in clouds) / 4


register(
    Task(
        id="nb02.1",
        question="Which transformation, applied to both texts, changes SOCM? One of " + ", ".join(TRANSFORMS) + ".",
        expected=_changing_transform,
        kind="choice",
        options=TRANSFORMS,
        hint="Normalisation divides each text by the norm of its own mean; which transformation changes that mean's "
             "direction by different amounts for the two texts?",
        wrong_example="rotate both",
    ),
    Task(
        id="nb02.2",
        question="The upper bound (c1 + c2)/4 on d_sigma for the two sentences of PAIR under all-minilm-l6.",
        expected=_pair_bound,
        kind="number",
        rtol=1e-4,  # float32 token embeddings
        hint="c = S / |m|^2 for each text, with its special tokens kept (the default of token_embeddings); "
             "then add the two ratios and divide by 4.",
        wrong_example=1.9204,  # (c1 + c2)/2, without the right denominator
    ),
)
