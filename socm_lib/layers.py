r"""The concentration ratio and SOCM layer by layer (book, Chapter 8; notebook 6).

:func:`layer_profile` runs the encoder once, keeps the token clouds of every hidden
state (index 0 = embedding output, ``L`` = last layer, the paper's
``last_hidden_state``), and measures at each layer

* the mean concentration ratio :math:`c = S/\lVert\mu\rVert^2` over the texts,
* the mean average intra-text cosine (self-pairs included),
* the mean SOCM, :math:`d_\mu` and :math:`d_\Sigma` over the pairs (default: all pairs).

:func:`norm_check` measures how far a layer's tokens are from the equal-norm case of the
identity :math:`c = 1/\overline{\cos} - 1`. The figures (the paper's layer-wise curves, the
histograms of :math:`d_\mu`, :math:`d_\Sigma` and SOCM) are in :mod:`socm_lib.viz.layers`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .checks import as_device, as_int, as_pair_set, as_progress, as_texts
from .extract import token_embeddings
from .pairs import socm_pairs
from .stats import avg_intra_cosine, concentration_ratio

PROFILE_COLUMNS = ("layer", "concentration_ratio", "avg_cosine", "mean_socm", "mean_d_mu", "mean_d_sigma")


def _pairs_arg(pairs):
    if pairs is None or (isinstance(pairs, str) and pairs == "all"):
        return None
    if isinstance(pairs, str):
        raise ValueError(f"pairs must be None, 'all' or a (P, 2) array of index pairs, got {pairs!r}.")
    return pairs


def layer_profile(encoder, texts, *, pairs=None, special_tokens: bool = True, batch_size: int = 64,
                  progress: bool | None = None, device=None) -> pd.DataFrame:
    """Mean concentration ratio, mean average intra-text cosine and mean SOCM at every hidden state of ``encoder``.

    Parameters
    ----------
    encoder
        An encoder from :func:`socm_lib.load_encoder`.
    texts
        The texts (at least two).
    pairs
        ``None`` or ``"all"`` for every pair ``i < j`` of the texts, or a ``(P, 2)`` array of index pairs.
    special_tokens, batch_size
        Passed to :func:`socm_lib.token_embeddings` (one call with ``layer="all"``).
    device
        Where the pairs are computed (:func:`socm_lib.socm_pairs`); ``None``: the GPU when one is present.

    Returns
    -------
    pandas.DataFrame
        One row per hidden-state index ``0..L`` (0 = embedding output, ``L`` = final layer) with columns
        ``layer, concentration_ratio, avg_cosine, mean_socm, mean_d_mu, mean_d_sigma``.
    """
    batch_size, progress = as_int(batch_size, "batch_size", minimum=1), as_progress(progress)
    texts, device = as_texts(texts), as_device(device)
    pairs, _ = as_pair_set(_pairs_arg(pairs), len(texts), "texts")
    by_layer = token_embeddings(encoder, texts, layer="all", special_tokens=special_tokens,
                                batch_size=batch_size, progress=progress)
    rows = []
    for lay in sorted(by_layer):
        clouds = by_layer[lay]
        result = socm_pairs(clouds, pairs, progress=progress, device=device)
        rows.append({
            "layer": int(lay),
            "concentration_ratio": float(np.mean([concentration_ratio(c) for c in clouds])),
            "avg_cosine": float(np.mean([avg_intra_cosine(c) for c in clouds])),
            "mean_socm": float(np.mean(result.socm)),
            "mean_d_mu": float(np.mean(result.d_mu)),
            "mean_d_sigma": float(np.mean(result.d_sigma)),
        })
    return pd.DataFrame(rows, columns=list(PROFILE_COLUMNS))


def largest_drop(profile: pd.DataFrame, column: str = "concentration_ratio") -> int:
    """The layer ``l >= 1`` whose ``column`` fell most from layer ``l - 1`` (the first such layer on ties)."""
    values = profile.sort_values("layer", kind="stable")[column].to_numpy()
    if len(values) < 2:
        raise ValueError("A profile needs at least two layers to have a drop.")
    drops = values[:-1] - values[1:]
    return int(profile.sort_values("layer", kind="stable")["layer"].to_numpy()[1:][int(np.argmax(drops))])


def norm_check(clouds) -> pd.DataFrame:
    r"""Per text: the concentration ratio, the equal-norm prediction :math:`1/\overline{\cos} - 1`, and the norm spread.

    Columns ``tokens, concentration_ratio, equal_norm_prediction, norm_cv`` (coefficient of variation of the
    token norms, population standard deviation over mean). The prediction is exact when ``norm_cv`` is 0
    (Chapter 8, equal-norm identity); unequal norms make the true ratio larger or smaller.
    """
    rows = []
    for c in clouds:
        x = np.asarray(c, dtype=np.float64)
        norms = np.linalg.norm(x, axis=1)
        rows.append({
            "tokens": int(x.shape[0]),
            "concentration_ratio": concentration_ratio(x),
            "equal_norm_prediction": 1.0 / avg_intra_cosine(x) - 1.0,
            "norm_cv": float(norms.std() / norms.mean()),
        })
    return pd.DataFrame(rows, columns=["tokens", "concentration_ratio", "equal_norm_prediction", "norm_cv"])
