r"""Tasks of notebook 7 (SOCM and downstream quality): the labelled pairs under all-MiniLM-L6-v2.

Each ``expected`` recomputes its answer from scratch: it loads the offline encoder and scores the embedded
labelled pairs with :func:`socm_lib.downstream.labelled_frame`, independently of the notebook's variables.
"""

from __future__ import annotations

from functools import lru_cache

from .. import downstream
from ..data import PAIR_KINDS
from ..encoders import load_encoder
from . import Task, register

ENCODER = "all-minilm-l6"


@lru_cache(maxsize=2)
def _frame(special_tokens: bool):
    return downstream.labelled_frame(load_encoder(ENCODER), special_tokens=special_tokens)


def _rho_socm_cosine() -> float:
    f = _frame(True)
    return downstream.spearman(f["socm"], f["cosine"])[0]


def _top_kind_without_special_tokens() -> str:
    f = _frame(False)
    return str(f.groupby("kind")["socm"].mean().idxmax())


register(
    Task(
        id="nb07.1",
        question="Spearman's rho between SOCM and the mean-pooled cosine over all labelled pairs, all-MiniLM-L6-v2.",
        expected=_rho_socm_cosine,
        kind="number",
        rtol=1e-3,
        atol=1e-4,
        hint="Use every labelled pair (all kinds together) of the all-minilm-l6 frame: "
             "downstream.spearman(frame['socm'], frame['cosine'])[0].",
        wrong_example=0.0,
    ),
    Task(
        id="nb07.2",
        question="With the special tokens dropped (special_tokens=False), which kind has the highest mean SOCM "
                 "under all-MiniLM-L6-v2?",
        expected=_top_kind_without_special_tokens,
        kind="choice",
        options=PAIR_KINDS,
        hint="Score the labelled pairs again with special_tokens=False (pair_frame or labelled_frame), then take the "
             "kind with the largest mean SOCM.",
        wrong_example="paraphrase",
    ),
)
