r"""The numbers that Hara et al. (2026) publish, in one place (book, Chapters 1, 7 and 8; notebooks 5 and 7).

*Why Mean Pooling Works: Quantifying Second-Order Collapse in Text Embeddings*, ACL 2026 (Long Papers),
pp. 47180--47201, arXiv 2604.27398. Nothing here is measured by this project: every value is *reported*
by the authors, with where in the paper it comes from. The registry (:mod:`socm_lib.encoders`), the
notebooks and the chapters read these values from here; no other place types them.

Keys are the registry's short names (``"bert"``, ``"gte"``, ...; see :data:`socm_lib.REGISTRY`).

* :data:`WIKIPEDIA_SOCM` -- average SOCM over all :math:`\binom{1000}{2} = 499{,}500` pairs of 1,000
  Wikipedia sentences (the paper's main measurement, final layer, special tokens included);
* :data:`MSMARCO_PASSAGES_SOCM`, :data:`MSMARCO_HARD_NEGATIVES_SOCM` -- the same on MS MARCO passages
  (499,500 pairs of 1,000 passages) and on 50,000 (query, hard negative) pairs;
* :data:`FINAL_LAYER_CONCENTRATION` -- the mean concentration ratio :math:`c = S/\lVert\mu\rVert^2` of the
  final layer (approximate values read from the layer-wise figure);
* :data:`MTEB_SPEARMAN` -- Spearman correlations with MTEB(eng, v2) over :data:`N_MODELS` models;
* :data:`FAMILIES` -- which contrastive encoders the paper trains or compares from which backbone;
* :data:`FIGURE1` -- the pair of Wikipedia sentences drawn in the paper's Figure 1 and its SOCM.
"""

from __future__ import annotations

from dataclasses import dataclass

CITATION = "Hara et al. (2026)"


@dataclass(frozen=True)
class Reported:
    """One published number and where in the paper it is reported."""

    value: float
    where: str
    approximate: bool = False  # read from a figure rather than printed


_WIKI = "average SOCM over the 499,500 Wikipedia sentence pairs (main results table)"
_MARCO = "average SOCM over 499,500 pairs of 1,000 MS MARCO passages (MS MARCO results)"
_HARD = "average SOCM over 50,000 MS MARCO (query, hard negative) pairs (MS MARCO results)"

#: Average SOCM on the Wikipedia pairs, per registry name.
WIKIPEDIA_SOCM: dict[str, Reported] = {
    "bert": Reported(0.396, _WIKI),
    "simcse": Reported(0.193, _WIKI),
    "e5": Reported(0.029, _WIKI),
    "gte": Reported(0.018, _WIKI),
    "minilm": Reported(0.242, _WIKI),
    "all-minilm-l12": Reported(0.313, _WIKI),
    "e5-small": Reported(0.099, _WIKI),
    "gte-small": Reported(0.055, _WIKI),
    "mpnet": Reported(0.117, _WIKI),
    "all-mpnet": Reported(0.100, _WIKI),
    "nomic-bert": Reported(0.139, _WIKI),
    "nomic-embed": Reported(0.122, _WIKI),
}

#: Average SOCM on MS MARCO passages, per registry name (reported for BERT and GTE-base).
MSMARCO_PASSAGES_SOCM: dict[str, Reported] = {
    "bert": Reported(0.491, _MARCO),
    "gte": Reported(0.025, _MARCO),
}

#: Average SOCM on MS MARCO (query, hard negative) pairs, per registry name.
MSMARCO_HARD_NEGATIVES_SOCM: dict[str, Reported] = {
    "bert": Reported(0.480, _HARD),
    "gte": Reported(0.017, _HARD),
}

#: Mean final-layer concentration ratio, per registry name (read from the layer-wise figure).
FINAL_LAYER_CONCENTRATION: dict[str, Reported] = {
    "bert": Reported(1.63, "final-layer concentration ratio (layer-wise concentration figure)", approximate=True),
    "gte": Reported(0.10, "final-layer concentration ratio (layer-wise concentration figure)", approximate=True),
}

#: Number of models in the paper's correlation with MTEB(eng, v2).
N_MODELS = 12

#: Spearman (rho, two-sided p) with the MTEB(eng, v2) average over the :data:`N_MODELS` models.
MTEB_SPEARMAN: dict[str, tuple[float, float]] = {
    "average SOCM vs MTEB(eng, v2)": (-0.678, 0.015),
    "final-layer concentration ratio vs MTEB(eng, v2)": (-0.622, 0.031),
}

#: Backbone -> the contrastive encoders built from it, as the paper groups them.
FAMILIES: dict[str, tuple[str, ...]] = {
    "bert": ("simcse", "e5", "gte"),
    "minilm": ("all-minilm-l12", "e5-small", "gte-small"),
    "mpnet": ("all-mpnet",),
    "nomic-bert": ("nomic-embed",),
}

#: The Wikipedia pair of the paper's Figure 1 and its SOCM under BERT and GTE-base.
FIGURE1 = {
    "texts": (
        'Virginia Woolf set many scenes of her novel "Night and Day" (1919) in Russell Square.',
        "Ghiz was born in Charlottetown, Prince Edward Island, to Atallah Joseph Ghiz, a Lebanese corner store "
        "owner, and Marguerite F. Ghiz (née McKarris).",
    ),
    "socm": {
        "bert": Reported(0.618, "Figure 1 (SOCM of the pair under BERT)"),
        "gte": Reported(0.024, "Figure 1 (SOCM of the pair under GTE-base)"),
    },
}


def wikipedia_socm(name: str) -> float | None:
    """The reported average SOCM on Wikipedia pairs for a registry name, or ``None`` if the paper has none."""
    entry = WIKIPEDIA_SOCM.get(name)
    return None if entry is None else entry.value
