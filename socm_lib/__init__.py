"""socm_lib: measure second-order collapse by mean pooling (SOCM) in text embeddings.

Layers, bottom to top (an import only ever points down):

* core mathematics: :mod:`~socm_lib.checks`, :mod:`~socm_lib.stats`, :mod:`~socm_lib.bures`,
  :mod:`~socm_lib.pairs` (the exact engine), :mod:`~socm_lib.summary` (streamed summaries of millions of pairs),
  :mod:`~socm_lib.reference` (the slow, obviously correct low-rank reference the tests and benchmarks use) and
  :mod:`~socm_lib.authors_route` (the paper's released d x d route, regulariser included);
* the paper's published numbers: :mod:`~socm_lib.paper`;
* models and data: :mod:`~socm_lib.encoders`, :mod:`~socm_lib.extract`, :mod:`~socm_lib.data`;
* analysis: :mod:`~socm_lib.protocol`, :mod:`~socm_lib.layers`, :mod:`~socm_lib.downstream`,
  :mod:`~socm_lib.control` (what the untrained control's initialisation predicts);
* the labs' answer checks: :mod:`socm_lib.course`;
* presentation: :mod:`socm_lib.viz` (figures, widgets, fixed-precision display, the benchmark viewer),
  which alone imports matplotlib and ipywidgets and is imported only on request.
"""
from .bures import bures_wasserstein_sq, fidelity, gaussian_w2_sq, psd_sqrt
from .pairs import InsufficientMemoryError, PairResult, SOCMResult, all_pairs, cross_pairs, socm, socm_cross, socm_pairs
from .summary import PairSummary, socm_summary
from .authors_route import paper_route
from .stats import (
    avg_intra_cosine,
    cloud_covariance,
    cloud_mean,
    concentration_ratio,
    normalize_cloud,
    spread,
)
#: Names loaded on first use (PEP 562), so that ``import socm_lib`` pulls in neither transformers nor pandas.
_LAZY = {
    "data": ("PAIR_KINDS", "corpus", "hf_texts", "labelled_pairs", "read_lines", "read_msmarco_passages",
             "read_sick", "read_stsb", "sample_texts", "shared_data_dir"),
    "encoders": ("REGISTRY", "Encoder", "ModelUnavailableError", "load_encoder"),
    "extract": ("token_embeddings",),
    "layers": ("layer_profile",),
    "protocol": ("Measurement", "measure", "paper_protocol"),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    if name in _HOME:
        import importlib

        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'socm_lib' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOME))


__version__ = "0.1.0"
