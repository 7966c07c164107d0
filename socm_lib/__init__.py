"""socm_lib: measure second-order collapse by mean pooling (SOCM) in text embeddings.

The modules stand in layers (:data:`LAYERS`, bottom first): a module imports only from its own layer or lower
ones, and no import chain comes back to where it started (``tests/test_library_layers.py`` checks both on every
module):

0. foundations, importing nothing of the package but each other: :mod:`~socm_lib.config` (the settings of
   :func:`~socm_lib.config_context`: route of the nuclear norms, torch solver, progress bars),
   :mod:`~socm_lib.checks` (validation, shared errors), :mod:`~socm_lib.memo` (bounded caches),
   :mod:`~socm_lib.paper` (the paper's published numbers, the only place they are typed);
1. core mathematics: :mod:`~socm_lib.stats`, :mod:`~socm_lib.bures`, :mod:`~socm_lib.nuclear` (nuclear norms of
   many small matrices: the compiled lane kernel, or LAPACK), :mod:`~socm_lib.jacobi` (the batched one-sided
   Jacobi for the torch path), the exact engine, each module calling only public names of those below it:
   :mod:`~socm_lib.results` (its result types and the SOCM formula), :mod:`~socm_lib.factors` (each text's factor
   and the length buckets), :mod:`~socm_lib.block_plan` (which blocks, in what order: data),
   :mod:`~socm_lib.block_math` (what one block of pairs computes), :mod:`~socm_lib.memory` (what a call allocates,
   from numbers, against what is free), :mod:`~socm_lib.block_runner` (the engine that runs the blocks),
   :mod:`~socm_lib.tally` (a summary's running figures, merged in any order), :mod:`~socm_lib.distributed` (the
   blocks on a Dask cluster) and :mod:`~socm_lib.pairs` (its public front: :func:`~socm_lib.socm`,
   :func:`~socm_lib.socm_pairs`, :func:`~socm_lib.socm_cross`),
   :mod:`~socm_lib.summary` (streamed summaries of millions of pairs), :mod:`~socm_lib.sampling` (their figures
   estimated from a sample of the pairs, with intervals), :mod:`~socm_lib.reference` (the slow,
   obviously correct low-rank reference the tests and benchmarks use), :mod:`~socm_lib.authors_route` (the
   paper's released d x d route, regulariser included), :mod:`~socm_lib.report` (plain-text reports of the
   machine and the engine's route), and this package's front (it loads only this layer;
   the names of higher layers are loaded on first use);
2. models and data: :mod:`~socm_lib.q4` (the 4-bit weight format), :mod:`~socm_lib.e5_4bit`,
   :mod:`~socm_lib.encoders`, :mod:`~socm_lib.extract`, :mod:`~socm_lib.data`;
3. analysis: :mod:`~socm_lib.protocol` (the 4-bit shift included), :mod:`~socm_lib.layers`,
   :mod:`~socm_lib.downstream`, :mod:`~socm_lib.control` (what the untrained control's initialisation predicts),
   :mod:`~socm_lib.explorer` (the per-pair results files of the book's explorer);
4. tools: :mod:`~socm_lib.cli`, :mod:`~socm_lib.gpu_check`, ``__main__``, and :mod:`socm_lib.course` (the labs'
   answer checks);
5. presentation: :mod:`socm_lib.viz` (figures, widgets, fixed-precision display, the benchmark viewer),
   which alone imports matplotlib and ipywidgets and is imported only on request.
"""
#: Every module's layer (the list above); a subpackage's modules share its entry.
LAYERS = {
    "config": 0, "checks": 0, "memo": 0, "paper": 0,
    "__init__": 1, "stats": 1, "bures": 1, "nuclear": 1, "jacobi": 1, "results": 1, "factors": 1, "block_math": 1,
    "block_plan": 1, "block_runner": 1, "memory": 1, "tally": 1, "distributed": 1, "pairs": 1, "sampling": 1, "summary": 1,
    "reference": 1, "authors_route": 1, "report": 1,
    "q4": 2, "e5_4bit": 2, "encoders": 2, "extract": 2, "data": 2,
    "protocol": 3, "layers": 3, "downstream": 3, "control": 3, "explorer": 3,
    "cli": 4, "gpu_check": 4, "__main__": 4, "course": 4,
    "viz": 5,
}

from .bures import bures_wasserstein_sq, fidelity, gaussian_w2_sq, psd_sqrt
from .block_plan import all_pairs, cross_pairs
from .config import config_context, get_config
from .memory import InsufficientMemoryError
from .pairs import socm, socm_cross, socm_pairs
from .results import PairResult, PairSummary, SOCMResult
from .summary import socm_summary
from .sampling import SampledSummary, pairs_needed
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
    "checks": ("ModelUnavailableError",),
    "encoders": ("REGISTRY", "Encoder", "load_encoder"),
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
