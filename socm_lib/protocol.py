"""From texts to SOCM in one call: extraction, statistics and pairs (the paper's protocol, Hara et al. 2026)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import as_bool, as_device, as_int, as_pair_set, as_progress, as_texts
from .data import sample_texts
from .extract import token_embeddings
from .pairs import socm_pairs
from .results import PairResult
from .stats import concentration_ratio


@dataclass
class Measurement:
    """Texts, their token clouds, each text's concentration ratio, and SOCM over the pairs."""

    texts: list[str]
    clouds: list[np.ndarray]
    concentration: np.ndarray
    pairs: PairResult


def measure(encoder, texts, pairs=None, *, layer: int = -1, special_tokens: bool = True, batch_size: int = 64,
            device=None, progress=None) -> Measurement:
    """Token embeddings of ``texts`` (one layer), their concentration ratios, and SOCM for ``pairs`` (default: all).

    Every option is checked before the encoder runs (:mod:`socm_lib.checks`).
    """
    batch_size, progress = as_int(batch_size, "batch_size", minimum=1), as_progress(progress)
    special_tokens = as_bool(special_tokens, "special_tokens")
    texts, device = as_texts(texts), as_device(device)
    pairs, _ = as_pair_set(pairs, len(texts), "texts")
    clouds = token_embeddings(encoder, texts, layer=layer, special_tokens=special_tokens, batch_size=batch_size,
                              progress=progress)
    result = socm_pairs(clouds, pairs, device=device, progress=progress)
    conc = np.array([concentration_ratio(c) for c in clouds])
    return Measurement(list(texts), clouds, conc, result)


def paper_protocol(encoder, texts, *, n_texts: int = 1000, seed: int = 0, **kwargs) -> Measurement:
    """The paper's protocol: sample ``n_texts`` texts with ``seed`` and measure all C(n, 2) pairs."""
    return measure(encoder, sample_texts(as_texts(texts), n_texts, seed), **kwargs)


def q4_shift(reference, other, texts, *, pairs=None, device=None, progress=None) -> dict:
    """:func:`socm_lib.q4.compare` of two encoders (say a model and its 4-bit round trip) measured on the same
    ``texts`` and ``pairs`` (default: all pairs).

    For the paper's protocol pass ``socm_lib.sample_texts(texts, 1000, 0)``; a notebook that has measured both
    already (:func:`paper_protocol`) calls :func:`socm_lib.q4.compare` on their ``.pairs`` instead.
    """
    from .q4 import compare

    texts, device, progress = as_texts(texts), as_device(device), as_progress(progress)
    pairs, _ = as_pair_set(pairs, len(texts), "texts")  # checked before either encoder runs
    a = measure(reference, texts, pairs, device=device, progress=progress).pairs
    b = measure(other, texts, pairs, device=device, progress=progress).pairs
    return compare(a, b)
