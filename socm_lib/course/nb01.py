r"""Tasks of notebook 1 (SOCM by hand): the cosine identity for :math:`d_\mu`, and SOCM of two small clouds."""

from __future__ import annotations

import numpy as np

from ..pairs import socm
from . import Task, register

#: Task 1: two raw mean-pooled embeddings in the plane.
RAW_MEAN_1 = (2.0, 1.0)
RAW_MEAN_2 = (1.0, 3.0)
#: Task 2: two texts of two tokens each in the plane.
TOKENS_1 = ((2.0, 1.0), (2.0, -1.0))
TOKENS_2 = ((1.0, 2.0), (3.0, 2.0))

register(
    Task(
        id="nb01.1",
        question=r"d_mu of two texts whose raw mean-pooled embeddings are m1 = (2, 1) and m2 = (1, 3).",
        # a text of one token has the given vector as its mean: socm() normalises it and returns d_mu
        expected=lambda: socm(np.array([RAW_MEAN_1]), np.array([RAW_MEAN_2])).d_mu,
        kind="number",
        rtol=5e-4,  # four significant digits, as worked out on paper
        atol=0.0,
        hint="Use d_mu = (1 - cos(m1, m2)) / 2: the cosine of the raw means, then one minus it, halved.",
        wrong_example=0.29289,  # 1 - cos, without the halving
    ),
    Task(
        id="nb01.2",
        question="SOCM of text 1 with tokens (2, 1), (2, -1) and text 2 with tokens (1, 2), (3, 2).",
        expected=lambda: socm(np.array(TOKENS_1), np.array(TOKENS_2)).socm,
        kind="number",
        rtol=5e-4,  # four significant digits, as worked out on paper
        atol=0.0,
        hint="Normalise each text by the norm of its raw mean first; SOCM = (1 - d_mu) d_sigma, not d_sigma alone.",
        wrong_example=0.09375,  # d_sigma, without the factor 1 - d_mu
    ),
)
