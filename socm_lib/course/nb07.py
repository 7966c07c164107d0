r"""Tasks of notebook 7 (SOCM and downstream quality): the labelled pairs under all-MiniLM-L6-v2.

Each ``expected`` recomputes its answer through the library: it loads the offline encoder and scores the embedded
labelled pairs with :func:`socm_lib.downstream.labelled_frame`, independently of the notebook's variables. Its calls
are the notebook's own (same encoder, device, texts and options), so the library's caches of
:func:`~socm_lib.load_encoder` and :func:`~socm_lib.token_embeddings` answer them once the notebook has run.
"""

from __future__ import annotations

from functools import lru_cache

from .. import downstream
from ..encoders import load_encoder
from . import Task, register

ENCODER = "all-minilm-l6"


@lru_cache(maxsize=2)
def _frame(special_tokens: bool):
    return downstream.labelled_frame(load_encoder(ENCODER), special_tokens=special_tokens, progress=False)


def _rho_socm_cosine() -> float:
    f = _frame(True)
    return downstream.spearman(f["socm"], f["cosine"])[0]


def _ratio_without_special_tokens() -> float:
    """Mean SOCM over all labelled pairs with the special tokens dropped, divided by the mean with them kept."""
    return float(_frame(False)["socm"].mean() / _frame(True)["socm"].mean())


register(
    Task(
        id="nb07.1",
        question="Spearman's rho between SOCM and the mean-pooled cosine over all labelled pairs, all-MiniLM-L6-v2.",
        expected=_rho_socm_cosine,
        kind="number",
        rtol=0.0,
        atol=0.005,  # two decimals
        hint="Spearman's rho correlates ranks, so it needs one SOCM and one cosine per pair, for every pair at once: "
             "not one kind at a time, and not the mean of each kind.",
        wrong_example=0.0,
    ),
    Task(
        id="nb07.2",
        question="By what factor does the mean SOCM over all labelled pairs change under all-MiniLM-L6-v2 when the "
                 "special tokens are dropped (mean with special_tokens=False divided by the mean with them kept)?",
        expected=_ratio_without_special_tokens,
        kind="number",
        rtol=1e-3,
        atol=0.0,
        hint="Score the labelled pairs a second time with the special tokens dropped from the token clouds; the "
             "frame of the section above keeps them. Divide the two means over every pair.",
        wrong_example=1.0,  # the same frame twice: the special tokens were not dropped
    ),
)
